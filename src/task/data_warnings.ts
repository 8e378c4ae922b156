/**
 * Warnings about evaluation data too small to trust, with the numbers: a user who trains on 243 examples
 * or picks a model on 21 validation positives should hear it from the tool, not find it in a review.
 */
import type { ObjectiveKind } from './objective/objective.js';

/** Fewer training examples than this: a deep model is likely data-starved (and its no-graph baseline wins). */
export const FEW_TRAINING_EXAMPLES = 1000;
/** Fewer examples of a class than this in val or test: AUROC's standard error is near 0.05 or more. */
export const FEW_CLASS_EXAMPLES = 50;

export interface SplitCounts {
  /** training examples (left out: not judged) */
  train?: number;
  /** labels of the validation and test examples (binary tasks count their classes; left out: not judged) */
  val?: ArrayLike<number>;
  test?: ArrayLike<number>;
}

/** Warnings naming the counts and the setting that adds more; empty when the data is large enough. */
export function smallDataWarnings(task: string, kind: ObjectiveKind, counts: SplitCounts, opts: { perRow?: boolean } = {}): string[] {
  const out: string[] = [];
  if (counts.train !== undefined && counts.train < FEW_TRAINING_EXAMPLES) {
    out.push(
      `task ${task}: only ${counts.train.toLocaleString('en-US')} training examples (fewer than ${FEW_TRAINING_EXAMPLES.toLocaleString('en-US')}); ` +
        `add anchors (tasks.${task}.split.train_anchors: all) or data`,
    );
  }
  if (kind !== 'binary') return out;
  for (const [split, labels] of [['val', counts.val], ['test', counts.test]] as const) {
    if (!labels) continue;
    let pos = 0;
    for (let i = 0; i < labels.length; i++) if (labels[i]! > 0.5) pos++;
    const neg = labels.length - pos;
    const rare = Math.min(pos, neg);
    if (rare < FEW_CLASS_EXAMPLES) {
      out.push(
        `task ${task}: the ${split} set has ${pos.toLocaleString('en-US')} positive and ${neg.toLocaleString('en-US')} negative examples (fewer than ${FEW_CLASS_EXAMPLES} in a class): its metrics are noisy; ` +
          (opts.perRow ? `widen the ${split} period (tasks.${task}.split.${split}_timestamp earlier)` : `use more ${split} anchors (tasks.${task}.split.${split}_anchors)`) + ' — see the interval',
      );
    }
  }
  return out;
}

/** The distilled student has more parameters than training rows: it can memorise them. Null when it has fewer. */
export function fewRowsWarning(task: string, rows: number, parameters: number): string | null {
  if (rows >= parameters) return null;
  return (
    `distill ${task}: ${rows.toLocaleString('en-US')} training rows for a student of ${parameters.toLocaleString('en-US')} parameters (fewer rows than parameters); ` +
    'widen distillation.train_window or shrink the student (distillation.hidden)'
  );
}
