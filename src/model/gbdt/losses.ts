/**
 * The boosting losses: each gives the starting score, per-row gradients and hessians of the loss in the raw
 * score, the validation loss early stopping watches (lower is better) and the output transform.
 *
 * | loss | raw score | gradient g, hessian h | start | validation |
 * |---|---|---|---|---|
 * | binary | log-odds | σ(f) − y, σ(f)(1 − σ(f)) | log-odds of the mean | log-loss |
 * | l2 | value | f − y, 1 | mean | mean squared error |
 * | l1 | value | sign(f − y), 1; each leaf refitted to the median residual | median | mean absolute error |
 * | lambdarank | score | LambdaMART's λ over the pairs of a group, weighted by |ΔNDCG| | 0 | 1 − NDCG@k |
 */
import { DataError } from '../../core/errors.js';
import type { GbdtLossName } from './params.js';

export interface GbdtLoss {
  readonly name: GbdtLossName;
  /** Every row's hessian when it is a constant (histograms then skip hessians), else 0. */
  readonly constHess: number;
  baseline(y: Float64Array): number;
  gradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array): void;
  validationLoss(y: Float64Array, raw: Float64Array, groups: Int32Array | null): number;
  transform(raw: number): number;
  /** The leaf value (before shrinkage) from the leaf's rows, for losses whose Newton step is not the optimum. */
  refitLeaf?(y: Float64Array, raw: Float64Array, rows: Uint32Array): number;
}

export function sigmoid(x: number): number {
  return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
}

export class BinaryLogLoss implements GbdtLoss {
  readonly name = 'binary' as const;
  readonly constHess = 0;

  baseline(y: Float64Array): number {
    let s = 0;
    for (let i = 0; i < y.length; i++) {
      const v = y[i]!;
      if (v !== 0 && v !== 1) throw new DataError('binary labels must be 0 or 1', { value: v, hint: 'use loss l2 for a numeric target' });
      s += v;
    }
    const p = Math.min(Math.max(s / Math.max(y.length, 1), 1e-15), 1 - 1e-15);
    return Math.log(p / (1 - p));
  }

  gradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array): void {
    for (let i = 0; i < y.length; i++) {
      const p = sigmoid(raw[i]!);
      grad[i] = p - y[i]!;
      hess[i] = Math.max(p * (1 - p), 1e-16);
    }
  }

  validationLoss(y: Float64Array, raw: Float64Array): number {
    let s = 0;
    // log(1 + e^f) − y·f, written to stay finite for large |f|.
    for (let i = 0; i < y.length; i++) {
      const f = raw[i]!;
      s += (f > 0 ? f + Math.log1p(Math.exp(-f)) : Math.log1p(Math.exp(f))) - y[i]! * f;
    }
    return s / Math.max(y.length, 1);
  }

  transform(raw: number): number {
    return sigmoid(raw);
  }
}

export class L2Loss implements GbdtLoss {
  readonly name = 'l2' as const;
  readonly constHess = 1;

  baseline(y: Float64Array): number {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += y[i]!;
    return s / Math.max(y.length, 1);
  }

  gradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array): void {
    for (let i = 0; i < y.length; i++) {
      grad[i] = raw[i]! - y[i]!;
      hess[i] = 1;
    }
  }

  validationLoss(y: Float64Array, raw: Float64Array): number {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += (raw[i]! - y[i]!) ** 2;
    return s / Math.max(y.length, 1);
  }

  transform(raw: number): number {
    return raw;
  }
}

export class L1Loss implements GbdtLoss {
  readonly name = 'l1' as const;
  readonly constHess = 1;

  baseline(y: Float64Array): number {
    return median(Float64Array.from(y));
  }

  gradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array): void {
    for (let i = 0; i < y.length; i++) {
      const d = raw[i]! - y[i]!;
      grad[i] = d > 0 ? 1 : d < 0 ? -1 : 0;
      hess[i] = 1;
    }
  }

  validationLoss(y: Float64Array, raw: Float64Array): number {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += Math.abs(raw[i]! - y[i]!);
    return s / Math.max(y.length, 1);
  }

  transform(raw: number): number {
    return raw;
  }

  refitLeaf(y: Float64Array, raw: Float64Array, rows: Uint32Array): number {
    const r = new Float64Array(rows.length);
    for (let k = 0; k < rows.length; k++) r[k] = y[rows[k]!]! - raw[rows[k]!]!;
    return median(r);
  }
}

/**
 * LambdaMART (Burges 2010) as LightGBM's `lambdarank`: within each group, for each pair with
 * y_i > y_j, λ = −σ(−(f_i − f_j))·|ΔNDCG_ij| pushes i up and j down, hessian σ(1−σ)·|ΔNDCG_ij|;
 * gains 2^y − 1, discounts 1/log2(2 + rank) of the current order, |ΔNDCG| counted only when one of the pair
 * ranks within the top k. Rows of a group are consecutive; `groups` holds the group sizes.
 */
