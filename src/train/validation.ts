/**
 * How a run validates (issue 13, small and noisy data): how many validation anchors and how much
 * smoothing of the per-epoch validation score. "auto" looks at the validation set at the newest val
 * anchor: AUROC on ~150 examples with ~25 in the rarer class has a standard error near 0.05, as large as
 * the differences between epochs and between model variants, so best-epoch choice and early stopping
 * follow noise. Then validation uses more anchors (more examples, fresh labels per anchor) and judges an
 * epoch by the mean of its neighbours' scores too.
 */
import type { ValidationSize } from './examples.js';

/** Below either, a validation set is small. */
export const SMALL_VALIDATION = { examples: 1000, rarer_class: 200 } as const;
/** What "auto" uses for a small validation set. */
export const SMALL_VALIDATION_ANCHORS = 4;
export const SMALL_VALIDATION_SMOOTHING = 3;

export interface ValidationPlan {
  /** validation anchors used */
  val_anchors: number;
  /** odd moving-average window over epochs for best-epoch choice and early stopping */
  smoothing: number;
  /** the validation set at the newest val anchor, when "auto" had to look (null: not measured) */
  at_val_anchor: ValidationSize | null;
  small: boolean | null;
  /** one line saying why, for the log and metrics.json */
  reason: string;
}

export function isSmallValidation(s: ValidationSize): boolean {
  return s.examples < SMALL_VALIDATION.examples || (s.rarer_class !== null && s.rarer_class < SMALL_VALIDATION.rarer_class);
}

/**
 * Resolves the configured `split.val_anchors` and `model.val_smoothing`. `size` is called only when a
 * setting is "auto" and the task can have several anchors (entity tasks).
 */
export async function planValidation(
  configured: { val_anchors: number | 'auto'; smoothing: number | 'auto' },
  entityTask: boolean,
  size: () => Promise<ValidationSize>,
): Promise<ValidationPlan> {
  const needs = configured.smoothing === 'auto' || (entityTask && configured.val_anchors === 'auto');
  const measured = needs ? (entityTask ? await size() : null) : null;
  // Fact-row tasks validate on every row of the val window: typically thousands, and no anchors to add.
  const small = measured ? isSmallValidation(measured) : null;
  const anchors = !entityTask ? 1 : configured.val_anchors === 'auto' ? (small ? SMALL_VALIDATION_ANCHORS : 1) : configured.val_anchors;
  const smoothing = configured.smoothing === 'auto' ? (small ? SMALL_VALIDATION_SMOOTHING : 1) : configured.smoothing;
  const why = measured
    ? `${measured.examples} validation examples at the val anchor${measured.rarer_class !== null ? `, ${measured.rarer_class} in the rarer class` : ''}: ${small ? 'small' : 'not small'} (small: < ${SMALL_VALIDATION.examples} examples or < ${SMALL_VALIDATION.rarer_class} in the rarer class)`
    : 'as configured';
  return { val_anchors: anchors, smoothing, at_val_anchor: measured, small, reason: why };
}
