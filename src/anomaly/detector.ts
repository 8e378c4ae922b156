/**
 * Scores snapshots one after another with a fitted TAGAE, and holds everything that carries from one
 * snapshot to the next — the last W−1 embeddings, the sliding threshold's window, the suppression
 * counters — in a plain `WindowState` that `watch` writes to disk and restores on restart.
 *
 * Per service i of a snapshot (Â, X̂ from the model, A the observed shares, X the standardised features):
 *
 *     s_i = mean_{observed pairs ∋ i} (Â − A)² + mean_{non-edge pairs ∋ i} Â²     structure error
 *     f_i = mean_c (X̂_ic − X_ic)²                                                  feature error
 *     r_i = α s_i / s̄_i + (1 − α) f_i / f̄_i                                       relative to the service's own
 *                                                                                   warm-up means s̄_i, f̄_i
 *     score = mean of the `score_services` largest r_i over services not suppressed (default 1: the max)
 *
 * Normalising by each service's warm-up error matters: some services are simply harder to reconstruct,
 * and without it they would top every list. A service without a baseline (new since fit) uses the median
 * baseline. The largest (or the mean of the few largest) rather than the mean of all services keeps a
 * local incident from being diluted away: on the 200-service mesh, the max against the mean of the top 5
 * halved the false alarms (18 → 9 in two days) and raised recall from 75% to 81%. An event (deploy, planned scale-out…) suppresses its service and the
 * service's direct neighbours for `suppress_snapshots` snapshots.
 *
 * A replaced pod (`pod_replaced`) settles at new levels (memory, node columns), and its error against the
 * old baseline would stay high for good: the service is held out for `rebaseline_snapshots` while its raw
 * errors are collected, then their medians become its baseline (kept in the window state, so `watch`
 * carries them across restarts).
 */
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { buildGraph, type SnapshotGraph } from './graph.js';
import type { FeatureStats } from './features.js';
import { adjacencyAtPairs, adjacencyRow, logitOf, summariseAdjacency, type Adjacency } from './adjacency.js';
import type { AdjacencySummary, PastEmbedding } from './model.js';
import type { SnapshotScorer } from './scorer.js';
import type { PlannedEvent, Snapshot } from './source.js';
import { SlidingThreshold } from './threshold.js';
import { Workspace, type Arrays } from './workspace.js';

export interface ServiceBaselines {
  /** service → [structure mean, feature mean] over the warm-up window */
  services: Record<string, [number, number]>;
  median: [number, number];
}

/** Everything `watch` persists between snapshots (JSON). */
export interface WindowState {
  version: 1;
  run_id: string;
  last_ts: number | null;
  snapshots_scored: number;
  /** newest first, at most window − 1 */
  ring: { ts: number; services: string[]; z: number[] }[];
  threshold_history: number[];
  /** service → snapshots of suppression left */
  suppressed: Record<string, number>;
  /** the previous snapshot's neighbours, so a terminated service's neighbours can be suppressed */
  previous_neighbours: Record<string, string[]>;
  alert: boolean;
  /** services whose pod was replaced, with the raw errors collected so far towards their new baseline */
  rebaselining?: Record<string, { structure: number[]; feature: number[] }>;
  /** baselines refitted after a pod replacement, which replace the run's for those services */
  rebaselined?: Record<string, [number, number]>;
}

/** The event kind `loadEvents` records when a service's pod is replaced (source.ts). */
export const POD_REPLACED = 'pod_replaced';

export interface SnapshotScore {
  ts: number;
  score: number;
  threshold: number;
  alert: boolean;
  top_services: string[];
  top_edges: string[];
  suppressed_services: number;
  new_services: number;
  /** per-service relative errors r_i (root-cause evidence), when asked for */
  service_scores?: Float64Array;
  /** per-service structure and feature errors (raw), for fitting baselines */
  raw?: { services: string[]; structure: Float32Array; feature: Float32Array };
}

