import { describe, expect, it } from 'vitest';
import { embeddingLookup, fallbackRow, keyedEmbedding, lookupIndex, OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';
import { expectClose, i64, openSession, randomFloats, runModel, str } from './ort_helpers.js';

describe('lookupIndex (ai.onnx.ml LabelEncoder)', () => {
  // LabelEncoder's keys_*/values_*/default_int64 form exists from ai.onnx.ml 2; onnxruntime 1.30
  // implements string→int64 and int64→int64 for every opset from 2 to 4 (checked here).
  for (const mlOpset of [2, 3, 4]) {
    it(`string keys → index, unknown → default (ai.onnx.ml ${mlOpset})`, async () => {
      const g = new OnnxGraphBuilder({ mlOpset });
      const keys = g.addInput('transactions.customer_id', 'STRING', ['batch', 1]);
      const vocab = ['007', '7', '', 'ümlaut', 'a b'];
      g.addOutput('index', 'INT64', ['batch', 1], { from: lookupIndex(g, keys, vocab, 5) });
      const query = ['7', '007', 'nope', '', 'ümlaut', '0007', 'a b', 'A B'];
      const out = await runModel(g, { 'transactions.customer_id': str(query, [query.length, 1]) });
      const map = new Map(vocab.map((k, i) => [k, BigInt(i)]));
      expect(out.index!.dims).toEqual([query.length, 1]);
      expect(Array.from(out.index!.data as BigInt64Array)).toEqual(query.map((q) => map.get(q) ?? 5n));
    });

    it(`int64 keys → index, unknown → default (ai.onnx.ml ${mlOpset})`, async () => {
      const g = new OnnxGraphBuilder({ mlOpset });
      const keys = g.addInput('k', 'INT64', ['batch', 'seq', 1]);
      const vocab = [42n, -1n, 0n, 2n ** 53n + 1n, -(2n ** 63n) + 1n, 2n ** 63n - 1n];
      g.addOutput('index', 'INT64', ['batch', 'seq', 1], { from: lookupIndex(g, keys, BigInt64Array.from(vocab), 0) });
      const query = [2n ** 53n + 1n, 2n ** 53n, 42n, 43n, -1n, 2n ** 63n - 1n, -(2n ** 63n), -(2n ** 63n) + 1n];
      const out = await runModel(g, { k: i64(query, [2, 4, 1]) });
      const map = new Map(vocab.map((k, i) => [k, BigInt(i)]));
      expect(Array.from(out.index!.data as BigInt64Array)).toEqual(query.map((q) => map.get(q) ?? 0n));
    });
  }

  it('handles an empty batch', async () => {
    const g = new OnnxGraphBuilder();
    const keys = g.addInput('k', 'STRING', ['batch']);
    g.addOutput('index', 'INT64', ['batch'], { from: lookupIndex(g, keys, ['a'], 1) });
    const out = await runModel(g, { k: str([], [0]) });
    expect(out.index!.dims).toEqual([0]);
  });

  it('rejects ai.onnx.ml 1, duplicates, an empty vocabulary and mismatched key types', () => {
    expect(() => {
      const g = new OnnxGraphBuilder({ mlOpset: 1 });
      lookupIndex(g, g.addInput('k', 'STRING', [1]), ['a'], 1);
    }).toThrow(/needs ai.onnx.ml opset >= 2/);
    const g = new OnnxGraphBuilder();
    const s = g.addInput('s', 'STRING', [1]);
    const n = g.addInput('n', 'INT64', [1]);
    expect(() => lookupIndex(g, s, ['a', 'b', 'a'], 3)).toThrow(/duplicate key in the vocabulary at rows 0 and 2/);
    expect(() => lookupIndex(g, n, [5n, 5n], 2)).toThrow(/duplicate key/);
    expect(() => lookupIndex(g, s, [], 0)).toThrow(/vocabulary is empty/);
    expect(() => lookupIndex(g, n, ['a'], 1)).toThrow(/keys "n" are INT64 but the vocabulary holds STRING keys/);
    expect(() => lookupIndex(g, s, ['a'], -1)).toThrow(/defaultIndex must be a non-negative integer/);
  });
});

describe('embeddingLookup / keyedEmbedding', () => {
  const rows = 6;
  const dim = 4;
  const table = randomFloats(rows * dim, 21);
  const row = (t: Float32Array, r: number) => Array.from(t.subarray(r * dim, (r + 1) * dim));

  it('gathers rows for an index tensor of any shape', async () => {
    const g = new OnnxGraphBuilder();
    const idx = g.addInput('idx', 'INT64', ['batch', 'seq']);
    g.addOutput('emb', 'FLOAT', ['batch', 'seq', dim], { from: embeddingLookup(g, idx, { data: table, rows, dim }) });
    const out = await runModel(g, { idx: i64([5n, 0n, 2n, 2n, 1n, 3n], [2, 3]) });
    expect(out.emb!.dims).toEqual([2, 3, dim]);
    expect(Array.from(out.emb!.data as Float32Array)).toEqual([5, 0, 2, 2, 1, 3].flatMap((r) => row(table, r)));
  });

  for (const fallback of ['zeros', 'mean', 'explicit'] as const) {
    it(`key → embedding with fallback=${fallback}, batch 1 equals batch N`, async () => {
      const g = new OnnxGraphBuilder();
      const keys = g.addInput('transactions.customer_id', 'INT64', ['batch', 1]);
      const vocab = [100n, 200n, 300n, 400n, 500n, 600n];
      const fb = fallback === 'explicit' ? Float32Array.of(9, 8, 7, 6) : fallback;
      const emb = keyedEmbedding(g, keys, { vocab, table: { data: table, rows, dim, name: 'customers' }, fallback: fb });
      g.addOutput('emb', 'FLOAT', ['batch', 1, dim], { from: emb });
      const expectedFallback =
        fallback === 'zeros'
          ? [0, 0, 0, 0]
          : fallback === 'mean'
            ? Array.from({ length: dim }, (_, j) => Math.fround(Array.from({ length: rows }, (_, r) => table[r * dim + j]!).reduce((a, b) => a + b, 0) / rows))
            : [9, 8, 7, 6];
      expect(Array.from(fallbackRow({ data: table, rows, dim }, fb))).toEqual(expectedFallback);
      const query = [300n, 999n, 100n, -5n];
      const session = await openSession(g.toBytes());
      try {
        const out = await session.run({ 'transactions.customer_id': i64(query, [4, 1]) });
        expect(out.emb!.dims).toEqual([4, 1, dim]);
        const expected = [...row(table, 2), ...expectedFallback, ...row(table, 0), ...expectedFallback];
        expectClose(out.emb!.data as Float32Array, expected, 0);
        for (let b = 0; b < query.length; b++) {
          const one = await session.run({ 'transactions.customer_id': i64([query[b]!], [1, 1]) });
          expect(Array.from(one.emb!.data as Float32Array)).toEqual(Array.from((out.emb!.data as Float32Array).subarray(b * dim, (b + 1) * dim)));
        }
      } finally {
        await session.release();
      }
    });
  }

  it('refuses a table whose rows do not match the vocabulary', () => {
    const g = new OnnxGraphBuilder();
    const keys = g.addInput('k', 'STRING', ['batch']);
    expect(() => keyedEmbedding(g, keys, { vocab: ['a'], table: { data: table, rows, dim }, fallback: 'zeros' })).toThrow(/1 keys but 6 table rows/);
    expect(() => embeddingLookup(g, keys, { data: table, rows: 5, dim })).toThrow(/expected rows × dim = 5 × 4/);
  });
});
