import { describe, expect, it } from 'vitest';
import { EarlyStopping, windowMean, type EarlyStoppingOptions, type EarlyStoppingStep } from '../../src/core/early_stopping.js';

/** Feeds every value (stopping where the rule says), then finishes; returns every answer in order. */
function run(opts: EarlyStoppingOptions, values: number[]): { steps: EarlyStoppingStep[]; fed: number } {
  const es = new EarlyStopping(opts);
  const steps: EarlyStoppingStep[] = [];
  let fed = 0;
  for (const v of values) {
    fed++;
    const s = es.update(v);
    if (s) steps.push(s);
    if (s?.should_stop) break;
  }
  steps.push(...es.finish());
  return { steps, fed };
}

describe('EarlyStopping', () => {
  it('keeps the best epoch and stops after `patience` epochs without a gain (max)', () => {
    const { steps, fed } = run({ monitor: 'auroc', patience: 2 }, [0.5, 0.7, 0.6, 0.65, 0.9]);
    expect(fed).toBe(4);
    expect(steps.map((s) => s.improved)).toEqual([true, true, false, false]);
    expect(steps.at(-1)).toMatchObject({ epoch: 4, should_stop: true, best_epoch: 2, best_value: 0.7 });
  });

  it('mode min: lower is better', () => {
    const { steps } = run({ monitor: 'mae', mode: 'min', patience: 3 }, [3, 2, 2.5, 1, 4]);
    expect(steps.map((s) => s.improved)).toEqual([true, true, false, true, false]);
    expect(steps.at(-1)).toMatchObject({ best_epoch: 4, best_value: 1, should_stop: false });
  });

  it('an absolute min_delta: a gain of exactly min_delta is not an improvement', () => {
    const { steps } = run({ monitor: 'x', patience: 5, min_delta: 0.25 }, [1, 1.25, 1.5, 2]);
    expect(steps.map((s) => s.improved)).toEqual([true, false, true, true]);
    expect(steps.at(-1)!.best_epoch).toBe(4);
  });

  it('a relative min_delta resets patience only on a gain of that fraction, while the best follows any gain (the plateau fix)', () => {
    // +0.0002 per epoch on 0.8: three epochs stay under 1e-3 relative (0.8008), yet each is a new best.
    const values = [0.8, 0.8002, 0.8004, 0.8006, 0.8008];
    const { steps, fed } = run({ monitor: 'auroc', patience: 3, min_delta: 1e-3, min_delta_mode: 'relative', best_delta: 1e-6 }, values);
    expect(fed).toBe(4);
    expect(steps.map((s) => s.improved)).toEqual([true, true, true, true]);
    expect(steps.at(-1)).toMatchObject({ epoch: 4, should_stop: true, best_epoch: 4, best_value: 0.8006 });
  });

  it('the patience reference is the last value that made the gain, not the best', () => {
    // 0.8 → 0.8009 (> 0.8 + 0.0008: progress, ref 0.8009) → 0.8012 (< 0.8009 + 0.0008: stale 1, best) → 0.8018 (progress)
    const { steps } = run({ monitor: 'auroc', patience: 2, min_delta: 1e-3, min_delta_mode: 'relative' }, [0.8, 0.8009, 0.8012, 0.8018, 0.7, 0.7]);
    expect(steps.map((s) => s.should_stop)).toEqual([false, false, false, false, false, true]);
    expect(steps.at(-1)!.best_epoch).toBe(4);
  });

  it('the classic rule and the plateau rule agree when min_delta is absolute and equals best_delta', () => {
    const values = [0.1, 0.3, 0.3000005, 0.2, 0.31, 0.31, 0.3, 0.29];
    const a = run({ monitor: 'x', patience: 3, min_delta: 1e-6 }, values);
    const b = run({ monitor: 'x', patience: 3, min_delta: 1e-6, best_delta: 1e-6 }, values);
    expect(a).toEqual(b);
    // 0.3000005 is within 1e-6 of 0.3: no gain; 0.31 resets; three epochs without a gain end it.
    expect(a.fed).toBe(8);
    expect(a.steps.at(-1)).toMatchObject({ best_epoch: 5, should_stop: true });
  });

  it('window smoothing judges epoch e by the centered mean and answers `lag` epochs late', () => {
    const es = new EarlyStopping({ monitor: 'auroc', patience: 10, smoothing: { kind: 'window', size: 3 } });
    expect(es.lag).toBe(1);
    expect(es.update(0.5)).toBeNull();
    // epoch 1: mean(0.5, 0.9) — partial at the start
    expect(es.update(0.9)).toMatchObject({ epoch: 1, value: 0.7, improved: true });
    // epoch 2: mean(0.5, 0.9, 0.4) = 0.6
    const s2 = es.update(0.4)!;
    expect(s2.epoch).toBe(2);
    expect(s2.value).toBeCloseTo(0.6, 12);
    expect(s2.improved).toBe(false);
    // training ends: epoch 3 judged on mean(0.9, 0.4)
    const rest = es.finish();
    expect(rest).toHaveLength(1);
    expect(rest[0]).toMatchObject({ epoch: 3, value: 0.65, improved: false, best_epoch: 1 });
    expect(es.finish()).toEqual([]);
  });

  it('window smoothing: an epoch judged after the stop can still become the best', () => {
    const es = new EarlyStopping({ monitor: 'x', patience: 1, smoothing: { kind: 'window', size: 3 } });
    es.update(1);
    es.update(1); // epoch 1: 1
    const s = es.update(0.4)!; // epoch 2: mean(1, 1, 0.4) = 0.8 → stale 1 → stop
    expect(s.should_stop).toBe(true);
    // epoch 3 on its partial window mean(1, 0.4) = 0.7: not better. A rising tail would be:
    const es2 = new EarlyStopping({ monitor: 'x', patience: 1, smoothing: { kind: 'window', size: 3 } });
    es2.update(1);
    es2.update(0);
    expect(es2.update(0.1)!.should_stop).toBe(true); // epoch 2: 0.3667 < 0.5
    expect(es2.finish()[0]).toMatchObject({ epoch: 3, improved: false });
  });

  it('EMA smoothing judges each epoch at once on the running average', () => {
    const { steps } = run({ monitor: 'x', patience: 5, smoothing: { kind: 'ema', alpha: 0.5 } }, [1, 0, 1]);
    expect(steps.map((s) => s.value)).toEqual([1, 0.5, 0.75]);
    expect(steps.map((s) => s.epoch)).toEqual([1, 2, 3]);
    expect(steps.at(-1)!.best_epoch).toBe(1);
  });

  it('a NaN score is never an improvement and counts against patience', () => {
    const { steps, fed } = run({ monitor: 'auroc', patience: 2 }, [NaN, NaN, 0.5]);
    expect(fed).toBe(2);
    expect(steps.at(-1)).toMatchObject({ best_epoch: 0, best_value: -Infinity, should_stop: true });
  });

  it('rejects options that cannot work, naming them', () => {
    expect(() => new EarlyStopping({ monitor: 'x', patience: 0 })).toThrow(/patience.*got 0/);
    expect(() => new EarlyStopping({ monitor: 'x', patience: 1, min_delta: -1 })).toThrow(/min_delta.*got -1/);
    expect(() => new EarlyStopping({ monitor: 'x', patience: 1, smoothing: { kind: 'window', size: 2 } })).toThrow(/odd.*got 2/);
    expect(() => new EarlyStopping({ monitor: 'x', patience: 1, smoothing: { kind: 'ema', alpha: 0 } })).toThrow(/alpha.*got 0/);
  });

  it('windowMean clips the window to the epochs that exist', () => {
    expect(windowMean([1, 2, 3, 4], 0, 1)).toBe(1.5);
    expect(windowMean([1, 2, 3, 4], 2, 1)).toBe(3);
    expect(windowMean([1, 2, 3, 4], 3, 2)).toBe(3);
    expect(windowMean([5], 0, 0)).toBe(5);
  });
});