export function emptyState(runId: string, warmupScores: number[]): WindowState {
  return { version: 1, run_id: runId, last_ts: null, snapshots_scored: 0, ring: [], threshold_history: [...warmupScores], suppressed: {}, previous_neighbours: {}, alert: false };
}

/**
 * A service's baseline error is floored at this fraction of the median service's: a service with no calls
 * reconstructs its (empty) structure almost exactly, and dividing by that ~0 turned a tiny error into a
 * score of 5e7 that named the idle service first in 317 of 336 alerting snapshots on real data.
 */
export const SCALE_FLOOR_FRACTION = 0.1;

export class Detector {
  private readonly ring: PastEmbedding[];
  private readonly threshold: SlidingThreshold;
  /**
   * the last snapshot's graph (its neighbour lists are serialised only when the state is exported); only
   * its services, index and neighbours are read: its typed arrays are the workspace's, which the next
   * snapshot's build overwrites
   */
  private previous: SnapshotGraph | null = null;
  /** the graph's and the error pass's arrays, reused from one snapshot to the next */
  private readonly arrays = new Workspace();

  constructor(
    private readonly model: SnapshotScorer,
    private readonly stats: FeatureStats,
    private readonly cfg: AnomalyConfig,
    private readonly baselines: ServiceBaselines | null,
    readonly state: WindowState,
  ) {
    this.ring = state.ring.map((r) => ({ ts: r.ts, services: r.services, index: new Map(r.services.map((s, i) => [s, i])), n: r.services.length, z: Float32Array.from(r.z) }));
    this.threshold = new SlidingThreshold(cfg.threshold_quantile, cfg.threshold_window, state.threshold_history);
    const [ms, mf] = baselines?.median ?? UNIT_BASELINE;
    this.scaleFloor = [Math.max(SCALE_FLOOR_FRACTION * ms, 1e-6), Math.max(SCALE_FLOOR_FRACTION * mf, 1e-6)];
  }

  /** the smallest baseline a service's error is divided by: a fraction of the median service's */
  private readonly scaleFloor: [number, number];

  /** Scores one snapshot (newer than the last); `events` are the planned changes since the last one. */
  async step(snapshot: Snapshot, events: PlannedEvent[], opts: { keepRaw?: boolean; prime?: boolean; evidence?: boolean } = {}): Promise<SnapshotScore> {
    const g = buildGraph(snapshot, this.stats, this.previous, this.arrays);
    const rec = await this.model.reconstruct(g, this.ring);

    // Suppression: count down, then add this interval's events (service + neighbours, now or just before).
    const sup = this.state.suppressed;
    for (const k of Object.keys(sup)) if (--sup[k]! <= 0) delete sup[k];
    const hold = this.cfg.suppress_snapshots;
    if (hold > 0) {
      for (const ev of events) {
        const i = g.index.get(ev.service);
        const around = i !== undefined ? g.neighbours[i]!.map((j) => g.services[j]!) : this.previousNeighbours(ev.service);
        for (const s of [ev.service, ...around]) sup[s] = Math.max(sup[s] ?? 0, hold);
      }
    }
    this.startRebaselining(events);

    const summary = rec.summary ?? summariseAdjacency(rec.adjacency, g.n);
    const { structure, feature, top: topPairs } = reconstructionErrors(g, rec.adjacency, summary, rec.features, this.stats.node.length, sup, this.cfg.top_k, this.arrays);
    const rebaselined = this.state.rebaselined ?? {};
    const a = this.cfg.structure_weight;
    const r = this.arrays.float64('detector.r', g.n);
    const unsuppressed = this.arrays.uint8('detector.unsuppressed', g.n);
    let suppressedServices = 0;
    const [floorS, floorF] = this.scaleFloor;
    for (let i = 0; i < g.n; i++) {
      const name = g.services[i]!;
      const [bs, bf] = rebaselined[name] ?? (this.baselines ? (this.baselines.services[name] ?? this.baselines.median) : UNIT_BASELINE);
      r[i] = (a * structure[i]!) / Math.max(bs, floorS) + ((1 - a) * feature[i]!) / Math.max(bf, floorF);
      if (name in sup) suppressedServices++;
      else unsuppressed[i] = 1;
    }
    // after judging: a warm-up of N snapshots is judged against its new baseline from the (N + 1)th on
    this.collectRebaselines(g.services, structure, feature);
    const k = this.cfg.top_k;
    const ranked = largest(r, unsuppressed, Math.max(k, this.cfg.score_services));
    const top = ranked.slice(0, k);
    const scored = ranked.slice(0, this.cfg.score_services);
    const score = scored.length ? scored.reduce((s, i) => s + r[i]!, 0) / scored.length : 0;
    // Priming (filling the ring before the first scored snapshot) and baseline fitting judge nothing.
    const { threshold, alert } = this.baselines && !opts.prime ? this.threshold.judge(score) : { threshold: this.threshold.value, alert: false };

    // Pushing this snapshot into the ring; the oldest leaves.
    this.ring.unshift({ ts: g.ts, services: g.services, index: g.index, n: g.n, z: rec.z });
    this.ring.length = Math.min(this.ring.length, Math.max(0, this.cfg.window - 1));
    this.previous = g;
    this.state.last_ts = g.ts;
    this.state.snapshots_scored++;
    this.state.alert = alert;

    return {
      ts: g.ts,
      score,
      threshold,
      alert,
      top_services: top.map((i) => g.services[i]!),
      top_edges: topPairs,
      suppressed_services: suppressedServices,
      new_services: rec.newServices,
      raw: opts.keepRaw ? { services: g.services, structure, feature } : undefined,
      ...(opts.evidence ? { service_scores: Float64Array.from(r.subarray(0, g.n)) } : {}),
    };
  }

