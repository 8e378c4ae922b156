/**
 * Per-user ranking scores and their bootstrap: MAP@k, recall@k and NDCG@k are means over users, so
 * resampling users with replacement and re-averaging gives their 95% intervals, and resampling the same
 * users for two lists gives the paired interval of their difference (each user's difficulty cancels).
 * What a ranking run serves is judged with that paired interval (`chooseRanking`), as `model.kind: auto`
 * judges entity tasks' candidates (train/model_choice.ts).
 */
import { round } from '../core/number.js';
import { Rng } from '../core/rng.js';
import { percentile, type Interval } from '../task/intervals.js';
import { rankingMetrics } from '../task/metrics.js';
import type { Examples } from '../task/task_spec.js';

/** Resamples of the users; a mean needs no more for two decimals of its percentiles. */
const RESAMPLES = 1000;

export interface PerUser {
  map_at_k: Float64Array;
  recall_at_k: Float64Array;
  ndcg_at_k: Float64Array;
}

/** Each example's AP@k, recall@k and NDCG@k (their means are `rankingMetrics`' figures); `ranked` is n × k in example order. */
export function perUserRanking(labels: { offsets: Int32Array; items: Int32Array }, ranked: Int32Array, k: number): PerUser {
  const n = labels.offsets.length - 1;
  const out: PerUser = { map_at_k: new Float64Array(n), recall_at_k: new Float64Array(n), ndcg_at_k: new Float64Array(n) };
  for (let e = 0; e < n; e++) {
    const lo = labels.offsets[e]!;
    const hi = labels.offsets[e + 1]!;
    const m = rankingMetrics({ offsets: Int32Array.from([0, hi - lo]), items: labels.items.subarray(lo, hi) }, ranked.subarray(e * k, (e + 1) * k), k);
    out.map_at_k[e] = m.map_at_k;
    out.recall_at_k[e] = m.recall_at_k;
    out.ndcg_at_k[e] = m.ndcg_at_k;
  }
  return out;
}

/**
 * 95% percentile interval of mean(a) − mean(b) over users resampled with replacement (b omitted: of
 * mean(a)). Null for an empty sample or unequal lengths.
 */
export function meanInterval(a: ArrayLike<number>, seed: number, b?: ArrayLike<number>, resamples = RESAMPLES): Interval {
  const n = a.length;
  if (n === 0 || (b && b.length !== n)) return null;
  const d = b ? Float64Array.from({ length: n }, (_, i) => a[i]! - b[i]!) : Float64Array.from(a);
  const rng = new Rng(seed);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[rng.int(n)]!;
    means[r] = s / n;
  }
  means.sort();
  return [round(percentile(means, 0.025), 4), round(percentile(means, 0.975), 4)];
}

/** 95% intervals of every per-user metric's mean. */
export function rankingIntervals(p: PerUser, seed: number): Record<keyof PerUser, Interval> {
  return { map_at_k: meanInterval(p.map_at_k, seed), recall_at_k: meanInterval(p.recall_at_k, seed), ndcg_at_k: meanInterval(p.ndcg_at_k, seed) };
}

/** One list a ranking run could serve, by its validation users' AP@k (example order, the same users for every candidate). */
export interface RankingCandidate<N extends string = string> {
  name: N;
  /** simpler first: popularity, then the other heuristics, then the deep model, then the re-ranker */
  tier: number;
  val_ap: Float64Array;
}

export interface RankingChoice<N extends string = string> {
  chosen: N;
  chosen_reason: string;
  /** the simplest tier's best candidate on validation, what a more complex one must beat */
  simple_best: N;
  /** 95% paired interval of each other candidate's validation MAP@k lift over the one it was judged against */
  val_lift: Record<string, Interval>;
}

const mean = (x: Float64Array): number => (x.length ? x.reduce((a, b) => a + b, 0) / x.length : 0);

/**
 * Never worse than the simplest method, within noise: walking the tiers from the simplest, the incumbent
 * (the best of the first tier on the point score) is replaced by a more complex candidate only when the
 * 95% paired bootstrap interval of that candidate's validation MAP@k lift over the incumbent lies above 0;
 * within a tier the higher point score is tried first. A tie keeps the simpler list.
 */
export function chooseRanking<N extends string>(candidates: RankingCandidate<N>[], k: number, seed: number): RankingChoice<N> {
  if (candidates.length === 0) throw new Error('chooseRanking needs at least one candidate');
  const order = [...candidates].sort((a, b) => a.tier - b.tier || mean(b.val_ap) - mean(a.val_ap));
  const firstTier = order.filter((c) => c.tier === order[0]!.tier);
  let incumbent = firstTier[0]!;
  const at = `MAP@${k}`;
  const val_lift: Record<string, Interval> = {};
  const notes: string[] = [];
  const fmt = (x: number) => x.toFixed(4);
  const iv = (l: Interval) => (l ? `${fmt(l[0])}, ${fmt(l[1])}` : 'undefined');
  for (const c of order) {
    if (c === incumbent || c.tier === incumbent.tier) continue;
    const lift = meanInterval(c.val_ap, seed, incumbent.val_ap);
    val_lift[c.name] = lift;
    const d = mean(c.val_ap) - mean(incumbent.val_ap);
    if (lift && lift[0] > 0) {
      notes.push(`${c.name} beats ${incumbent.name} by ${fmt(d)} [95% ${iv(lift)}]`);
      incumbent = c;
    } else {
      notes.push(`${c.name} vs ${incumbent.name} ${d >= 0 ? '+' : ''}${fmt(d)} [95% ${iv(lift)}], not above 0`);
    }
  }
  const simple_best = firstTier[0]!;
  const head =
    incumbent === simple_best
      ? `${incumbent.name} is kept (validation ${at} ${fmt(mean(incumbent.val_ap))}): no more complex list beats it beyond the 95% paired interval`
      : `${incumbent.name} is served (validation ${at} ${fmt(mean(incumbent.val_ap))}), beating the simpler lists beyond the 95% paired interval`;
  return { chosen: incumbent.name, chosen_reason: `${head}${notes.length ? `; ${notes.join('; ')}` : ''}`, simple_best: simple_best.name, val_lift };
}

/** The examples `idx` of `ex` (labels and anchors), in that order. */
export function subset(ex: Examples, idx: number[]): Examples {
  const l = ex.label_items!;
  const offsets = new Int32Array(idx.length + 1);
  idx.forEach((e, j) => (offsets[j + 1] = offsets[j]! + l.offsets[e + 1]! - l.offsets[e]!));
  const items = new Int32Array(offsets[idx.length]!);
  idx.forEach((e, j) => items.set(l.items.subarray(l.offsets[e]!, l.offsets[e + 1]!), offsets[j]!));
  return { nodes: Int32Array.from(idx, (e) => ex.nodes[e]!), anchors: Float64Array.from(idx, (e) => ex.anchors[e]!), labels: Float32Array.from(idx, (e) => ex.labels[e]!), label_items: { offsets, items } };
}

/** The rows `idx` of n × k lists. */
export function subsetLists(lists: Int32Array, idx: number[], k: number): Int32Array {
  const out = new Int32Array(idx.length * k);
  idx.forEach((e, j) => out.set(lists.subarray(e * k, (e + 1) * k), j * k));
  return out;
}
