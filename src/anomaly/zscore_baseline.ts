/**
 * Baseline 3: a per-service z-score, topology-free — what an SRE computes first. Each service's columns
 * are compared with their own normal-period median and spread (1.4826 × MAD, a robust standard deviation);
 * the service's evidence is its largest |z|, the snapshot's score the largest over services, and as a
 * root-cause ranking it names the services by evidence, largest first.
 */
import type { Snapshot } from './source.js';

export interface ZScoreStats {
  columns: string[];
  /** service → per-column [median, scale] */
  services: Record<string, [number, number][]>;
}

/**
 * A column's spread is floored at this fraction of its median's magnitude (and 1e-6): memory and
 * node-level columns barely move in a quiet hour, and a MAD of ~0 turns their next wobble into z = 1e4.
 */
const SCALE_FLOOR = 0.05;

/** |z| is capped here so one column cannot outweigh the rest beyond recognition. */
const Z_CAP = 50;

function medianOf(xs: number[]): number {
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length === 0 ? 0 : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function fitZScore(normal: Snapshot[], featureColumns: string[]): ZScoreStats {
  const F = featureColumns.length;
  const values = new Map<string, number[][]>();
  for (const s of normal) {
    s.services.forEach((name, i) => {
      let v = values.get(name);
      if (!v) values.set(name, (v = featureColumns.map(() => [])));
      for (let f = 0; f < F; f++) {
        const x = s.features[i * F + f]!;
        if (!Number.isNaN(x)) v[f]!.push(x);
      }
    });
  }
  const services: ZScoreStats['services'] = {};
  for (const [name, cols] of values) {
    services[name] = cols.map((xs) => {
      const med = medianOf(xs);
      const mad = medianOf(xs.map((x) => Math.abs(x - med)));
      return [med, Math.max(1.4826 * mad, SCALE_FLOOR * Math.abs(med), 1e-6)];
    });
  }
  return { columns: featureColumns, services };
}

/** Per service of `s`, the largest |z| over its columns (0 for a service the normal period never saw). */
export function zScores(stats: ZScoreStats, s: Snapshot): Float64Array {
  const F = stats.columns.length;
  const out = new Float64Array(s.services.length);
  s.services.forEach((name, i) => {
    const st = stats.services[name];
    if (!st) return;
    let worst = 0;
    for (let f = 0; f < F; f++) {
      const x = s.features[i * F + f]!;
      if (Number.isNaN(x)) continue;
      const z = Math.min(Z_CAP, Math.abs(x - st[f]![0]) / st[f]![1]);
      if (z > worst) worst = z;
    }
    out[i] = worst;
  });
  return out;
}

export interface EdgeZScoreStats {
  columns: string[];
  /** "caller>callee" → per-column [median, scale] */
  edges: Record<string, [number, number][]>;
}

/** Per call edge, each edge column's median and robust spread over `snaps` (NaN values skipped). */
export function fitEdgeZScore(snaps: Snapshot[], edgeColumns: string[]): EdgeZScoreStats {
  const Fe = edgeColumns.length;
  const values = new Map<string, number[][]>();
  for (const s of snaps) {
    for (let e = 0; e < s.src.length; e++) {
      const key = `${s.services[s.src[e]!]}>${s.services[s.dst[e]!]}`;
      let v = values.get(key);
      if (!v) values.set(key, (v = edgeColumns.map(() => [])));
      for (let f = 0; f < Fe; f++) {
        const x = s.edgeFeatures[e * Fe + f]!;
        if (!Number.isNaN(x)) v[f]!.push(x);
      }
    }
  }
  const edges: EdgeZScoreStats['edges'] = {};
  for (const [key, cols] of values) {
    if (cols.every((xs) => xs.length === 0)) continue;
    edges[key] = cols.map((xs) => {
      const med = medianOf(xs);
      const mad = medianOf(xs.map((x) => Math.abs(x - med)));
      return [med, Math.max(1.4826 * mad, SCALE_FLOOR * Math.abs(med), 1e-6)];
    });
  }
  return { columns: edgeColumns, edges };
}

/** Per service, the largest z (increase only) over the edge columns of the calls it receives. */
export function edgeZScores(stats: EdgeZScoreStats, s: Snapshot): Float64Array {
  const Fe = stats.columns.length;
  const out = new Float64Array(s.services.length);
  for (let e = 0; e < s.src.length; e++) {
    const st = stats.edges[`${s.services[s.src[e]!]}>${s.services[s.dst[e]!]}`];
    if (!st) continue;
    const d = s.dst[e]!;
    for (let f = 0; f < Fe; f++) {
      const x = s.edgeFeatures[e * Fe + f]!;
      if (Number.isNaN(x)) continue;
      const z = Math.min(Z_CAP, Math.max(0, x - st[f]![0]) / st[f]![1]);
      if (z > out[d]!) out[d] = z;
    }
  }
  return out;
}
