/**
 * The baseline's training sample: exactly `max` distinct rows, ascending, seeded, roughly uniform; and
 * the inputs it fits on keep each sampled row's aggregates aligned with its example.
 */
import { describe, expect, it } from 'vitest';
import { baselineInputs, baselineRows } from '../../src/train/baseline_model.js';
import type { TrainingTables } from '../../src/train/examples.js';

describe('baselineRows', () => {
  it('keeps every row at or under the cap', () => {
    expect(baselineRows(1000, 1000, 0)).toBeNull();
    expect(baselineRows(10, 250_000, 0)).toBeNull();
  });

  it('above the cap: exactly max distinct rows, ascending, the same for a seed and different for another', () => {
    const a = baselineRows(100_000, 5000, 7)!;
    expect(a).toHaveLength(5000);
    expect(new Set(a).size).toBe(5000);
    for (let i = 1; i < a.length; i++) expect(a[i]!).toBeGreaterThan(a[i - 1]!);
    expect(a[a.length - 1]!).toBeLessThan(100_000);
    expect(Array.from(baselineRows(100_000, 5000, 7)!)).toEqual(Array.from(a));
    expect(Array.from(baselineRows(100_000, 5000, 8)!)).not.toEqual(Array.from(a));
  });

  it('is uniform over the rows: each tenth of the rows gets about a tenth of the sample', () => {
    const a = baselineRows(100_000, 20_000, 1)!;
    const bins = new Array<number>(10).fill(0);
    for (const r of a) bins[Math.floor(r / 10_000)]!++;
    // 2,000 expected per bin; the binomial sd is ~42, so ±250 cannot fail by chance.
    for (const b of bins) expect(Math.abs(b - 2000)).toBeLessThan(250);
  });
});

describe('baselineInputs', () => {
  it('samples training rows with their aggregates; validation and test stay whole', () => {
    const n = 50;
    const k = 2;
    const ex = (m: number, off: number) => ({
      nodes: Int32Array.from({ length: m }, (_, i) => off + i),
      anchors: Float64Array.from({ length: m }, (_, i) => 1000 + off + i),
      labels: Float32Array.from({ length: m }, (_, i) => (off + i) % 2),
    });
    const agg = (m: number, off: number) => Float32Array.from({ length: m * k }, (_, j) => (off + Math.floor(j / k)) * 10 + (j % k));
    const tables: TrainingTables = {
      train: ex(n, 0),
      val: ex(5, 100),
      test: ex(6, 200),
      baseline: { names: ['a', 'b'], train: agg(n, 0), val: agg(5, 100), test: agg(6, 200) },
    };
    const x = baselineInputs(tables, 20, 3);
    expect(x.train.nodes).toHaveLength(20);
    for (let i = 0; i < 20; i++) {
      const node = x.train.nodes[i]!;
      expect(x.train.anchors[i]).toBe(1000 + node);
      expect(x.train.labels[i]).toBe(node % 2);
      expect([x.trainAgg[i * k], x.trainAgg[i * k + 1]]).toEqual([node * 10, node * 10 + 1]);
    }
    expect(x.val).toBe(tables.val);
    expect(x.testAgg).toBe(tables.baseline!.test);
    expect(baselineInputs(tables, 50, 3).train).toBe(tables.train);
  });
});
