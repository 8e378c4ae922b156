/**
 * The best split of a node, read off its histogram. Gain is the second-order gain of XGBoost/LightGBM
 * (without the constant ½): G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ).
 *
 * - Numeric feature: every threshold between value bins, once with missing values sent left and once
 *   right (only the second when the node has none: they then follow the larger child at prediction).
 * - Categorical feature: categories sorted by G/(H + 10) and every prefix of that order tried as the left
 *   set, from both ends, up to half of them (Fisher's ordering, as LightGBM and scikit-learn do); the
 *   missing bin (missing and rare or unseen categories) is one more category. Categories with fewer than
 *   10 rows in the node are left out of the order and go right.
 */
import { BINS, MISSING_BIN, type FeatureKind } from './bin_mapper.js';
import { FEATURE_SLOTS } from './histogram.js';

/** Smoothing and minimum support of a category in the sorted-gradient split (scikit-learn's MIN_CAT_SUPPORT). */
export const CAT_SUPPORT = 10;

export interface NodeStats {
  g: number;
  h: number;
  count: number;
}

export interface Split {
  gain: number;
  feature: number;
  /** Numeric: bins ≤ this go left. Categorical: −1. */
  bin: number;
  missingLeft: boolean;
  /** Categorical: 1 for each bin going left (256 flags). */
  catLeft: Uint8Array | null;
  left: NodeStats;
  right: NodeStats;
}

export interface SplitRules {
  l2: number;
  minSamplesLeaf: number;
  minHessianLeaf: number;
}

/** The gain-maximising split of a node over all features, or null when no split is allowed or helps. */
export function findBestSplit(
  hist: Float64Array,
  offset: number,
  total: NodeStats,
  kinds: readonly FeatureKind[],
  valueBins: readonly number[],
  rules: SplitRules,
): Split | null {
  let best: Split | null = null;
  const parentScore = (total.g * total.g) / (total.h + rules.l2);
  for (let f = 0; f < kinds.length; f++) {
    const base = offset + f * FEATURE_SLOTS;
    const s =
      kinds[f] === 'categorical'
        ? categoricalSplit(hist, base, f, valueBins[f]!, total, parentScore, rules)
        : numericSplit(hist, base, f, valueBins[f]!, total, parentScore, rules);
    // Ties keep the lower feature index, so the result does not depend on the thread that built it.
    if (s && (!best || s.gain > best.gain)) best = s;
  }
  return best;
}

/**
 * Rows per unit of hessian in a node: histograms hold no counts, so a side's count for `min_samples_leaf`
 * is its hessian times this (LightGBM's estimate; exact when every row's hessian is the same).
 */
function countFactor(total: NodeStats): number {
  return total.h > 0 ? total.count / total.h : 0;
}

function numericSplit(
  hist: Float64Array,
  base: number,
  f: number,
  nb: number,
  total: NodeStats,
  parentScore: number,
  r: SplitRules,
): Split | null {
  const cf = countFactor(total);
  const mb = base + MISSING_BIN * 2;
  const gm = hist[mb]!;
  const hm = hist[mb + 1]!;
  const cm = Math.round(hm * cf);
  let bestGain = 0;
  let bestBin = -1;
  let bestMissingLeft = false;
  let bl: NodeStats = { g: 0, h: 0, count: 0 };
  for (let pass = 0; pass < (hm > 0 ? 2 : 1); pass++) {
    const missingLeft = pass === 1;
    let gl = missingLeft ? gm : 0;
    let hl = missingLeft ? hm : 0;
    let cl = missingLeft ? cm : 0;
    for (let t = 0; t < nb - 1; t++) {
      const b = base + t * 2;
      gl += hist[b]!;
      hl += hist[b + 1]!;
      cl = Math.round(hl * cf);
      const cr = total.count - cl;
      if (cl < r.minSamplesLeaf) continue;
      if (cr < r.minSamplesLeaf) break;
      const hr = total.h - hl;
      if (hl < r.minHessianLeaf || hr < r.minHessianLeaf) continue;
      const gr = total.g - gl;
      const gain = (gl * gl) / (hl + r.l2) + (gr * gr) / (hr + r.l2) - parentScore;
      if (gain > bestGain) {
        bestGain = gain;
        bestBin = t;
        bestMissingLeft = missingLeft;
        bl = { g: gl, h: hl, count: cl };
      }
    }
  }
  if (bestBin < 0) return null;
  const right = { g: total.g - bl.g, h: total.h - bl.h, count: total.count - bl.count };
  // With no missing rows in the node, unseen missing values follow the larger child.
  const missingLeft = hm > 0 ? bestMissingLeft : bl.count >= right.count;
  return { gain: bestGain, feature: f, bin: bestBin, missingLeft, catLeft: null, left: bl, right };
}

function categoricalSplit(
  hist: Float64Array,
  base: number,
  f: number,
  nb: number,
  total: NodeStats,
  parentScore: number,
  r: SplitRules,
): Split | null {
  const cf = countFactor(total);
  const cats: { bin: number; g: number; h: number; c: number; v: number }[] = [];
  const consider = (bin: number): void => {
    const b = base + bin * 2;
    const h = hist[b + 1]!;
    const c = Math.round(h * cf);
    if (c < CAT_SUPPORT) return;
    const g = hist[b]!;
    cats.push({ bin, g, h, c, v: g / (h + CAT_SUPPORT) });
  };
  for (let bin = 0; bin < nb; bin++) consider(bin);
  consider(MISSING_BIN);
  if (cats.length < 2) return null;
  cats.sort((a, b) => a.v - b.v || a.bin - b.bin);
  const half = Math.floor((cats.length + 1) / 2);
  let bestGain = 0;
  let bestLeft: number[] | null = null;
  let bl: NodeStats = { g: 0, h: 0, count: 0 };
  for (const dir of [1, -1]) {
    let gl = 0;
    let hl = 0;
    let cl = 0;
    for (let k = 0; k < half; k++) {
      const cat = cats[dir === 1 ? k : cats.length - 1 - k]!;
      gl += cat.g;
      hl += cat.h;
      cl += cat.c;
      const cr = total.count - cl;
      if (cl < r.minSamplesLeaf) continue;
      if (cr < r.minSamplesLeaf) break;
      const hr = total.h - hl;
      if (hl < r.minHessianLeaf || hr < r.minHessianLeaf) continue;
      const gr = total.g - gl;
      const gain = (gl * gl) / (hl + r.l2) + (gr * gr) / (hr + r.l2) - parentScore;
      if (gain > bestGain) {
        bestGain = gain;
        bestLeft = (dir === 1 ? cats.slice(0, k + 1) : cats.slice(cats.length - 1 - k)).map((c) => c.bin);
        bl = { g: gl, h: hl, count: cl };
      }
    }
  }
  if (!bestLeft) return null;
  const catLeft = new Uint8Array(BINS);
  for (const b of bestLeft) catLeft[b] = 1;
  const right = { g: total.g - bl.g, h: total.h - bl.h, count: total.count - bl.count };
  return { gain: bestGain, feature: f, bin: -1, missingLeft: catLeft[MISSING_BIN] === 1, catLeft, left: bl, right };
}
