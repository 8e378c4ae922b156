/**
 * Regression: the model learns standardised labels (mean 0, std 1 on the training split) so one learning
 * rate fits any label scale; predictions are mapped back. L1 by default (robust to the heavy tails of
 * sales-like targets), MAE first.
 */
import { regressionMetrics, type RegressionMetrics } from '../metrics.js';
import { lossOf } from './losses.js';
import type { Objective } from './types.js';

export const regressionObjective: Objective = {
  kind: 'regression',
  description: 'regression',
  probabilistic: false,
  losses: ['l1', 'mse'],
  mainMetric: { name: 'mae', higherIsBetter: false },
  transform: 'affine',
  outputName: 'prediction',
  outputMeaning: 'the predicted value',
  softTargets: false,
  // A constant label is learnable (the model outputs it); nothing is refused here.
  degenerate: () => null,
  fitOutput(y) {
    const n = y.length || 1;
    let mean = 0;
    for (let i = 0; i < y.length; i++) mean += y[i]!;
    mean /= n;
    let v = 0;
    for (let i = 0; i < y.length; i++) v += (y[i]! - mean) ** 2;
    return { kind: 'regression', label_mean: mean, label_std: Math.sqrt(v / n) || 1 };
  },
  target: (label, out) => (label - out.label_mean) / out.label_std,
  loss: lossOf,
  metrics: regressionMetrics,
  score: (m) => -(m as RegressionMetrics).mae,
  curves: () => null,
};
