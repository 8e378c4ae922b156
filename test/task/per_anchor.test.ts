import { describe, expect, it } from 'vitest';
import { regressionMetrics } from '../../src/task/metrics.js';
import { metricsByAnchor } from '../../src/task/per_anchor.js';
import { FEW_CLASS_EXAMPLES, fewRowsWarning, smallDataWarnings } from '../../src/task/data_warnings.js';

describe('metricsByAnchor', () => {
  it('groups by anchor in time order, each with its own count and metrics', () => {
    const day = 86400;
    const anchors = [2 * day, day, 2 * day, day, day];
    const labels = [1, 2, 3, 4, 5];
    const preds = [1, 2, 5, 4, 8];
    const r = metricsByAnchor(anchors, labels, preds, regressionMetrics);
    expect(r.map((g) => [g.anchor, g.n])).toEqual([
      ['1970-01-02T00:00:00Z', 3],
      ['1970-01-03T00:00:00Z', 2],
    ]);
    expect(r[0]!.metrics.mae).toBe(1);
    expect(r[1]!.metrics.mae).toBe(1);
  });
});

describe('small-data warnings name the numbers', () => {
  const balanced = Float32Array.from({ length: 400 }, (_, i) => i % 2);
  it('fewer than 1,000 training examples', () => {
    const w = smallDataWarnings('dnf', 'binary', { train: 243, val: balanced, test: balanced });
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/only 243 training examples \(fewer than 1,000\).*train_anchors: all/);
  });

  it('a class with fewer than 50 examples in val or test', () => {
    const rare = Float32Array.from({ length: 300 }, (_, i) => (i < FEW_CLASS_EXAMPLES - 29 ? 1 : 0));
    const w = smallDataWarnings('top3', 'binary', { train: 5000, val: rare, test: balanced });
    expect(w).toEqual([expect.stringMatching(/the val set has 21 positive and 279 negative examples \(fewer than 50 in a class\)/)]);
    expect(smallDataWarnings('sales', 'regression', { train: 5000, val: rare, test: rare })).toEqual([]);
  });

  it('distill rows below the student\'s parameters', () => {
    expect(fewRowsWarning('fraud', 100, 4321)).toMatch(/100 training rows for a student of 4,321 parameters/);
    expect(fewRowsWarning('fraud', 10_000, 4321)).toBeNull();
  });
});