  /** A replaced pod's service starts a new warm-up: held out (suppressed) until its baseline is refitted. */
  private startRebaselining(events: PlannedEvent[]): void {
    const n = this.cfg.rebaseline_snapshots;
    if (n <= 0) return;
    for (const ev of events) {
      if (ev.kind !== POD_REPLACED) continue;
      (this.state.rebaselining ??= {})[ev.service] = { structure: [], feature: [] };
      this.state.suppressed[ev.service] = Math.max(this.state.suppressed[ev.service] ?? 0, n);
    }
  }

  /** Adds this snapshot's raw errors of rebaselining services; after `rebaseline_snapshots` of them, their medians are the baseline. */
  private collectRebaselines(services: string[], structure: Float32Array, feature: Float32Array): void {
    const open = this.state.rebaselining;
    if (!open) return;
    services.forEach((name, i) => {
      const c = open[name];
      if (!c) return;
      c.structure.push(structure[i]!);
      c.feature.push(feature[i]!);
      if (c.structure.length < this.cfg.rebaseline_snapshots) return;
      (this.state.rebaselined ??= {})[name] = [medianOf(c.structure), medianOf(c.feature)];
      delete open[name];
      delete this.state.suppressed[name];
    });
  }

  private previousNeighbours(service: string): string[] {
    if (!this.previous) return this.state.previous_neighbours[service] ?? [];
    const i = this.previous.index.get(service);
    return i === undefined ? [] : this.previous.neighbours[i]!.map((j) => this.previous!.services[j]!);
  }

  /**
   * The state with the ring and neighbour lists serialised (done here, not per snapshot: turning 5 × 500
   * embeddings into JSON numbers cost more than scoring the snapshot).
   */
  exportState(): WindowState {
    if (this.previous) {
      const g = this.previous;
      this.state.previous_neighbours = Object.fromEntries(g.services.map((s, i) => [s, g.neighbours[i]!.map((j) => g.services[j]!)]));
    }
    this.state.ring = this.ring.map((p) => ({ ts: p.ts, services: p.services, z: Array.from(p.z, (v) => Math.round(v * 1e6) / 1e6) }));
    return this.state;
  }
}

const UNIT_BASELINE: [number, number] = [1, 1];