export class LambdaRankLoss implements GbdtLoss {
  readonly name = 'lambdarank' as const;
  readonly constHess = 0;

  constructor(
    private readonly trainGroups: Int32Array,
    private readonly k: number,
  ) {}

  baseline(): number {
    return 0;
  }

  gradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array): void {
    grad.fill(0);
    hess.fill(0);
    let start = 0;
    for (let gi = 0; gi < this.trainGroups.length; gi++) {
      const m = this.trainGroups[gi]!;
      this.groupGradients(y, raw, grad, hess, start, m);
      start += m;
    }
  }

  private groupGradients(y: Float64Array, raw: Float64Array, grad: Float32Array, hess: Float32Array, start: number, m: number): void {
    const k = this.k > 0 ? Math.min(this.k, m) : m;
    const maxDcg = idealDcg(y, start, m, k);
    if (maxDcg <= 0) return;
    const order = rankOrder(raw, start, m);
    const rankOf = new Int32Array(m);
    for (let r = 0; r < m; r++) rankOf[order[r]!] = r;
    for (let a = 0; a < m; a++) {
      for (let b = 0; b < m; b++) {
        const ya = y[start + a]!;
        const yb = y[start + b]!;
        if (ya <= yb) continue;
        const ra = rankOf[a]!;
        const rb = rankOf[b]!;
        if (ra >= k && rb >= k) continue;
        const delta = (Math.abs(2 ** ya - 2 ** yb) * Math.abs(1 / Math.log2(2 + ra) - 1 / Math.log2(2 + rb))) / maxDcg;
        const p = sigmoid(-(raw[start + a]! - raw[start + b]!));
        const lambda = -p * delta;
        const h = Math.max(p * (1 - p) * delta, 1e-16);
        grad[start + a] = grad[start + a]! + lambda;
        grad[start + b] = grad[start + b]! - lambda;
        hess[start + a] = hess[start + a]! + h;
        hess[start + b] = hess[start + b]! + h;
      }
    }
    // Rows of a group with no informative pair keep a tiny hessian so leaf values stay finite.
    for (let a = 0; a < m; a++) if (hess[start + a] === 0) hess[start + a] = 1e-16;
  }

  validationLoss(y: Float64Array, raw: Float64Array, groups: Int32Array | null): number {
    if (!groups) throw new DataError('ranking validation needs group sizes', { hint: 'pass valid_groups with valid data' });
    return 1 - meanNdcg(y, raw, groups, this.k);
  }

  transform(raw: number): number {
    return raw;
  }
}

/** Mean NDCG@k over groups (k 0 = the whole group); a group with no relevant row counts as 1. */
export function meanNdcg(y: Float64Array, raw: Float64Array, groups: Int32Array, k: number): number {
  let s = 0;
  let start = 0;
  for (let gi = 0; gi < groups.length; gi++) {
    const m = groups[gi]!;
    const kk = k > 0 ? Math.min(k, m) : m;
    const ideal = idealDcg(y, start, m, kk);
    if (ideal <= 0) s += 1;
    else {
      const order = rankOrder(raw, start, m);
      let dcg = 0;
      for (let r = 0; r < kk; r++) dcg += (2 ** y[start + order[r]!]! - 1) / Math.log2(2 + r);
      s += dcg / ideal;
    }
    start += m;
  }
  return groups.length > 0 ? s / groups.length : 1;
}

function idealDcg(y: Float64Array, start: number, m: number, k: number): number {
  const ys = Array.from(y.subarray(start, start + m)).sort((a, b) => b - a);
  let d = 0;
  for (let r = 0; r < k; r++) d += (2 ** ys[r]! - 1) / Math.log2(2 + r);
  return d;
}

/** Positions 0…m−1 of a group by descending score; ties keep row order, so ranks are deterministic. */
function rankOrder(raw: Float64Array, start: number, m: number): number[] {
  return Array.from({ length: m }, (_, i) => i).sort((a, b) => raw[start + b]! - raw[start + a]! || a - b);
}

function median(v: Float64Array): number {
  if (v.length === 0) return 0;
  v.sort();
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

export function makeLoss(name: GbdtLossName, groups: Int32Array | null, ndcgK: number): GbdtLoss {
  switch (name) {
    case 'binary':
      return new BinaryLogLoss();
    case 'l2':
      return new L2Loss();
    case 'l1':
      return new L1Loss();
    case 'lambdarank':
      if (!groups) throw new DataError('the lambdarank loss needs group sizes', { hint: 'pass groups: the sizes of consecutive row groups (candidates of one query)' });
      return new LambdaRankLoss(groups, ndcgK);
  }
}
