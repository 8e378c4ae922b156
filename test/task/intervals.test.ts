import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { binaryMetrics, weightedBinaryMetrics } from '../../src/task/metrics.js';
import { judgeLift, liftInterval, metricIntervals, percentile, resampleCount } from '../../src/task/intervals.js';

function sample(n: number, signal: number, seed: number): { labels: Float32Array; probs: Float32Array } {
  const rng = new Rng(seed);
  const labels = new Float32Array(n);
  const probs = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    labels[i] = rng.next() < 0.3 ? 1 : 0;
    probs[i] = 1 / (1 + Math.exp(-(signal * (labels[i]! - 0.5) + rng.normal())));
  }
  return { labels, probs };
}

describe('bootstrap intervals', () => {
  it('hold the point estimate, every binary metric gets one, n and k do not', () => {
    const { labels, probs } = sample(1000, 2, 1);
    const point = binaryMetrics(labels, probs);
    const iv = metricIntervals('binary', labels, probs, { seed: 7, resamples: 300 });
    expect(Object.keys(iv)).not.toContain('n');
    for (const k of ['auroc', 'ap', 'accuracy', 'f1', 'positive_rate']) {
      const [lo, hi] = iv[k]!;
      expect(lo).toBeLessThanOrEqual((point as unknown as Record<string, number>)[k]!);
      expect(hi).toBeGreaterThanOrEqual((point as unknown as Record<string, number>)[k]!);
    }
  });

  it('shrink as the sample grows (about 1/sqrt(n)), and the same seed gives the same interval', () => {
    const width = (n: number): number => {
      const { labels, probs } = sample(n, 2, 3);
      const [lo, hi] = metricIntervals('binary', labels, probs, { seed: 1, resamples: 300 }).auroc!;
      return hi - lo;
    };
    const small = width(200);
    const large = width(3000);
    expect(large).toBeLessThan(small / 2.5);
    const { labels, probs } = sample(300, 1, 4);
    expect(metricIntervals('binary', labels, probs, { seed: 9 })).toEqual(metricIntervals('binary', labels, probs, { seed: 9 }));
  });

  it('an undefined metric (one class) has no interval; an empty set gives null everywhere', () => {
    const labels = new Float32Array(50).fill(0);
    const probs = Float32Array.from({ length: 50 }, (_, i) => i / 50);
    expect(metricIntervals('binary', labels, probs, { seed: 1, resamples: 50 }).auroc).toBeNull();
    expect(metricIntervals('regression', new Float32Array(0), new Float32Array(0), { seed: 1 })).toEqual({ mae: null, rmse: null, r2: null });
  });

  it('a paired difference: a clearly better model is "better", a model against itself is a tie at 0', () => {
    const { labels, probs } = sample(3000, 3, 5);
    const weak = sample(3000, 0.3, 5).probs;
    const AUROC = { name: 'auroc', higherIsBetter: true };
    const lift = liftInterval('binary', AUROC, labels, probs, weak, { seed: 2, resamples: 200 });
    expect(judgeLift(lift)).toBe('better');
    expect(liftInterval('binary', AUROC, labels, probs, probs, { seed: 2, resamples: 50 })).toEqual([0, 0]);
    // MAE: lower is better, so a lift is baseline − model
    const y = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const good = Float32Array.from(y, (v) => v + 0.1);
    const bad = Float32Array.from(y, (v) => v + 2);
    expect(judgeLift(liftInterval('regression', { name: 'mae', higherIsBetter: false }, y, good, bad, { seed: 1, resamples: 50 }))).toBe('better');
    expect(judgeLift([-0.01, 0.02])).toBe('tie');
    expect(judgeLift([-0.05, -0.01])).toBe('worse');
    expect(judgeLift(null)).toBe('undefined');
  });

  it('percentile interpolates; the resample count shrinks for large sets but stays at least 200', () => {
    expect(percentile([0, 10], 0.25)).toBe(2.5);
    expect(percentile([1, 2, 3, 4, 5], 0.5)).toBe(3);
    expect(resampleCount(1000)).toBe(1000);
    expect(resampleCount(10_000)).toBe(500);
    expect(resampleCount(100_000)).toBe(200);
    expect(resampleCount(100_000, 50)).toBe(50);
  });
});

describe('weightedBinaryMetrics: binaryMetrics of the expanded sample, without a sort', () => {
  for (const seed of [1, 2, 3]) {
    it(`agrees with binaryMetrics (ties included, seed ${seed})`, () => {
      const rng = new Rng(seed);
      const n = 300;
      // probabilities on a coarse grid: many ties, some at exactly 0.5
      const rows = Array.from({ length: n }, () => ({ y: rng.next() < 0.25 ? 1 : 0, p: Math.round(rng.next() * 20) / 20 }));
      rows.sort((a, b) => b.p - a.p);
      const labels = Float32Array.from(rows, (r) => r.y);
      const probs = Float32Array.from(rows, (r) => r.p);
      const groups: number[] = [0];
      for (let i = 1; i < n; i++) if (probs[i] !== probs[i - 1]) groups.push(i);
      groups.push(n);
      const weights = Uint32Array.from({ length: n }, () => rng.int(3));
      const el: number[] = [];
      const ep: number[] = [];
      weights.forEach((w, i) => {
        for (let c = 0; c < w; c++) {
          el.push(labels[i]!);
          ep.push(probs[i]!);
        }
      });
      expect(weightedBinaryMetrics(labels, probs, Uint32Array.from(groups), weights)).toEqual(binaryMetrics(el, ep));
    });
  }
});
