/**
 * Ranking: the top k items per entity (`LIST_DISTINCT(t.fk, a, b, unit) RANK TOP k`), MAP@k first.
 *
 * Loss: sampled softmax (multi-positive cross-entropy over the example's label items against a shared set
 * of candidate items: every label item of the batch, the items of the users' own histories, and uniform
 * negatives; the whole catalogue when it is small). Chosen over BPR because
 * - MAP@k and NDCG@k reward the top of a list; softmax cross-entropy bounds those listwise metrics
 *   (Bruch et al., SIGIR 2019), BPR's pairwise AUC weighs a swap at rank 900 like one at rank 1;
 * - one [batch × candidates] matmul scores every negative for every user, the "few fat ops" the wasm
 *   backend needs (docs/architecture.md, Compute), where BPR gets one negative per positive per step;
 * - the history items among the candidates are the hard negatives a repeat-heavy catalogue needs.
 * Metrics are computed from top-k lists (`rankingMetrics` in task/metrics.ts), not per value.
 */
import { tf } from '../../core/tf.js';
import type { RankingMetrics } from '../metrics.js';
import type { Objective } from './types.js';

export const rankingObjective: Objective = {
  kind: 'ranking',
  description: 'ranking',
  probabilistic: false,
  losses: ['sampled_softmax'],
  mainMetric: { name: 'map_at_k', higherIsBetter: true },
  transform: 'score',
  outputName: 'scores',
  outputMeaning: 'the top-k item keys and their scores',
  softTargets: false,
  degenerate(y) {
    for (let i = 0; i < y.length; i++) if (y[i]! > 0) return null;
    return 'no training example has an item in its window, so there is nothing to rank';
  },
  fitOutput: () => ({ kind: 'ranking', label_mean: 0, label_std: 1 }),
  target: (label) => label,
  loss(name, raw, target) {
    if (name !== 'sampled_softmax') throw new Error(`ranking has no loss ${name}`);
    return sampledSoftmax(raw.reshape([1, -1]) as tf.Tensor2D, target.reshape([1, -1]) as tf.Tensor2D);
  },
  metrics() {
    throw new Error('ranking metrics come from top-k lists: use rankingMetrics (task/metrics.ts)');
  },
  score: (m) => (m as RankingMetrics).map_at_k,
  curves: () => null,
};

/**
 * Multi-positive sampled softmax: per row, logsumexp over all candidates minus the mean logit of the
 * row's positives, averaged over rows with a positive.
 *   logits [B, M]; positives [B, M] 0/1
 */
export function sampledSoftmax(logits: tf.Tensor2D, positives: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => {
    const count = positives.sum(1);
    const has = count.greater(0).toFloat();
    const meanPos = logits.mul(positives).sum(1).div(count.maximum(1));
    const perRow = tf.logSumExp(logits, 1).sub(meanPos).mul(has);
    return perRow.sum().div(has.sum().maximum(1)) as tf.Scalar;
  });
}
