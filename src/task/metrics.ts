/**
 * Evaluation metrics. Binary: AUROC (ties get the average rank), average precision (sklearn's step-wise
 * definition, ties grouped), accuracy and F1 at threshold 0.5, and recall and precision at a false-positive
 * rate of 1% and 5% (the top of the ranking a fraud team acts on, which AUROC hides). Regression: MAE,
 * RMSE, R². Ranking: MAP@k, recall@k, NDCG@k.
 */
import { round } from '../core/number.js';

export interface BinaryMetrics {
  auroc: number;
  ap: number;
  accuracy: number;
  f1: number;
  positive_rate: number;
  /** at the lowest threshold whose false-positive rate is at most 1% (5%): share of positives caught, and of flagged rows that are positive */
  recall_at_fpr_1: number;
  precision_at_fpr_1: number;
  recall_at_fpr_5: number;
  precision_at_fpr_5: number;
  n: number;
}

export interface RegressionMetrics {
  mae: number;
  rmse: number;
  r2: number;
  n: number;
}

/** Ranking metrics at the query's k over examples with at least one label item (see `rankingMetrics`). */
export interface RankingMetrics {
  map_at_k: number;
  recall_at_k: number;
  ndcg_at_k: number;
  k: number;
  n: number;
}

export type Metrics = BinaryMetrics | RegressionMetrics | RankingMetrics;

/**
 * MAP@k, recall@k and NDCG@k of top-k lists against label item lists, averaged over examples (each has at
 * least one label item; one without counts as 0 everywhere). `ranked` holds k item ids per example, best
 * first, −1 where the list is shorter (an empty slot is a miss). Definitions as RelBench and the H&M
 * competition use them, binary relevance:
 *
 *   AP@k   = Σ_{i ≤ k} P(i)·rel(i) / min(|labels|, k)        P(i): precision of the first i
 *   recall = |top-k ∩ labels| / |labels|
 *   NDCG@k = Σ_{i ≤ k} rel(i) / log2(i + 1)  ÷  Σ_{i ≤ min(|labels|, k)} 1 / log2(i + 1)
 */
export function rankingMetrics(labels: { offsets: Int32Array; items: Int32Array }, ranked: Int32Array, k: number): RankingMetrics {
  const n = labels.offsets.length - 1;
  if (ranked.length !== n * k) throw new Error(`rankingMetrics: ${ranked.length} ranked ids for ${n} examples × k = ${k}`);
  let map = 0;
  let recall = 0;
  let ndcg = 0;
  for (let e = 0; e < n; e++) {
    const lo = labels.offsets[e]!;
    const hi = labels.offsets[e + 1]!;
    const m = hi - lo;
    if (m === 0) continue;
    const truth = new Set<number>();
    for (let j = lo; j < hi; j++) truth.add(labels.items[j]!);
    let hits = 0;
    let ap = 0;
    let dcg = 0;
    const seen = new Set<number>();
    for (let i = 0; i < k; i++) {
      const item = ranked[e * k + i]!;
      // A repeated id is counted once: a list that names an item twice gains nothing the second time.
      if (item < 0 || seen.has(item)) continue;
      seen.add(item);
      if (!truth.has(item)) continue;
      hits++;
      ap += hits / (i + 1);
      dcg += 1 / Math.log2(i + 2);
    }
    let idcg = 0;
    for (let i = 0; i < Math.min(m, k); i++) idcg += 1 / Math.log2(i + 2);
    map += ap / Math.min(m, k);
    recall += hits / m;
    ndcg += dcg / idcg;
  }
  const d = Math.max(1, n);
  return { map_at_k: round(map / d, 5), recall_at_k: round(recall / d, 5), ndcg_at_k: round(ndcg / d, 5), k, n };
}

/**
 * Indices sorted by descending score (stable). Scores already in that order (a bootstrap resample laid out
 * in prediction order, task/intervals.ts) skip the sort: one pass instead of n log n comparator calls.
 */
