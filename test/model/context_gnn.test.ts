/**
 * The recommender's scoring pieces: `topK` against a full sort (ties, NaN, k beyond n), and the catalogue
 * path (`rankCatalogue`: fused matmul, sparse pair scores, top-k) against the training path
 * (`RankingHead.scores`, dense) on random weights — the two must rank identically, or the batch top-k
 * file would not be what training measured.
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { Rng } from '../../src/core/rng.js';
import { ParamStore } from '../../src/model/params.js';
import { CatalogueTopK } from '../../src/compute/catalogue_top_k.js';
import { pairCells, PAIR_FEATURES, RankingHead, rankCatalogue, rankCatalogueOnnx, topK, type Histories, type RankingSpec } from '../../src/model/context_gnn.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

/** Indices of the top k by a full sort (score desc, index asc; NaN last), −1 padded. */
function sortedTopK(row: ArrayLike<number>, k: number): number[] {
  const idx = Array.from({ length: row.length }, (_, i) => i);
  const key = (i: number) => (Number.isNaN(row[i]!) ? -Infinity : row[i]!);
  idx.sort((a, b) => key(b) - key(a) || a - b);
  return Array.from({ length: k }, (_, j) => (j < idx.length ? idx[j]! : -1));
}

describe('topK', () => {
  it.each([
    { rows: 3, n: 50, k: 5 },
    { rows: 2, n: 7, k: 7 },
    { rows: 1, n: 3, k: 6 },
  ])('rows $rows, n $n, k $k: the same ids as a full sort, with ties (lower index first) and NaN (last)', ({ rows, n, k }) => {
    const rng = new Rng(3);
    const scores = Float32Array.from({ length: rows * n }, () => Math.round(rng.next() * 10) / 2);
    scores[1] = Number.NaN;
    const ids = new Int32Array(rows * k);
    const out = new Float32Array(rows * k);
    topK(scores, rows, n, k, ids, out);
    for (let r = 0; r < rows; r++) {
      const row = scores.subarray(r * n, (r + 1) * n);
      expect(Array.from(ids.subarray(r * k, (r + 1) * k))).toEqual(sortedTopK(row, k));
      for (let j = 0; j < k; j++) if (ids[r * k + j]! >= 0) expect(out[r * k + j]).toBe(row[ids[r * k + j]!]);
    }
  });
});

describe('rankCatalogue ranks as the training scores do', () => {
  it.each([
    { path: 'tfjs', N: 23, k: 6 },
    { path: 'onnxruntime', N: 23, k: 6 },
    { path: 'onnxruntime', N: 5, k: 6 },
  ])('$path, random head, 37 users × $N items, histories with repeats: identical top-$k and scores within 1e-4', async ({ path, N, k }) => {
    const C = 8;
    const rs: RankingSpec = { item_table: 'items', item_count: N, fact_table: 'f', user_edge: '', item_fk_edge: '', item_edge: '', history: 50, window: 7 * 86400, top_k: 6, pair_hidden: 5, pair_features: PAIR_FEATURES };
    const params = new ParamStore(11);
    const head = new RankingHead(params, rs, C);
    // Non-trivial gate and popularity weight, so both paths must apply them the same way.
    head.gatew.assign(tf.randomNormal([C, 1], 0, 1, 'float32', 5));
    head.popWeight.assign(tf.tensor1d([0.7]));
    const rng = new Rng(9);
    const n = 37;
    const users = Float32Array.from({ length: n * C }, () => rng.normal());
    const items = Float32Array.from({ length: N * C }, () => rng.normal());
    const pop = Float32Array.from({ length: N }, () => rng.next() * 3);
    const offsets = new Int32Array(n + 1);
    const hItems: number[] = [];
    const feats: number[] = [];
    for (let u = 0; u < n; u++) {
      offsets[u] = hItems.length;
      const seen = new Set<number>();
      for (let j = 0; j < rng.int(6); j++) {
        const i = rng.int(N);
        if (seen.has(i)) continue;
        seen.add(i);
        hItems.push(i);
        for (let f = 0; f < PAIR_FEATURES; f++) feats.push(rng.normal());
      }
    }
    offsets[n] = hItems.length;
    const h: Histories = { offsets, items: Int32Array.from(hItems), features: Float32Array.from(feats) };
    let fast: { ids: Int32Array; scores: Float32Array };
    if (path === 'tfjs') fast = rankCatalogue(head, users, items, pop, h, k, 10);
    else {
      const catalogue = new Float32Array(N * (C + 1));
      for (let i = 0; i < N; i++) {
        catalogue.set(items.subarray(i * C, (i + 1) * C), i * (C + 1));
        catalogue[i * (C + 1) + C] = pop[i]!;
      }
      const kernel = await CatalogueTopK.create(catalogue, C + 1, Math.min(k, N));
      try {
        fast = await rankCatalogueOnnx(head, kernel, users, h, k, 10);
      } finally {
        await kernel.release();
      }
    }
    const dense = tf.tidy(() =>
      head.scores(tf.tensor2d(users, [n, C]), tf.tensor2d(items, [N, C]), pop, pairCells(h, Int32Array.from({ length: n }, (_, i) => i), N, (i) => i)),
    );
    const d = dense.dataSync() as Float32Array;
    dense.dispose();
    for (let u = 0; u < n; u++) {
      const row = d.subarray(u * N, (u + 1) * N);
      expect(Array.from(fast.ids.subarray(u * k, (u + 1) * k))).toEqual(sortedTopK(row, k));
      for (let j = 0; j < Math.min(k, N); j++) expect(Math.abs(fast.scores[u * k + j]! - row[fast.ids[u * k + j]!]!)).toBeLessThan(1e-4);
    }
    params.dispose();
  });
});