function medianOf(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The indices i with `eligible[i]` of the `count` largest r[i], largest first, ties by the smaller index
 * (what a stable sort of every service would give): a selection rather than sorting all services, whose
 * comparator boxed a double per comparison.
 */
function largest(r: Float64Array, eligible: Uint8Array, count: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < r.length; i++) {
    if (!eligible[i]) continue;
    const v = r[i]!;
    if (best.length === count && !(v > r[best[count - 1]!]!)) continue;
    let at = best.length;
    while (at > 0 && r[best[at - 1]!]! < v) at--;
    best.splice(at, 0, i);
    if (best.length > count) best.pop();
  }
  return best;
}

/** The k largest errors as [error, pair], largest first and ties by the smaller pair. */
class TopPairs {
  readonly best: [number, number][] = [];
  constructor(readonly k: number) {}
  /**
   * Offers a pair; returns the cut-off a later pair must reach to enter (−1 until there are k): a pair
   * above it enters, one equal to it only with a smaller pair index. So the k kept are the same whatever
   * order the pairs come in.
   */
  offer(e: number, p: number): number {
    const { best, k } = this;
    if (best.length === k) {
      const [le, lp] = best[k - 1]!;
      if (!(e > le) && !(e === le && p < lp)) return le;
    }
    let at = best.length;
    while (at > 0 && (best[at - 1]![0] < e || (best[at - 1]![0] === e && best[at - 1]![1] > p))) at--;
    best.splice(at, 0, [e, p]);
    if (best.length > k) best.pop();
    return best.length === k ? best[k - 1]![0] : -1;
  }
}

/**
 * Per-service structure and feature errors, and the k pairs with the largest error as
 * "source->destination" (suppressed services left out; ties keep the earlier pair).
 *
 * A service's non-edge sum is its row's and column's Σ Â² (the summary) less the diagonal and less its
 * observed edges, which then count (Â − A)² instead. The top non-edges (error Â²) come from a row-major
 * walk that only enters rows whose largest Â² beats the running k-th best: after the first rows the
 * cut-off is high and most rows are skipped. The same sums and ranking as walking every pair with a
 * target matrix (test/anomaly/detector.test.ts), without walking the n² predictions in JS when the
 * runtime supplies the summary.
 *
 * The loops sit in small functions of their own: as one function, V8's on-stack-replaced code for the n²
 * loop deoptimised on every call at the code after it (no type feedback there yet at compile time), so
 * the rest ran in the interpreter and boxed every double — 5.6 MB of garbage per 500-service snapshot.
 */
function reconstructionErrors(
  g: SnapshotGraph,
  adj: Adjacency,
  summary: AdjacencySummary,
  xHat: Float32Array,
  F: number,
  suppressed: Record<string, number>,
  k: number,
  arrays: Arrays,
): { structure: Float32Array; feature: Float32Array; top: string[] } {
  const n = g.n;
  const observed = observedPairs(g, arrays);
  const skip = arrays.uint8('errors.skip', n);
  for (let i = 0; i < n; i++) skip[i] = g.services[i]! in suppressed ? 1 : 0;
  const top = new TopPairs(k);
  topNonEdges(adj, n, summary.rowMax, skip, observed, top, arrays.float64('errors.row', n));
  const { sum: obsSum, count: obsCnt, nonSum, nonCnt } = edgeSums(g, adj, summary, observed, skip, top, arrays);
  const structure = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // max(0, ·): the subtractions can leave a rounding residue below 0 when every pair is an edge.
    structure[i] = (obsCnt[i]! ? obsSum[i]! / obsCnt[i]! : 0) + (nonCnt[i]! ? Math.max(0, nonSum[i]!) / nonCnt[i]! : 0);
  }
  return { structure, feature: featureErrors(g.x, xHat, n, F), top: top.best.map(([, p]) => `${g.services[Math.floor(p / n)]}->${g.services[p % n]}`) };
}

