/** Losses on raw model outputs, shared by the deep model, the baseline MLP and the student. */
import { tf } from '../../core/tf.js';
import { assertUnreachable } from '../../core/errors.js';
import type { LossName } from './types.js';

/** Mean binary cross-entropy from logits, in the numerically stable form max(x,0) − x·y + log(1 + e^−|x|). */
export function bceWithLogits(logits: tf.Tensor1D, y: tf.Tensor1D): tf.Scalar {
  return tf.tidy(() => tf.mean(tf.relu(logits).sub(logits.mul(y)).add(tf.log1p(tf.exp(tf.neg(tf.abs(logits)))))) as tf.Scalar);
}

export function lossOf(name: LossName, raw: tf.Tensor1D, target: tf.Tensor1D): tf.Scalar {
  switch (name) {
    case 'bce':
      return bceWithLogits(raw, target);
    case 'l1':
      return tf.tidy(() => tf.mean(tf.abs(raw.sub(target))) as tf.Scalar);
    case 'mse':
      return tf.tidy(() => tf.mean(tf.square(raw.sub(target))) as tf.Scalar);
    case 'sampled_softmax':
      // Needs a [batch × candidates] score matrix: the ranking objective computes it (objective/ranking.ts).
      throw new Error('sampled_softmax scores candidate lists; use rankingObjective.loss');
    default:
      return assertUnreachable(name);
  }
}
