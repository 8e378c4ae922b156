import { describe, expect, it } from 'vitest';
import { OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';
import { buildHashedKeyIndex, findRows, hashedLookupIndex, keyBytesOf, murmur3, type HashedKeyIndex, type KeyBytes } from '../../../src/artifacts/onnx/ops/hashed_lookup.js';
import { attr } from '../../../src/artifacts/onnx/attributes.js';
import { i64, runModel, str } from './ort_helpers.js';

const indexOf = (keys: (string | bigint)[], type: 'STRING' | 'INT64', batch = 3): Promise<HashedKeyIndex> => {
  // Several batches, as export streams them from Parquet row groups.
  const batches = (): KeyBytes[] => Array.from({ length: Math.ceil(keys.length / batch) }, (_, b) => keyBytesOf(keys.slice(b * batch, (b + 1) * batch), type));
  return buildHashedKeyIndex(type, keys.length, batches);
};

describe('murmur3', () => {
  it('matches onnxruntime’s com.microsoft.MurmurHash3 on strings and INT64s', async () => {
    const words = ['', 'a', 'ab', 'abc', 'abcd', 'hello', 'ümlaut', 'customer-000123', '007'];
    const ints = [0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 123456789012345n];
    const g = new OnnxGraphBuilder();
    g.setOpset('com.microsoft', 1);
    const s = g.addInput('s', 'STRING', [words.length]);
    const n = g.addInput('n', 'INT64', [ints.length]);
    g.addOutput('hs', 'UINT32', [words.length], { from: g.op('MurmurHash3', [s], { seed: attr.int(99), positive: attr.int(1) }, { domain: 'com.microsoft' }) });
    g.addOutput('hn', 'UINT32', [ints.length], { from: g.op('MurmurHash3', [n], { seed: attr.int(7), positive: attr.int(1) }, { domain: 'com.microsoft' }) });
    const out = await runModel(g, { s: str(words, [words.length]), n: i64(ints, [ints.length]) });
    const enc = new TextEncoder();
    expect(Array.from(out.hs!.data as Uint32Array)).toEqual(words.map((w) => murmur3(enc.encode(w), 0, enc.encode(w).length, 99)));
    expect(Array.from(out.hn!.data as Uint32Array)).toEqual(ints.map((v) => murmur3(new Uint8Array(BigInt64Array.of(v).buffer), 0, 8, 7)));
    expect(murmur3(enc.encode('hello'), 0, 5, 0)).toBe(613153351); // the reference implementation's value
  });
});

describe('hashedLookupIndex', () => {
  it('string keys → row, unknown → default, equal to the JS lookup and to a Map', async () => {
    const vocab = ['007', '7', '', 'ümlaut', 'a b', ...Array.from({ length: 300 }, (_, i) => `c${i}`)];
    const index = await indexOf(vocab, 'STRING', 7);
    expect(index.buckets[index.buckets.length - 1]).toBe(vocab.length);
    expect(new Set(index.rows).size).toBe(vocab.length);
    const g = new OnnxGraphBuilder();
    const keys = g.addInput('k', 'STRING', ['batch', 1]);
    g.addOutput('index', 'INT64', ['batch', 1], { from: hashedLookupIndex(g, keys, index, vocab.length, 'entity.lookup') });
    const query = ['7', '007', 'nope', '', 'ümlaut', '0007', 'a b', 'A B', 'c0', 'c299', 'c300'];
    const out = await runModel(g, { k: str(query, [query.length, 1]) });
    const map = new Map(vocab.map((k, i) => [k, i]));
    expect(Array.from(out.index!.data as BigInt64Array, Number)).toEqual(query.map((q) => map.get(q) ?? vocab.length));
    expect(Array.from(findRows(index, keyBytesOf(query, 'STRING')))).toEqual(query.map((q) => map.get(q) ?? -1));
  });

  it('int64 keys of any shape (exact comparison), including a one-key vocabulary', async () => {
    const vocab = [42n, -1n, 0n, 2n ** 53n + 1n, -(2n ** 63n) + 1n, 2n ** 63n - 1n, ...Array.from({ length: 100 }, (_, i) => BigInt(1000 + i))];
    for (const v of [vocab, [5n]]) {
      const index = await indexOf(v, 'INT64');
      const g = new OnnxGraphBuilder();
      const keys = g.addInput('k', 'INT64', ['batch', 'seq', 1]);
      g.addOutput('index', 'INT64', ['batch', 'seq', 1], { from: hashedLookupIndex(g, keys, index, 0, 'l') });
      const query = [2n ** 53n + 1n, 2n ** 53n, 42n, 43n, -1n, 5n, 1099n, -(2n ** 63n)];
      const out = await runModel(g, { k: i64(query, [2, 4, 1]) });
      const map = new Map(v.map((k, i) => [k, BigInt(i)]));
      expect(out.index!.dims).toEqual([2, 4, 1]);
      expect(Array.from(out.index!.data as BigInt64Array)).toEqual(query.map((q) => map.get(q) ?? 0n));
    }
  });

  it('refuses duplicate keys, a wrong count and an empty vocabulary', async () => {
    await expect(indexOf(['a', 'b', 'a'], 'STRING')).rejects.toThrow(/duplicate key at rows 0 and 2/);
    await expect(indexOf([3n, 3n], 'INT64')).rejects.toThrow(/duplicate key/);
    await expect(buildHashedKeyIndex('STRING', 3, () => [keyBytesOf(['a'], 'STRING')])).rejects.toThrow(/1 keys read, 3 rows announced/);
    await expect(buildHashedKeyIndex('STRING', 0, () => [])).rejects.toThrow(/vocabulary is empty/);
  });
});
