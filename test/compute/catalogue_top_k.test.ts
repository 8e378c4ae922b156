/**
 * The onnxruntime catalogue top-k against a brute-force full sort in JS: scores Q · Vᵀ plus the sparse
 * additions, ties broken by the lower index (what the JS selection and the trained recommender's
 * evaluation do), (0, 0) padding of the additions changing nothing, k equal to the catalogue, bad shapes
 * refused.
 */
import { describe, expect, it } from 'vitest';
import { CatalogueTopK } from '../../src/compute/catalogue_top_k.js';
import { Rng } from '../../src/core/rng.js';

/** Top k of each row by a full sort: score desc, then index asc. */
function bruteTopK(scores: Float32Array, rows: number, n: number, k: number): { ids: number[]; scores: number[] } {
  const ids: number[] = [];
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    const row = scores.subarray(r * n, (r + 1) * n);
    const order = Array.from(row.keys()).sort((a, b) => row[b]! - row[a]! || a - b).slice(0, k);
    ids.push(...order);
    out.push(...order.map((i) => row[i]!));
  }
  return { ids, scores: out };
}

/** Q · Vᵀ in float64, rounded once, plus the additions (as onnxruntime adds them, in float32). */
function dense(q: Float32Array, v: Float32Array, rows: number, n: number, dim: number, index: Int32Array, value: Float32Array, extras: number): Float32Array {
  const s = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < n; i++) {
      let acc = 0;
      for (let c = 0; c < dim; c++) acc += q[r * dim + c]! * v[i * dim + c]!;
      s[r * n + i] = acc;
    }
    for (let j = 0; j < extras; j++) s[r * n + index[r * extras + j]!]! += value[r * extras + j]!;
  }
  return s;
}

describe('CatalogueTopK', () => {
  it.each([
    { rows: 9, items: 300, dim: 7, k: 12, extras: 4 },
    { rows: 3, items: 12, dim: 5, k: 12, extras: 1 },
  ])('$rows rows × $items items (dim $dim), top $k with $extras additions per row: the full sort\'s ids and scores', async ({ rows, items, dim, k, extras }) => {
    const rng = new Rng(5);
    const v = Float32Array.from({ length: items * dim }, () => rng.normal());
    const q = Float32Array.from({ length: rows * dim }, () => rng.normal());
    const index = new Int32Array(rows * extras);
    const value = new Float32Array(rows * extras);
    for (let r = 0; r < rows; r++) {
      // The last slot of each row stays (0, 0): padding.
      for (let j = 0; j < extras - 1; j++) {
        index[r * extras + j] = rng.int(items);
        value[r * extras + j] = rng.normal() * 3;
      }
    }
    const kernel = await CatalogueTopK.create(v, dim, k);
    try {
      const got = await kernel.run(q, rows, index, value, extras);
      const want = bruteTopK(dense(q, v, rows, items, dim, index, value, extras), rows, items, k);
      expect(Array.from(got.ids)).toEqual(want.ids);
      got.scores.forEach((x, i) => expect(Math.abs(x - want.scores[i]!)).toBeLessThan(1e-4));
    } finally {
      await kernel.release();
    }
  });

  it('equal scores: the lower index first', async () => {
    // Items 0…9 with the same vector, 10…19 with half of it: ties everywhere.
    const v = Float32Array.from({ length: 20 }, (_, i) => (i < 10 ? 1 : 0.5));
    const kernel = await CatalogueTopK.create(v, 1, 12);
    try {
      const got = await kernel.run(Float32Array.of(2), 1, Int32Array.of(15), Float32Array.of(1), 1);
      // item 15 scores 1 + 1 = 2 like items 0…9 but has the higher index
      expect(Array.from(got.ids)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 10]);
    } finally {
      await kernel.release();
    }
  });

  it('refuses vectors that are not rows of dim, and k beyond the catalogue', async () => {
    await expect(CatalogueTopK.create(new Float32Array(10), 3, 2)).rejects.toThrow(/not rows of 3/);
    await expect(CatalogueTopK.create(new Float32Array(6), 3, 3)).rejects.toThrow(/k = 3 with 2 items/);
  });
});
