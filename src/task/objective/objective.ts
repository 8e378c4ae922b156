/**
 * The objective seam: everything that differs between task kinds — how labels become training targets,
 * the losses that fit, the output transform, the metrics and the main metric — behind one interface, as
 * TF-GNN's `Task` does. Trainer, baseline, distillation, report and export ask the objective; a new task
 * kind (ranking is next) is a new file here and one entry in `OBJECTIVES`, not a branch in every stage.
 * See docs/architecture.md.
 */
import type * as tf from '@tensorflow/tfjs';
import type { calibration, Metrics } from '../metrics.js';
import { binaryObjective } from './binary.js';
import { regressionObjective } from './regression.js';

export const OBJECTIVE_KINDS = ['binary', 'regression'] as const;
export type ObjectiveKind = (typeof OBJECTIVE_KINDS)[number];
export type LossName = 'bce' | 'l1' | 'mse';

/**
 * How model outputs map to predictions. Stored with every trained model (`spec.output`), so a later
 * stage re-applies exactly the training run's label scaling.
 */
export interface OutputSpec {
  kind: ObjectiveKind;
  /** regression: label mean and standard deviation on the training split (binary: 0 and 1) */
  label_mean: number;
  label_std: number;
}

/** The output transform as an operation, so TF.js, plain JS and the ONNX graph implement the same one. */
export type OutputTransform = 'sigmoid' | 'affine';

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

const OBJECTIVES: Record<ObjectiveKind, Objective> = {
  binary: binaryObjective,
  regression: regressionObjective,
};

export function objectiveFor(kind: ObjectiveKind): Objective {
  return OBJECTIVES[kind];
}

/**
 * The student's main metric relative to the teacher's, oriented so 1 means "as good" and less is worse
 * (AUROC: student / teacher; MAE: teacher / student).
 */
export function teacherRatio(objective: Objective, student: Metrics, teacher: Metrics): number {
  const s = objective.score(student);
  const t = objective.score(teacher);
  return objective.mainMetric.higherIsBetter ? s / t : t / s;
}

/** A raw output → prediction, in plain JS. */
export function predictValue(out: OutputSpec, raw: number): number {
  return objectiveFor(out.kind).transform === 'sigmoid' ? 1 / (1 + Math.exp(-raw)) : raw * out.label_std + out.label_mean;
}

/** Raw outputs → predictions, in place-free plain JS. */
export function predictValues(out: OutputSpec, raw: ArrayLike<number>): Float32Array {
  const p = new Float32Array(raw.length);
  for (let i = 0; i < raw.length; i++) p[i] = predictValue(out, raw[i]!);
  return p;
}

/** Labels as training targets. */
export function targetValues(out: OutputSpec, labels: ArrayLike<number>): Float32Array {
  const objective = objectiveFor(out.kind);
  const y = new Float32Array(labels.length);
  for (let i = 0; i < labels.length; i++) y[i] = objective.target(labels[i]!, out);
  return y;
}