function orderDesc(scores: ArrayLike<number>): Uint32Array {
  const idx = new Uint32Array(scores.length);
  let sorted = true;
  for (let i = 0; i < idx.length; i++) {
    idx[i] = i;
    if (i > 0 && scores[i]! > scores[i - 1]!) sorted = false;
  }
  return sorted ? idx : idx.sort((a, b) => scores[b]! - scores[a]! || a - b);
}

export function auroc(labels: ArrayLike<number>, scores: ArrayLike<number>): number {
  const n = labels.length;
  const idx = orderDesc(scores);
  let pos = 0;
  for (let i = 0; i < n; i++) pos += labels[i]! > 0.5 ? 1 : 0;
  const neg = n - pos;
  if (pos === 0 || neg === 0) return Number.NaN;
  // Mann-Whitney U over ascending ranks with ties averaged.
  let rankSumPos = 0;
  let i = 0;
  while (i < n) {
    let j = i;
    while (j + 1 < n && scores[idx[j + 1]!] === scores[idx[i]!]) j++;
    const ascRank = n - (i + j) / 2; // ranks are 1-based ascending; idx is descending
    for (let k = i; k <= j; k++) if (labels[idx[k]!]! > 0.5) rankSumPos += ascRank;
    i = j + 1;
  }
  return (rankSumPos - (pos * (pos + 1)) / 2) / (pos * neg);
}

export function averagePrecision(labels: ArrayLike<number>, scores: ArrayLike<number>): number {
  const n = labels.length;
  const idx = orderDesc(scores);
  let totalPos = 0;
  for (let i = 0; i < n; i++) totalPos += labels[i]! > 0.5 ? 1 : 0;
  if (totalPos === 0) return Number.NaN;
  let tp = 0;
  let fp = 0;
  let ap = 0;
  let prevRecall = 0;
  let i = 0;
  while (i < n) {
    let j = i;
    while (j + 1 < n && scores[idx[j + 1]!] === scores[idx[i]!]) j++;
    for (let k = i; k <= j; k++) {
      if (labels[idx[k]!]! > 0.5) tp++;
      else fp++;
    }
    const recall = tp / totalPos;
    ap += (recall - prevRecall) * (tp / (tp + fp));
    prevRecall = recall;
    i = j + 1;
  }
  return ap;
}

/** Binary metrics from probabilities. */
export function binaryMetrics(labels: ArrayLike<number>, probs: ArrayLike<number>): BinaryMetrics {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let correct = 0;
  let pos = 0;
  for (let i = 0; i < labels.length; i++) {
    const y = labels[i]! > 0.5;
    const p = probs[i]! >= 0.5;
    if (y) pos++;
    if (y === p) correct++;
    if (p && y) tp++;
    else if (p && !y) fp++;
    else if (!p && y) fn++;
  }
  const n = labels.length;
  return {
    auroc: round(auroc(labels, probs), 4),
    ap: round(averagePrecision(labels, probs), 4),
    accuracy: round(n ? correct / n : Number.NaN, 4),
    f1: round(tp + fp + fn > 0 ? (2 * tp) / (2 * tp + fp + fn) : 0, 4),
    positive_rate: round(n ? pos / n : Number.NaN, 4),
    ...atFalsePositiveRates(labels, probs),
    n,
  };
}

/**
 * Binary metrics of a weighted sample, for the bootstrap (task/intervals.ts): `labels` and `probs` sorted by
 * descending probability, `groups` the start of each run of equal probabilities (plus n at the end), and
 * `weights[i]` how many times example i is drawn. The same definitions as `binaryMetrics` (ties averaged in
 * AUROC, grouped in AP and at the false-positive rates; a test checks they agree on the expanded sample),
 * in two passes over the groups and no sort, so a thousand resamples of 60,000 examples take seconds.
 */
