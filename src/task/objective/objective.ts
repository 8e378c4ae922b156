/**
 * The objective seam: everything that differs between task kinds — how labels become training targets,
 * the losses that fit, the output transform, the metrics and the main metric — behind one interface, as
 * TF-GNN's `Task` does. Trainer, baseline, distillation, report and export ask the objective; a new task
 * kind (ranking was the third) is a new file here and one entry in `OBJECTIVES`, not a branch in every stage.
 * See docs/architecture.md.
 */
import type { Metrics } from '../metrics.js';
import { binaryObjective } from './binary.js';
import { rankingObjective } from './ranking.js';
import { regressionObjective } from './regression.js';
import type { Objective, ObjectiveKind, OutputSpec } from './types.js';

export { OBJECTIVE_KINDS } from './types.js';
export type { Curves, LossName, Objective, ObjectiveKind, OutputSpec, OutputTransform } from './types.js';

const OBJECTIVES: Record<ObjectiveKind, Objective> = {
  binary: binaryObjective,
  regression: regressionObjective,
  ranking: rankingObjective,
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
  const t = objectiveFor(out.kind).transform;
  return t === 'sigmoid' ? 1 / (1 + Math.exp(-raw)) : t === 'score' ? raw : raw * out.label_std + out.label_mean;
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
