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

function medianOf(xs: ArrayLike<number>): number {
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length === 0 ? 0 : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Median and floored robust spread (1.4826 × MAD) of the finite values of `xs`; null when there are none. */
export function robustReference(xs: readonly number[]): [number, number] | null {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return null;
  const med = medianOf(v);
  const mad = medianOf(v.map((x) => Math.abs(x - med)));
  return [med, Math.max(1.4826 * mad, SCALE_FLOOR * Math.abs(med), 1e-6)];
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
    services[name] = cols.map((xs) => robustReference(xs) ?? [0, 1e-6]);
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
    edges[key] = cols.map((xs) => robustReference(xs) ?? [0, 1e-6]);
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

/**
 * The z-score statistics as scoring goes, with replaced pods re-baselined: after a `pod_replaced` event
 * the service's z is 0 (held out) for `snapshots` snapshots while its values are collected, then its
 * medians and spreads are refitted on them — the new pod's level is its normal from then on, where the
 * fitted medians would keep its memory and node columns "anomalous" for good.
 */
export class ZScoreRebaseliner {
  readonly stats: ZScoreStats;
  private readonly collecting = new Map<string, Snapshot[]>();

  constructor(fitted: ZScoreStats, private readonly snapshots: number) {
    this.stats = { columns: fitted.columns, services: { ...fitted.services } };
  }

  /** Starts a service's new warm-up for each replacement event (0 snapshots: never). */
  onEvents(events: readonly { service: string; kind: string }[]): void {
    if (this.snapshots <= 0) return;
    for (const e of events) if (e.kind === 'pod_replaced') this.collecting.set(e.service, []);
  }

  /** Collects `s`'s rows of services in warm-up, refitting those that have enough; true for a service still held out. */
  observe(s: Snapshot): (service: string) => boolean {
    const F = this.stats.columns.length;
    for (const [name, rows] of this.collecting) {
      const i = s.services.indexOf(name);
      if (i < 0) continue;
      rows.push({ ts: s.ts, services: [name], features: s.features.slice(i * F, (i + 1) * F), src: new Int32Array(0), dst: new Int32Array(0), rate: new Float32Array(0), edgeFeatures: new Float32Array(0) });
      if (rows.length < this.snapshots) continue;
      this.stats.services[name] = fitZScore(rows, this.stats.columns).services[name]!;
      this.collecting.delete(name);
    }
    return (service) => this.collecting.has(service);
  }
}