/**
 * Offers every non-edge pair (i ≠ j, neither suppressed, not observed) that could rank to `top`. The k
 * rows with the largest maxima go first, so the cut-off is near its final value early; the rest follow
 * in order, each entered only when its largest Â² reaches the cut-off. In a row, a value (or, for
 * factored Â, a logit — sigmoid is monotonic) must clear the bar √cut before its error is computed.
 * `TopPairs` keeps the same k whatever the order.
 */
function topNonEdges(adj: Adjacency, n: number, rowMax: AdjacencySummary['rowMax'], skip: Uint8Array, observed: ObservedPairs, top: TopPairs, row: Float64Array): void {
  if (top.k === 0) return;
  const first = largestRows(rowMax, skip, top.k);
  let cut = -1;
  for (const i of first) cut = offerRow(adj, n, i, skip, observed, top, row, cut);
  for (let i = 0; i < n; i++) {
    const m = rowMax[i]!;
    // 1e-5: the runtime's row maxima are float32, the values read here float64
    if (skip[i] || !(m * m * (1 + 1e-5) >= cut) || first.includes(i)) continue;
    cut = offerRow(adj, n, i, skip, observed, top, row, cut);
  }
}

/** The (at most) k unsuppressed rows with the largest maxima. */
function largestRows(rowMax: AdjacencySummary['rowMax'], skip: Uint8Array, k: number): number[] {
  const rows: number[] = [];
  for (let i = 0; i < rowMax.length; i++) {
    if (skip[i]) continue;
    const m = rowMax[i]!;
    if (rows.length === k && !(m > rowMax[rows[k - 1]!]!)) continue;
    let at = rows.length;
    while (at > 0 && rowMax[rows[at - 1]!]! < m) at--;
    rows.splice(at, 0, i);
    if (rows.length > k) rows.pop();
  }
  return rows;
}

/** Offers row i's candidate non-edges; returns the new cut-off. */
function offerRow(adj: Adjacency, n: number, i: number, skip: Uint8Array, observed: ObservedPairs, top: TopPairs, row: Float64Array, cut: number): number {
  const { pair, rowStart } = observed;
  const { logits } = adjacencyRow(adj, n, i, row);
  let bar = barFor(cut, logits);
  const o = i * n;
  // the row's observed pairs, ascending: the next one is skipped when the walk reaches it
  let next = rowStart[i]!;
  const end = rowStart[i + 1]!;
  for (let j = 0; j < n; j++) {
    const p = o + j;
    if (next < end && pair[next] === p) {
      next++;
      continue;
    }
    const x = row[j]!;
    if (!(x > bar) || j === i || skip[j]) continue;
    const v = logits ? 1 / (1 + Math.exp(-x)) : x;
    const e = v * v;
    if (e >= cut) {
      cut = top.offer(e, p);
      bar = barFor(cut, logits);
    }
  }
  return cut;
}

/** A little below what a value (or logit) must exceed for its square to reach `cut`; the exact test follows. */
function barFor(cut: number, logits: boolean): number {
  if (cut < 0) return -Infinity;
  const v = Math.sqrt(cut) * (1 - 1e-9);
  return logits ? logitOf(v) - 1e-6 : v;
}

interface ObservedPairs {
  /** the distinct observed pairs i·n + j (i ≠ j), ascending */
  pair: Float64Array;
  /** the call each pair takes its share from (the last one listed for a repeated pair) */
  call: Int32Array;
  /** [n + 1] pairs of row i at rowStart[i] … rowStart[i + 1] − 1 */
  rowStart: Int32Array;
}

/**
 * The observed pairs sorted: calls bucketed by source (a counting sort, in call order), each row's few
 * calls insertion-sorted by destination, repeats collapsed to the last call. Typed arrays rather than a
 * Map (whose table and entry arrays were most of a snapshot's garbage) or a sort of the whole list (a
 * third of a millisecond for 3,000 calls). Self-calls are no pair (the walk skips i = j).
 */
