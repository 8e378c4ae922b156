/**
 * Which trained row student a distill run keeps and exports: the full student or one of its input
 * ablations. The variant best on validation wins when it is the full student; an ablation replaces the
 * full student only when it is better beyond noise — the 95% paired bootstrap interval of its lift over
 * the full student on the validation examples (task/intervals.ts) lies above 0 — because the full student
 * is the model the user configured, and a few hundred validation positives move AUROC by ±0.01 between
 * equally good models. An ablation reads fewer inputs, so keeping it costs nothing at serving time.
 */
import { judgeLift, type Interval } from '../task/intervals.js';

export const STUDENT_VARIANTS = ['student', 'features_only', 'embedding_only', 'rti_only'] as const;
export type StudentVariant = (typeof STUDENT_VARIANTS)[number];
export type AblationVariant = Exclude<StudentVariant, 'student'>;

export interface StudentChoice {
  chosen: StudentVariant;
  /** the validation scores (and interval) that decided it, for metrics.json and the report */
  reason: string;
  /** the best ablation's validation lift over the full student, 95% paired bootstrap (null: not computed or undefined) */
  val_lift: Interval;
}

/**
 * `scores`: each variant's validation score on the selection metric `metric` (higher is better; NaN when
 * undefined). `liftOverFull(v)`: the 95% interval of ablation v's validation lift over the full student.
 * Variants in STUDENT_VARIANTS order, the first of equal scores kept.
 */
export function chooseStudent(scores: Record<StudentVariant, number>, metric: string, liftOverFull: (v: AblationVariant) => Interval): StudentChoice {
  let best: StudentVariant = 'student';
  for (const v of STUDENT_VARIANTS.slice(1)) if (Number.isFinite(scores[v]) && !(scores[v] <= scores[best])) best = v;
  const fmt = (s: number): string => Math.abs(s).toFixed(4);
  const full = `the full student's ${fmt(scores.student)}`;
  if (best === 'student') {
    const runnerUp = STUDENT_VARIANTS.slice(1).reduce((a, b) => (scores[b] > scores[a] ? b : a));
    return { chosen: 'student', reason: `val ${metric} ${fmt(scores.student)}, no ablation better (best: ${runnerUp} ${fmt(scores[runnerUp])})`, val_lift: null };
  }
  const lift = liftOverFull(best);
  const range = lift ? `[${lift[0].toFixed(4)}, ${lift[1].toFixed(4)}]` : 'undefined';
  if (judgeLift(lift) === 'better') {
    return { chosen: best, reason: `val ${metric} ${fmt(scores[best])} against ${full}, lift 95% interval ${range} above 0: the ablation is kept and exported`, val_lift: lift };
  }
  return { chosen: 'student', reason: `${best} scored val ${metric} ${fmt(scores[best])} against ${full}, but its lift's 95% interval ${range} holds 0: the full student is kept`, val_lift: lift };
}
