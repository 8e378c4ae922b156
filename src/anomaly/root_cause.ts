/**
 * Root-cause localisation: which service's own fault explains what the others show.
 *
 * A fault in a callee shows up in its callers (their latency includes the callee's), so the most anomalous
 * service is often a caller, not the culprit. `propagate` walks the call graph the way blame flows — from
 * a caller to its callees, in proportion to each callee's anomaly evidence — with a personalised PageRank:
 *
 *     P(i → j) ∝ e_j            for each callee j of i        (blame moves down to anomalous callees)
 *     P(i → i) ∝ SELF · e_i                                   (a service that is itself anomalous keeps it)
 *     P(j → i) ∝ BACK · e_i     for each caller i of j        (a way back up, so a quiet leaf cannot trap it)
 *     π = (1 − d) v + d πP,     v ∝ e                         (teleport to anomalous services)
 *
 * A caller whose anomaly is inherited passes its mass to the callee that explains it; a callee whose
 * anomaly is its own keeps it. Evidence e comes from any per-service score (TAGAE's relative errors, the
 * z-score or static baselines); `rankServices` orders services by π (or by e alone, topology-free).
 */

export interface RankInput {
  services: readonly string[];
  /** per-service anomaly evidence, ≥ 0 */
  evidence: ArrayLike<number>;
  /** observed (or service-map) call edges, caller → callee */
  src: ArrayLike<number>;
  dst: ArrayLike<number>;
}

const DAMPING = 0.85;
const SELF = 1;
const BACK = 0.2;
const ITERATIONS = 60;

/** Stationary blame per service (sums to 1; all zero when there is no evidence). */
export function propagate(input: RankInput): Float64Array {
  const n = input.services.length;
  const e = Float64Array.from({ length: n }, (_, i) => Math.max(0, input.evidence[i] ?? 0));
  const total = e.reduce((s, x) => s + x, 0);
  const pi = new Float64Array(n);
  if (!(total > 0)) return pi;
  const v = e.map((x) => x / total);
  // out-weights per node: callees, self, callers
  const outs: { to: number; w: number }[][] = Array.from({ length: n }, (_, i) => [{ to: i, w: SELF * e[i]! }]);
  for (let k = 0; k < input.src.length; k++) {
    const a = input.src[k]!;
    const b = input.dst[k]!;
    if (a === b) continue;
    outs[a]!.push({ to: b, w: e[b]! });
    outs[b]!.push({ to: a, w: BACK * e[a]! });
  }
  pi.set(v);
  const next = new Float64Array(n);
  for (let it = 0; it < ITERATIONS; it++) {
    next.fill(0);
    let dangling = 0;
    for (let i = 0; i < n; i++) {
      const row = outs[i]!;
      const sum = row.reduce((s, x) => s + x.w, 0);
      if (!(sum > 0)) {
        dangling += pi[i]!;
        continue;
      }
      for (const { to, w } of row) next[to]! += (DAMPING * pi[i]! * w) / sum;
    }
    for (let i = 0; i < n; i++) next[i]! += ((1 - DAMPING) + DAMPING * dangling) * v[i]!;
    pi.set(next);
  }
  return pi;
}

/** Services ordered by score, largest first (ties by name, so rankings are reproducible). */
export function rankServices(services: readonly string[], score: ArrayLike<number>): string[] {
  return services
    .map((name, i) => ({ name, s: score[i] ?? 0 }))
    .sort((x, y) => y.s - x.s || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    .map((x) => x.name);
}

export interface RankedIncident {
  kind: string;
  root_cause: string;
  ranking: string[];
}

export interface RankQuality {
  incidents: number;
  /** the root cause ranked first / within the first three; Avg@5 = mean of AC@1..AC@5 */
  ac_at_1: number;
  ac_at_3: number;
  avg_at_5: number;
  /** 95% Wilson score intervals of AC@1 and AC@3: ground-truth counts are small, a difference inside them is not one */
  ac_at_1_interval: [number, number];
  ac_at_3_interval: [number, number];
}

export interface RootCauseQuality extends RankQuality {
  by_kind: Record<string, RankQuality>;
}

function acAt(list: RankedIncident[], k: number): number {
  return list.length ? list.filter((r) => r.ranking.slice(0, k).includes(r.root_cause)).length / list.length : 0;
}

/** The 95% Wilson score interval of a proportion p over n trials (n = 0: [0, 1]). */
export function wilsonInterval(p: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const z = 1.959964;
  const d = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / d;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  const r = (x: number): number => Math.round(x * 1000) / 1000;
  return [r(Math.max(0, centre - half)), r(Math.min(1, centre + half))];
}

function summary(list: RankedIncident[]): RankQuality {
  const avg5 = [1, 2, 3, 4, 5].reduce((s, k) => s + acAt(list, k), 0) / 5;
  const a1 = acAt(list, 1);
  const a3 = acAt(list, 3);
  return { incidents: list.length, ac_at_1: a1, ac_at_3: a3, avg_at_5: avg5, ac_at_1_interval: wilsonInterval(a1, list.length), ac_at_3_interval: wilsonInterval(a3, list.length) };
}

export function rootCauseQuality(ranked: RankedIncident[]): RootCauseQuality {
  const kinds = [...new Set(ranked.map((r) => r.kind))].sort();
  return { ...summary(ranked), by_kind: Object.fromEntries(kinds.map((k) => [k, summary(ranked.filter((r) => r.kind === k))])) };
}
