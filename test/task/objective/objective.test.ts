import { tf } from '../../../src/core/tf.js';
import { describe, expect, it } from 'vitest';
import { objectiveFor, predictValue, predictValues, targetValues, teacherRatio, type ObjectiveKind } from '../../../src/task/objective/objective.js';

describe('objectives', () => {
  it('binary: AUROC first, bce only, sigmoid output, soft targets, degenerate labels named', () => {
    const o = objectiveFor('binary');
    expect(o.mainMetric).toEqual({ name: 'auroc', higherIsBetter: true });
    expect(o.losses).toEqual(['bce']);
    expect(o.outputName).toBe('probability');
    expect(o.softTargets).toBe(true);
    const out = o.fitOutput(Float32Array.of(0, 1, 1));
    expect(out).toEqual({ kind: 'binary', label_mean: 0, label_std: 1 });
    expect(predictValue(out, 0)).toBe(0.5);
    expect(predictValue(out, 2)).toBeCloseTo(1 / (1 + Math.exp(-2)), 7);
    expect(o.target(1, out)).toBe(1);
    expect(o.degenerate(Float32Array.of(0, 0, 0))).toMatch(/every training label is 0/);
    expect(o.degenerate(Float32Array.of(1, 1))).toMatch(/every training label is 1/);
    expect(o.degenerate(Float32Array.of(0, 1))).toBeNull();
    const m = o.metrics([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]);
    expect(o.score(m)).toBeCloseTo(0.75, 6);
    expect(o.curves([0, 1], [0.2, 0.9])?.roc.length).toBeGreaterThan(1);
  });

  it('regression: MAE first, standardised targets, affine output mapping back, no soft targets', () => {
    const o = objectiveFor('regression');
    expect(o.mainMetric).toEqual({ name: 'mae', higherIsBetter: false });
    expect(o.losses).toEqual(['l1', 'mse']);
    expect(o.softTargets).toBe(false);
    const y = Float32Array.of(2, 4, 6, 8);
    const out = o.fitOutput(y);
    expect(out.label_mean).toBe(5);
    expect(out.label_std).toBeCloseTo(Math.sqrt(5), 6);
    const t = targetValues(out, y);
    expect(Array.from(predictValues(out, t)).map((v) => Math.round(v * 1e4) / 1e4)).toEqual([2, 4, 6, 8]);
    expect(o.fitOutput(Float32Array.of(3, 3)).label_std).toBe(1);
    expect(o.curves([1], [1])).toBeNull();
    expect(o.score(o.metrics([1, 2], [1, 4]))).toBe(-1);
  });

  it('teacherRatio is 1 when equal and below 1 when the student is worse, for either direction', () => {
    const b = objectiveFor('binary');
    expect(teacherRatio(b, b.metrics([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8]), b.metrics([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8]))).toBe(1);
    const r = objectiveFor('regression');
    expect(teacherRatio(r, r.metrics([0, 0], [2, 2]), r.metrics([0, 0], [1, 1]))).toBe(0.5);
  });

  it.each(['binary', 'regression'] as ObjectiveKind[])('%s: every listed loss is finite and zero-gradient at the target', (kind) => {
    const o = objectiveFor(kind);
    for (const name of o.losses) {
      const loss = tf.tidy(() => o.loss(name, tf.tensor1d([0.5, -1]), tf.tensor1d(kind === 'binary' ? [1, 0] : [0.5, -1])).dataSync()[0]!);
      expect(Number.isFinite(loss)).toBe(true);
      if (kind === 'regression') expect(loss).toBe(0);
    }
  });
});