function observedPairs(g: SnapshotGraph, arrays: Arrays): ObservedPairs {
  const n = g.n;
  // the columns in locals: loads through `g` are not hoisted out of the loops once more than one graph
  // shape has been seen (2.5× slower)
  const { src, dst } = g;
  const E = src.length;
  const rowStart = arrays.int32('errors.row_start', n + 1);
  for (let e = 0; e < E; e++) if (src[e] !== dst[e]) rowStart[src[e]! + 1]!++;
  for (let i = 0; i < n; i++) rowStart[i + 1]! += rowStart[i]!;
  const fill = arrays.int32('errors.fill', n);
  const dstOf = arrays.int32('errors.dst', rowStart[n]!);
  const callOf = arrays.int32('errors.calls', rowStart[n]!);
  for (let e = 0; e < E; e++) {
    const i = src[e]!;
    const j = dst[e]!;
    if (i === j) continue;
    let at = rowStart[i]! + fill[i]!++;
    // insertion by destination; a repeat goes after the earlier calls of its pair (call order kept)
    while (at > rowStart[i]! && dstOf[at - 1]! > j) {
      dstOf[at] = dstOf[at - 1]!;
      callOf[at] = callOf[at - 1]!;
      at--;
    }
    dstOf[at] = j;
    callOf[at] = e;
  }
  const pair = arrays.float64('errors.pair', rowStart[n]!);
  const call = arrays.int32('errors.call', rowStart[n]!);
  let d = 0;
  for (let i = 0; i < n; i++) {
    const start = d;
    for (let k = rowStart[i]!; k < rowStart[i + 1]!; k++) {
      const p = i * n + dstOf[k]!;
      // a repeated pair: the later call overwrites the earlier one's share
      if (d > start && pair[d - 1] === p) call[d - 1] = callOf[k]!;
      else {
        pair[d] = p;
        call[d++] = callOf[k]!;
      }
    }
    rowStart[i] = start;
  }
  rowStart[n] = d;
  return { pair: pair.subarray(0, d), call: call.subarray(0, d), rowStart };
}

/** Observed-edge sums per service, and the non-edge sums the summary leaves once they are taken out; observed pairs compete for `top`. */
function edgeSums(
  g: SnapshotGraph,
  adj: Adjacency,
  summary: AdjacencySummary,
  observed: ObservedPairs,
  skip: Uint8Array,
  top: TopPairs,
  arrays: Arrays,
): { sum: Float64Array; count: Float64Array; nonSum: Float64Array; nonCnt: Float64Array } {
  const n = g.n;
  const { pair, call, rowStart } = observed;
  const share = g.share;
  const { rowSq, colSq } = summary;
  const at = adjacencyAtPairs(adj, n, pair, rowStart, arrays.float64('errors.observed_adjacency', pair.length), arrays.float64('errors.diagonal', n));
  const nonSum = arrays.float64('errors.non_sum', n);
  for (let i = 0; i < n; i++) {
    const d = at.diagonal[i]!;
    nonSum[i] = rowSq[i]! - d * d + (colSq[i]! - d * d);
  }
  const nonCnt = arrays.float64('errors.non_count', n).fill(2 * (n - 1));
  const sum = arrays.float64('errors.sum', n);
  const count = arrays.float64('errors.count', n);
  for (let k = 0; k < pair.length; k++) {
    const p = pair[k]!;
    const i = Math.floor(p / n);
    const j = p - i * n;
    const a = at.pairs[k]!;
    const d = a - share[call[k]!]!;
    const err = d * d;
    sum[i]! += err;
    sum[j]! += err;
    count[i]!++;
    count[j]!++;
    nonSum[i]! -= a * a;
    nonSum[j]! -= a * a;
    nonCnt[i]!--;
    nonCnt[j]!--;
    if (top.k > 0 && !skip[i] && !skip[j]) top.offer(err, p);
  }
  return { sum, count, nonSum, nonCnt };
}

/** f_i = mean_c (X̂_ic − X_ic)². */
function featureErrors(x: Float32Array, xHat: Float32Array, n: number, F: number): Float32Array {
  const feature = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < F; c++) {
      const d = xHat[i * F + c]! - x[i * F + c]!;
      s += d * d;
    }
    feature[i] = s / F;
  }
  return feature;
}
