/** Binary classification: logits trained with cross-entropy, predictions are probabilities, AUROC first. */
import { binaryMetrics, calibration, prCurve, rocCurve, type BinaryMetrics } from '../metrics.js';
import { lossOf } from './losses.js';
import type { Objective } from './types.js';

export const binaryObjective: Objective = {
  kind: 'binary',
  description: 'binary classification',
  probabilistic: true,
  losses: ['bce'],
  mainMetric: { name: 'auroc', higherIsBetter: true },
  transform: 'sigmoid',
  outputName: 'probability',
  outputMeaning: 'the probability of the positive class',
  softTargets: true,
  degenerate(y) {
    let pos = 0;
    for (let i = 0; i < y.length; i++) pos += y[i]!;
    return pos === 0 || pos === y.length ? `every training label is ${pos === 0 ? 0 : 1}, so there is nothing to learn` : null;
  },
  fitOutput: () => ({ kind: 'binary', label_mean: 0, label_std: 1 }),
  target: (label) => label,
  loss: lossOf,
  metrics: binaryMetrics,
  score: (m) => (m as BinaryMetrics).auroc,
  curves: (labels, p) => ({ roc: rocCurve(labels, p), pr: prCurve(labels, p), calibration: calibration(labels, p) }),
};