export function weightedBinaryMetrics(labels: Float32Array, probs: Float32Array, groups: Uint32Array, weights: Uint32Array): BinaryMetrics {
  let pos = 0;
  let n = 0;
  let tp5 = 0;
  let fp5 = 0;
  let fn5 = 0;
  let correct = 0;
  for (let i = 0; i < labels.length; i++) {
    const w = weights[i]!;
    if (w === 0) continue;
    const y = labels[i]! > 0.5;
    const p = probs[i]! >= 0.5;
    n += w;
    if (y) pos += w;
    if (y === p) correct += w;
    if (p && y) tp5 += w;
    else if (p && !y) fp5 += w;
    else if (!p && y) fn5 += w;
  }
  const neg = n - pos;
  let tp = 0;
  let fp = 0;
  let aucPairs = 0;
  let ap = 0;
  let prevRecall = 0;
  const at = { 1: [0, Number.NaN], 5: [0, Number.NaN] } as Record<1 | 5, [number, number]>;
  const open = { 1: true, 5: true };
  for (let g = 0; g + 1 < groups.length; g++) {
    let gp = 0;
    let gn = 0;
    for (let i = groups[g]!; i < groups[g + 1]!; i++) {
      const w = weights[i]!;
      if (labels[i]! > 0.5) gp += w;
      else gn += w;
    }
    if (gp + gn === 0) continue;
    for (const f of [1, 5] as const) {
      if (!open[f]) continue;
      if (neg > 0 && (fp + gn) / neg > f / 100) open[f] = false;
      else at[f] = [pos ? (tp + gp) / pos : Number.NaN, (tp + gp) / (tp + gp + fp + gn)];
    }
    // positives of this group rank above every negative below it, and tie half of the group's negatives
    aucPairs += gp * (neg - fp - gn) + 0.5 * gp * gn;
    tp += gp;
    fp += gn;
    if (pos > 0) {
      const recall = tp / pos;
      ap += (recall - prevRecall) * (tp / (tp + fp));
      prevRecall = recall;
    }
  }
  return {
    auroc: round(pos && neg ? aucPairs / (pos * neg) : Number.NaN, 4),
    ap: round(pos ? ap : Number.NaN, 4),
    accuracy: round(n ? correct / n : Number.NaN, 4),
    f1: round(tp5 + fp5 + fn5 > 0 ? (2 * tp5) / (2 * tp5 + fp5 + fn5) : 0, 4),
    positive_rate: round(n ? pos / n : Number.NaN, 4),
    recall_at_fpr_1: round(at[1][0], 4),
    precision_at_fpr_1: round(at[1][1], 4),
    recall_at_fpr_5: round(at[5][0], 4),
    precision_at_fpr_5: round(at[5][1], 4),
    n,
  };
}

/**
 * Recall and precision at the lowest score threshold whose false-positive rate stays within 1% and 5%.
 * Rows with equal scores are flagged together (a threshold cannot split a tie).
 */
export function atFalsePositiveRates(labels: ArrayLike<number>, scores: ArrayLike<number>): Pick<BinaryMetrics, 'recall_at_fpr_1' | 'precision_at_fpr_1' | 'recall_at_fpr_5' | 'precision_at_fpr_5'> {
  const order = orderDesc(scores);
  let pos = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i]! > 0.5) pos++;
  const neg = labels.length - pos;
  const at = (maxFpr: number): [number, number] => {
    let tp = 0;
    let fp = 0;
    let best: [number, number] = [0, Number.NaN];
    for (let k = 0; k < order.length; ) {
      let j = k;
      let gtp = 0;
      let gfp = 0;
      for (; j < order.length && scores[order[j]!] === scores[order[k]!]; j++) labels[order[j]!]! > 0.5 ? gtp++ : gfp++;
      if (neg > 0 && (fp + gfp) / neg > maxFpr) break;
      tp += gtp;
      fp += gfp;
      best = [pos ? tp / pos : Number.NaN, tp + fp ? tp / (tp + fp) : Number.NaN];
      k = j;
    }
    return best;
  };
  const [r1, p1] = at(0.01);
  const [r5, p5] = at(0.05);
  return { recall_at_fpr_1: round(r1, 4), precision_at_fpr_1: round(p1, 4), recall_at_fpr_5: round(r5, 4), precision_at_fpr_5: round(p5, 4) };
}

