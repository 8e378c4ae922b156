/**
 * Root-cause method `signals`: which service stands out in each kind of signal, votes summed.
 *
 * Columns are grouped into signal families — percentiles of one quantity are one family
 * (`PodServerLatencyP90/P95/P99(s)` → `PodServerLatency(s)`, `latency_p50_ms/latency_p99_ms` →
 * `latency_ms`) — so three views of one latency count once. Per snapshot and service, a family's
 * deviation is its largest robust |z| against the normal period (node columns, zscore_baseline.ts); for an
 * edge column it is the largest increase over the calls the service *receives* (a slow or delayed callee
 * shows in the calls into it, which is how the call graph enters). Over an incident's window the deviations
 * are summed per family and service, each family is turned into shares across services (Σ_i share = 1),
 * and a service's score is the sum of its shares:
 *
 *     score_i = Σ_f  D_f,i / Σ_j D_f,j,      D_f,i = Σ_t max_{c ∈ f} |z_c,i,t|
 *
 * so a family where one service deviates alone (CPU during a CPU hog, the calls into a delayed callee)
 * gives it a whole vote, and a family where everything wobbles (memory after a redeploy) splits its vote
 * and cannot drown the others — the failure of ranking by the single largest z, whose scale differs by
 * column. On the Nezha Online Boutique faults this lifts AC@1 from 0.43 (largest z) to ≈ 0.7
 * (docs/performance.md).
 */
import type { Snapshot } from './source.js';
import type { EdgeZScoreStats, ZScoreStats } from './zscore_baseline.js';

/** |z| is capped here, as in the z-score baseline, so one broken column cannot win a family alone. */
const Z_CAP = 50;

export interface SignalFamilies {
  /** family names: node families first, then edge families suffixed `:in` */
  names: string[];
  /** per node family, the indices of its feature columns */
  node: number[][];
  /** per edge family, the indices of its edge columns */
  edge: number[][];
}

/** A column's family: its name without a percentile token (p50, P99, _p95 …). */
export function signalFamily(column: string): string {
  return column.replace(/_?p\d{2}(?=[^a-z0-9]|$)/gi, '');
}

function group(columns: string[]): { names: string[]; members: number[][] } {
  const byName = new Map<string, number[]>();
  columns.forEach((c, i) => {
    const f = signalFamily(c);
    const list = byName.get(f);
    if (list) list.push(i);
    else byName.set(f, [i]);
  });
  return { names: [...byName.keys()], members: [...byName.values()] };
}

export function signalFamilies(featureColumns: string[], edgeColumns: string[]): SignalFamilies {
  const n = group(featureColumns);
  const e = group(edgeColumns);
  return { names: [...n.names, ...e.names.map((x) => `${x}:in`)], node: n.members, edge: e.members };
}

/**
 * One snapshot's deviations, [families][services]: node families from `zs` (services the normal period
 * never saw: 0), edge families from the calls each service receives (edges without statistics: 0).
 */
export function signalDeviations(fam: SignalFamilies, zs: ZScoreStats, edges: EdgeZScoreStats | null, s: Snapshot): Float64Array[] {
  const n = s.services.length;
  const F = zs.columns.length;
  const out = fam.names.map(() => new Float64Array(n));
  s.services.forEach((name, i) => {
    const st = zs.services[name];
    if (!st) return;
    fam.node.forEach((cols, f) => {
      let worst = 0;
      for (const c of cols) {
        const x = s.features[i * F + c]!;
        if (Number.isNaN(x)) continue;
        const z = Math.abs(x - st[c]![0]) / st[c]![1];
        if (z > worst) worst = z;
      }
      out[f]![i] = Math.min(Z_CAP, worst);
    });
  });
  if (!edges) return out;
  const Fe = edges.columns.length;
  const base = fam.node.length;
  for (let e = 0; e < s.src.length; e++) {
    const st = edges.edges[`${s.services[s.src[e]!]}>${s.services[s.dst[e]!]}`];
    if (!st) continue;
    const d = s.dst[e]!;
    fam.edge.forEach((cols, f) => {
      const row = out[base + f]!;
      for (const c of cols) {
        const x = s.edgeFeatures[e * Fe + c]!;
        if (Number.isNaN(x)) continue;
        const z = Math.min(Z_CAP, Math.max(0, x - st[c]![0]) / st[c]![1]);
        if (z > row[d]!) row[d] = z;
      }
    });
  }
  return out;
}

/** Per service, the sum over families of its share of the family's total deviation (families of 0: no vote). */
export function shareScores(deviations: readonly ArrayLike<number>[], n: number): Float64Array {
  const score = new Float64Array(n);
  for (const row of deviations) {
    let total = 0;
    for (let i = 0; i < n; i++) total += row[i] ?? 0;
    if (!(total > 0)) continue;
    for (let i = 0; i < n; i++) score[i]! += (row[i] ?? 0) / total;
  }
  return score;
}

/** Each family's deviations as shares across services (Σ = 1, or all 0 for a family with no deviation). */
export function familyShares(rows: readonly Float64Array[]): Float64Array[] {
  return rows.map((row) => {
    const total = row.reduce((x, y) => x + y, 0);
    return total > 0 ? row.map((x) => x / total) : row;
  });
}

/**
 * Deviations of several snapshots summed per family and service ([families][services]); services that
 * come and go count where they appear.
 */
export function familySums(snapshots: readonly { services: readonly string[]; deviations: readonly Float64Array[] }[]): { services: string[]; rows: Float64Array[] } {
  const sums = new Map<string, Float64Array>();
  for (const { services, deviations } of snapshots) {
    services.forEach((name, i) => {
      let v = sums.get(name);
      if (!v) sums.set(name, (v = new Float64Array(deviations.length)));
      deviations.forEach((row, f) => (v![f]! += row[i] ?? 0));
    });
  }
  const services = [...sums.keys()];
  const families = sums.get(services[0]!)?.length ?? 0;
  return { services, rows: Array.from({ length: families }, (_, f) => Float64Array.from(services, (n) => sums.get(n)![f]!)) };
}

/** Per service, its shares over a few recent snapshots' deviations summed per family (the ranking an alert carries). */
export function recentShares(recent: readonly { services: readonly string[]; deviations: readonly Float64Array[] }[]): { services: string[]; score: Float64Array } {
  const { services, rows } = familySums(recent);
  return { services, score: shareScores(rows, services.length) };
}
