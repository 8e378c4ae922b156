/**
 * The hyper-parameters of the gradient-boosted tree learner, with scikit-learn's
 * `HistGradientBoosting*` defaults where it has one (so a bench against it compares like with like).
 */
import { ConfigError } from '../../core/errors.js';

export type GbdtLossName = 'binary' | 'l2' | 'l1' | 'lambdarank';

export interface GbdtParams {
  /** binary log-loss, L2 or L1 regression, or LambdaMART-style ranking over groups. Default `binary`. */
  loss: GbdtLossName;
  /** Shrinkage applied to every leaf value. Default 0.1. */
  learning_rate: number;
  /** Upper bound on boosting rounds (trees). Default 100. */
  max_iter: number;
  /** Leaves per tree; growth is leaf-wise (best gain first), as LightGBM and scikit-learn do. Default 31. */
  max_leaf_nodes: number;
  /** Depth limit of a tree (root depth 0); null means only `max_leaf_nodes` bounds it. Default null. */
  max_depth: number | null;
  /** A split leaving fewer rows on a side is not considered. Default 20. */
  min_samples_leaf: number;
  /** A split leaving less hessian on a side is not considered. Default 1e-3. */
  min_hessian_leaf: number;
  /** L2 penalty λ on leaf values: value = −G / (H + λ). Default 0. */
  l2_regularization: number;
  /** Value bins per feature, at most 255; a 256th bin holds missing values. Default 255. */
  max_bins: number;
  /** Rows sampled to compute quantile bin edges. Default 200,000 (scikit-learn's subsample). */
  bin_sample: number;
  /** Rounds without an improvement of the validation loss larger than `tol` before stopping. Default 10. */
  early_stopping_rounds: number;
  /** The smallest improvement that counts. Default 1e-7. */
  tol: number;
  /** Histogram threads: 1 builds on the calling thread, 2 splits the features with one worker thread. Default 1. */
  threads: number;
  /** NDCG truncation for `lambdarank` gradients and its validation metric; 0 = the whole group. Default 10. */
  ndcg_k: number;
  /** Seed of the bin-edge subsample. Default 0. */
  seed: number;
}

export const DEFAULT_GBDT_PARAMS: GbdtParams = {
  loss: 'binary',
  learning_rate: 0.1,
  max_iter: 100,
  max_leaf_nodes: 31,
  max_depth: null,
  min_samples_leaf: 20,
  min_hessian_leaf: 1e-3,
  l2_regularization: 0,
  max_bins: 255,
  bin_sample: 200_000,
  early_stopping_rounds: 10,
  tol: 1e-7,
  threads: 1,
  ndcg_k: 10,
  seed: 0,
};

/** Defaults filled in and every value checked; all problems are reported at once. */
export function resolveGbdtParams(p: Partial<GbdtParams> = {}): GbdtParams {
  const r: GbdtParams = { ...DEFAULT_GBDT_PARAMS, ...p };
  const problems: { path: string; message: string; hint?: string }[] = [];
  const check = (ok: boolean, key: keyof GbdtParams, what: string): void => {
    if (!ok) problems.push({ path: `gbdt.${key}`, message: `${what} (got ${JSON.stringify(r[key])})` });
  };
  check(['binary', 'l2', 'l1', 'lambdarank'].includes(r.loss), 'loss', 'must be binary, l2, l1 or lambdarank');
  check(r.learning_rate > 0 && r.learning_rate <= 1, 'learning_rate', 'must be in (0, 1]');
  check(Number.isInteger(r.max_iter) && r.max_iter >= 1, 'max_iter', 'must be an integer ≥ 1');
  check(Number.isInteger(r.max_leaf_nodes) && r.max_leaf_nodes >= 2, 'max_leaf_nodes', 'must be an integer ≥ 2');
  check(r.max_depth === null || (Number.isInteger(r.max_depth) && r.max_depth >= 1), 'max_depth', 'must be null or an integer ≥ 1');
  check(Number.isInteger(r.min_samples_leaf) && r.min_samples_leaf >= 1, 'min_samples_leaf', 'must be an integer ≥ 1');
  check(r.min_hessian_leaf >= 0, 'min_hessian_leaf', 'must be ≥ 0');
  check(r.l2_regularization >= 0, 'l2_regularization', 'must be ≥ 0');
  check(Number.isInteger(r.max_bins) && r.max_bins >= 2 && r.max_bins <= 255, 'max_bins', 'must be an integer in [2, 255]');
  check(Number.isInteger(r.bin_sample) && r.bin_sample >= 1, 'bin_sample', 'must be an integer ≥ 1');
  check(Number.isInteger(r.early_stopping_rounds) && r.early_stopping_rounds >= 1, 'early_stopping_rounds', 'must be an integer ≥ 1');
  check(r.tol >= 0, 'tol', 'must be ≥ 0');
  check(r.threads === 1 || r.threads === 2, 'threads', 'must be 1 or 2');
  check(Number.isInteger(r.ndcg_k) && r.ndcg_k >= 0, 'ndcg_k', 'must be an integer ≥ 0');
  if (problems.length > 0) throw new ConfigError('invalid gradient-boosted tree parameters', problems);
  return r;
}
