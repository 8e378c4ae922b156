/**
 * Bootstrap 95% intervals of evaluation metrics (percentile bootstrap over examples, Efron & Tibshirani
 * ch. 13): resample the test examples with replacement, recompute every metric, and report the 2.5th and
 * 97.5th percentiles. One test set with 25 entities an anchor moves AUROC by several points per
 * prediction; the interval says how far a figure can be trusted, and a lift whose interval holds 0 is not
 * a win. Seeded, so a run's intervals are reproducible.
 */
import { round } from '../core/number.js';
import { Rng } from '../core/rng.js';
import { binaryMetrics, regressionMetrics, weightedBinaryMetrics } from './metrics.js';
import type { ObjectiveKind } from './objective/objective.js';

/** [low, high]; null when the metric is undefined on the sample (no positives, an empty test set). */
export type Interval = [number, number] | null;

export interface BootstrapOptions {
  seed: number;
  /** resamples; default: 1,000, fewer for large sets (at least 200) so a million examples take seconds */
  resamples?: number;
}

/** Keys of a metrics object that describe the sample, not the model (never given an interval). */
const NOT_METRICS = new Set(['n', 'k']);
/** Examples × resamples: above this the resample count shrinks (each resample recomputes every metric). */
const WORK = 5_000_000;

export function resampleCount(n: number, requested?: number): number {
  return requested ?? Math.max(200, Math.min(1000, Math.floor(WORK / Math.max(1, n))));
}

/** Percentile `p` (0..1) of sorted values, linearly interpolated. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const x = p * (sorted.length - 1);
  const lo = Math.floor(x);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (x - lo);
}

function interval(values: number[]): Interval {
  const finite = values.filter(Number.isFinite);
  // A metric undefined on more than 1 in 20 resamples has no 95% interval.
  if (finite.length < values.length * 0.95 || finite.length === 0) return null;
  const s = Float64Array.from(finite).sort();
  return [round(percentile(s, 0.025), 4), round(percentile(s, 0.975), 4)];
}

/**
 * Multiplicity of each position in one resample of n: drawing n indices with replacement, as counts so the
 * caller can lay the sample out in any order it likes.
 */
function drawCounts(rng: Rng, n: number, counts: Uint32Array): void {
  counts.fill(0);
  for (let i = 0; i < n; i++) counts[rng.int(n)]!++;
}

/** A binary sample laid out once in descending probability order, with its tie groups. */
interface SortedBinary {
  order: Uint32Array;
  labels: Float32Array;
  probs: Float32Array;
  groups: Uint32Array;
}

function sortBinary(labels: ArrayLike<number>, probs: ArrayLike<number>): SortedBinary {
  const n = labels.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => probs[b]! - probs[a]! || a - b);
  const l = Float32Array.from(order, (i) => labels[i]!);
  const p = Float32Array.from(order, (i) => probs[i]!);
  const groups: number[] = [0];
  for (let r = 1; r < n; r++) if (p[r] !== p[r - 1]) groups.push(r);
  groups.push(n);
  return { order, labels: l, probs: p, groups: Uint32Array.from(groups) };
}

/** Weights of a resample (counts per original index) in a sorted layout's order. */
function inOrder(counts: Uint32Array, order: Uint32Array, out: Uint32Array): Uint32Array {
  for (let r = 0; r < order.length; r++) out[r] = counts[order[r]!]!;
  return out;
}

/** Expands a resample's counts into arrays (original order): the generic path for metrics that need no sort. */
function expand(counts: Uint32Array, labels: ArrayLike<number>, predictions: ArrayLike<number>, l: Float32Array, p: Float32Array): void {
  let w = 0;
  for (let i = 0; i < counts.length; i++) {
    for (let c = counts[i]!; c > 0; c--) {
      l[w] = labels[i]!;
      p[w] = predictions[i]!;
      w++;
    }
  }
}

/** Metrics of one resample given its counts, for a task kind; built once per sample. */
function resampler(kind: ObjectiveKind, labels: ArrayLike<number>, predictions: ArrayLike<number>): (counts: Uint32Array) => Record<string, number> {
  const n = labels.length;
  if (kind === 'binary') {
    const sorted = sortBinary(labels, predictions);
    const w = new Uint32Array(n);
    return (counts) => weightedBinaryMetrics(sorted.labels, sorted.probs, sorted.groups, inOrder(counts, sorted.order, w)) as unknown as Record<string, number>;
  }
  if (kind === 'regression') {
    const l = new Float32Array(n);
    const p = new Float32Array(n);
    return (counts) => {
      expand(counts, labels, predictions, l, p);
      return regressionMetrics(l, p) as unknown as Record<string, number>;
    };
  }
  throw new Error(`bootstrap intervals: ${kind} metrics are computed from top-k lists, not one prediction per example`);
}

/** The metrics of the full sample, as the resampler computes them (every count 1). */
function pointMetrics(kind: ObjectiveKind, labels: ArrayLike<number>, predictions: ArrayLike<number>): Record<string, number> {
  return (kind === 'binary' ? binaryMetrics(labels, predictions) : regressionMetrics(labels, predictions)) as unknown as Record<string, number>;
}

/** 95% intervals of every metric of a binary or regression task's predictions (`n` gets none). */
export function metricIntervals(kind: ObjectiveKind, labels: ArrayLike<number>, predictions: ArrayLike<number>, opts: BootstrapOptions): Record<string, Interval> {
  const n = labels.length;
  const keys = Object.entries(pointMetrics(kind, labels, predictions))
    .filter(([k, v]) => typeof v === 'number' && !NOT_METRICS.has(k))
    .map(([k]) => k);
  if (n === 0) return Object.fromEntries(keys.map((k) => [k, null]));
  const sample = resampler(kind, labels, predictions);
  const rng = new Rng(opts.seed);
  const counts = new Uint32Array(n);
  const values: Record<string, number[]> = Object.fromEntries(keys.map((k) => [k, []]));
  for (let b = resampleCount(n, opts.resamples); b > 0; b--) {
    drawCounts(rng, n, counts);
    const m = sample(counts);
    for (const k of keys) values[k]!.push(m[k]!);
  }
  return Object.fromEntries(keys.map((k) => [k, interval(values[k]!)]));
}

/**
 * 95% interval of the lift `metric(model) − metric(baseline)` (or baseline − model when lower is better)
 * over the same resampled examples: paired, so the examples' difficulty cancels.
 */
export function liftInterval(
  kind: ObjectiveKind,
  metric: { name: string; higherIsBetter: boolean },
  labels: ArrayLike<number>,
  model: ArrayLike<number>,
  baseline: ArrayLike<number>,
  opts: BootstrapOptions,
): Interval {
  const n = labels.length;
  if (n === 0 || model.length !== n || baseline.length !== n) return null;
  const m = resampler(kind, labels, model);
  const b = resampler(kind, labels, baseline);
  const rng = new Rng(opts.seed);
  const counts = new Uint32Array(n);
  const diffs: number[] = [];
  for (let k = resampleCount(2 * n, opts.resamples); k > 0; k--) {
    drawCounts(rng, n, counts);
    const d = m(counts)[metric.name]! - b(counts)[metric.name]!;
    diffs.push(metric.higherIsBetter ? d : -d);
  }
  return interval(diffs);
}

/** Whether an interval excludes 0 and on which side: how a lift is judged. */
export function judgeLift(lift: Interval): 'better' | 'worse' | 'tie' | 'undefined' {
  if (!lift) return 'undefined';
  return lift[0] > 0 ? 'better' : lift[1] < 0 ? 'worse' : 'tie';
}