export function regressionMetrics(labels: ArrayLike<number>, preds: ArrayLike<number>): RegressionMetrics {
  const n = labels.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += labels[i]!;
  mean /= Math.max(1, n);
  let ae = 0;
  let se = 0;
  let st = 0;
  for (let i = 0; i < n; i++) {
    const e = preds[i]! - labels[i]!;
    ae += Math.abs(e);
    se += e * e;
    st += (labels[i]! - mean) ** 2;
  }
  return { mae: round(ae / n, 4), rmse: round(Math.sqrt(se / n), 4), r2: round(st > 0 ? 1 - se / st : Number.NaN, 4), n };
}

/** ROC curve points (fpr, tpr), thinned to at most `max` points, for reports. */
export function rocCurve(labels: ArrayLike<number>, scores: ArrayLike<number>, max = 200): [number, number][] {
  const idx = orderDesc(scores);
  let P = 0;
  for (let i = 0; i < labels.length; i++) P += labels[i]! > 0.5 ? 1 : 0;
  const N = labels.length - P;
  const pts: [number, number][] = [[0, 0]];
  let tp = 0;
  let fp = 0;
  for (let k = 0; k < idx.length; k++) {
    if (labels[idx[k]!]! > 0.5) tp++;
    else fp++;
    if (k === idx.length - 1 || scores[idx[k + 1]!] !== scores[idx[k]!]) pts.push([N ? fp / N : 0, P ? tp / P : 0]);
  }
  return thin(pts, max);
}

/** Precision-recall points (recall, precision). */
export function prCurve(labels: ArrayLike<number>, scores: ArrayLike<number>, max = 200): [number, number][] {
  const idx = orderDesc(scores);
  let P = 0;
  for (let i = 0; i < labels.length; i++) P += labels[i]! > 0.5 ? 1 : 0;
  const pts: [number, number][] = [];
  let tp = 0;
  let fp = 0;
  for (let k = 0; k < idx.length; k++) {
    if (labels[idx[k]!]! > 0.5) tp++;
    else fp++;
    if (k === idx.length - 1 || scores[idx[k + 1]!] !== scores[idx[k]!]) pts.push([P ? tp / P : 0, tp / (tp + fp)]);
  }
  return thin(pts, max);
}

/** Calibration: mean predicted vs observed positive rate in `bins` equal-width probability bins. */
export function calibration(labels: ArrayLike<number>, probs: ArrayLike<number>, bins = 10): { bin: number; predicted: number; observed: number; count: number }[] {
  const sumP = new Float64Array(bins);
  const sumY = new Float64Array(bins);
  const cnt = new Float64Array(bins);
  for (let i = 0; i < labels.length; i++) {
    const b = Math.min(bins - 1, Math.floor(probs[i]! * bins));
    sumP[b]! += probs[i]!;
    sumY[b]! += labels[i]! > 0.5 ? 1 : 0;
    cnt[b]!++;
  }
  const out = [];
  for (let b = 0; b < bins; b++) if (cnt[b]! > 0) out.push({ bin: b, predicted: round(sumP[b]! / cnt[b]!, 4), observed: round(sumY[b]! / cnt[b]!, 4), count: cnt[b]! });
  return out;
}

function thin(pts: [number, number][], max: number): [number, number][] {
  if (pts.length <= max) return pts.map(([a, b]) => [round(a, 4), round(b, 4)]);
  const out: [number, number][] = [];
  for (let i = 0; i < max; i++) {
    const p = pts[Math.round((i * (pts.length - 1)) / (max - 1))]!;
    out.push([round(p[0], 4), round(p[1], 4)]);
  }
  return out;
}


export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
