/**
 * Model choice on small validation sets: the moving average that judges epochs, the "auto" rule that
 * decides val anchors and smoothing, and the batch that gives a tiny training set enough steps.
 */
import { describe, expect, it } from 'vitest';
import { windowMean } from '../../src/core/early_stopping.js';
import { effectiveBatchSize } from '../../src/train/trainer.js';
import { isSmallValidation, planValidation, SMALL_VALIDATION_ANCHORS, SMALL_VALIDATION_SMOOTHING } from '../../src/train/validation.js';

describe('windowMean: the centered moving average an epoch is judged by', () => {
  const noisy = [0.6, 0.8, 0.62, 0.7, 0.72, 0.71, 0.69];
  it('window 1 is the score itself', () => {
    noisy.forEach((s, c) => expect(windowMean(noisy, c, 0)).toBe(s));
  });

  it('window 3 averages the neighbours, partial at both ends', () => {
    expect(windowMean(noisy, 0, 1)).toBeCloseTo((0.6 + 0.8) / 2, 10);
    expect(windowMean(noisy, 1, 1)).toBeCloseTo((0.6 + 0.8 + 0.62) / 3, 10);
    expect(windowMean(noisy, 6, 1)).toBeCloseTo((0.71 + 0.69) / 2, 10);
  });

  it('a single lucky epoch no longer wins: the steady stretch does', () => {
    const raw = noisy.map((_, c) => windowMean(noisy, c, 0));
    const smooth = noisy.map((_, c) => windowMean(noisy, c, 1));
    expect(raw.indexOf(Math.max(...raw))).toBe(1);
    expect(smooth.indexOf(Math.max(...smooth))).toBe(4);
  });
});

describe('planValidation: "auto" on the validation set at the val anchor', () => {
  const size = (examples: number, rarer: number | null) => async () => ({ examples, rarer_class: rarer });

  it('a small set (the issue: ~150 examples, ~25 non-churners) gets more anchors and smoothing', async () => {
    const p = await planValidation({ val_anchors: 'auto', smoothing: 'auto' }, true, size(156, 25));
    expect(p).toMatchObject({ val_anchors: SMALL_VALIDATION_ANCHORS, smoothing: SMALL_VALIDATION_SMOOTHING, small: true });
    expect(p.reason).toMatch(/156 validation examples.*25 in the rarer class: small/);
  });

  it('many examples but a rare class is still small; a large balanced set is not', async () => {
    expect(isSmallValidation({ examples: 50_000, rarer_class: 120 })).toBe(true);
    expect(isSmallValidation({ examples: 5_000, rarer_class: 900 })).toBe(false);
    expect(isSmallValidation({ examples: 800, rarer_class: null })).toBe(true);
    const p = await planValidation({ val_anchors: 'auto', smoothing: 'auto' }, true, size(5_000, 900));
    expect(p).toMatchObject({ val_anchors: 1, smoothing: 1, small: false });
  });

  it('explicit settings win and need no measurement', async () => {
    let called = false;
    const p = await planValidation({ val_anchors: 2, smoothing: 5 }, true, async () => {
      called = true;
      return { examples: 10, rarer_class: 1 };
    });
    expect(called).toBe(false);
    expect(p).toMatchObject({ val_anchors: 2, smoothing: 5, small: null, reason: 'as configured' });
  });

  it('fact-row tasks keep one boundary and are not measured', async () => {
    const p = await planValidation({ val_anchors: 'auto', smoothing: 'auto' }, false, async () => {
      throw new Error('not measured for fact tasks');
    });
    expect(p).toMatchObject({ val_anchors: 1, smoothing: 1 });
  });
});

describe('effectiveBatchSize: at least min_steps_per_epoch steps, never below 32 rows', () => {
  it('~1,000 examples with batch 512 train with batches of 63 (16 steps), not 2 steps', () => {
    expect(effectiveBatchSize(1000, 512, 16)).toBe(63);
    expect(Math.ceil(1000 / effectiveBatchSize(1000, 512, 16))).toBeGreaterThanOrEqual(16);
  });
  it('large training sets keep batch_size; tiny ones stop at 32; a configured batch under 32 stays', () => {
    expect(effectiveBatchSize(100_000, 512, 16)).toBe(512);
    expect(effectiveBatchSize(200, 512, 16)).toBe(32);
    expect(effectiveBatchSize(200, 16, 16)).toBe(16);
  });
});
