/** The objective seam's types (see objective.ts for the registry and docs/architecture.md). */
import type * as tf from '@tensorflow/tfjs';
import type { calibration, Metrics } from '../metrics.js';

export const OBJECTIVE_KINDS = ['binary', 'regression', 'ranking'] as const;
export type ObjectiveKind = (typeof OBJECTIVE_KINDS)[number];
export type LossName = 'bce' | 'l1' | 'mse' | 'sampled_softmax';

/**
 * How model outputs map to predictions. Stored with every trained model (`spec.output`), so a later
 * stage re-applies exactly the training run's label scaling.
 */
export interface OutputSpec {
  kind: ObjectiveKind;
  /** regression: label mean and standard deviation on the training split (binary, ranking: 0 and 1) */
  label_mean: number;
  label_std: number;
}

/** The output transform as an operation, so TF.js, plain JS and the ONNX graph implement the same one. */
/** ranking: `score`, the raw item score (an order, not a probability). */
export type OutputTransform = 'sigmoid' | 'affine' | 'score';

export interface Objective {
  readonly kind: ObjectiveKind;
  /** "binary classification", "regression": for messages and the report */
  readonly description: string;
  /** predictions are probabilities: ROC, precision-recall, calibration and positive rates apply */
  readonly probabilistic: boolean;
  /** losses that fit this kind; the first is the default */
  readonly losses: readonly LossName[];
  /** the metric that picks the best epoch and the lift over the baseline */
  readonly mainMetric: { name: string; higherIsBetter: boolean };
  /** raw output → prediction: sigmoid (probability) or affine (value = raw · std + mean) */
  readonly transform: OutputTransform;
  /** name of the served output tensor */
  readonly outputName: string;
  /** what the served output means, for the model card */
  readonly outputMeaning: string;
  /**
   * Whether a teacher's predictions can serve as soft targets under the same loss (knowledge distillation):
   * a probability is a valid cross-entropy target; a regression value has no such softening.
   */
  readonly softTargets: boolean;
  /** Why these training labels leave nothing to learn (e.g. all one class), or null when they are fine. */
  degenerate(trainLabels: Float32Array): string | null;
  /** the output spec fitted on the training labels (regression standardises them) */
  fitOutput(trainLabels: Float32Array): OutputSpec;
  /** a label as the model is trained to output it */
  target(label: number, out: OutputSpec): number;
  /** the loss of raw outputs against targets (both [n]) */
  loss(name: LossName, raw: tf.Tensor1D, target: tf.Tensor1D): tf.Scalar;
  /**
   * Metrics of one prediction per example (binary, regression). Ranking examples have item lists, not
   * one value: their metrics come from `rankingMetrics` over top-k lists, and this refuses.
   */
  metrics(labels: ArrayLike<number>, predictions: ArrayLike<number>): Metrics;
  /** the main metric as a number to maximise */
  score(m: Metrics): number;
  /** curves for the report (ROC, precision-recall, calibration), or null where the kind has none */
  curves(labels: ArrayLike<number>, predictions: ArrayLike<number>): Curves | null;
}

export interface Curves {
  roc: [number, number][];
  pr: [number, number][];
  calibration: ReturnType<typeof calibration>;
}
