/**
 * Key → row lookup for vocabularies too large for a LabelEncoder (millions of entities): a bucketed
 * hash index whose arrays are ordinary numeric initializers, so they can live in ONNX external data
 * (string tensors cannot: ONNX has no external encoding for them, and a 20M-key LabelEncoder attribute is
 * ~1 GB of protobuf that protobufjs and onnxruntime both hold several times over while parsing).
 *
 * Index, for `n` keys, seeds (sA, sB) and `k` bucket bits (2^k buckets, about 1–2 keys each):
 *   hA = MurmurHash3_x86_32(key bytes, sA) mod 2^31,  hB = MurmurHash3_x86_32(key bytes, sB)
 *   bucket = hA >> (31 − k);  probe = hA · 2^32 + hB (STRING keys, a 63-bit fingerprint) | the key (INT64)
 *   entries ordered by bucket (stable in row order); `buckets[b]` = first entry of bucket b;
 *   `keys[e]` = probe of entry e; `rows[e]` = table row of entry e; `width` = the largest bucket.
 * Lookup: the `width` entries from `buckets[bucket]` on are compared with the probe; the match's row, or
 * `defaultIndex` when none matches. Key bytes are UTF-8 for strings (exactly as onnxruntime holds a
 * string tensor) and the 8 little-endian bytes of an INT64.
 *
 * ONNX: `com.microsoft.MurmurHash3` (onnxruntime's contrib op, in every onnxruntime build, Triton's
 * onnxruntime backend included) twice, then Div/Mod/Gather/Equal/ReduceMax/Where on INT64 — about 12
 * small ops per key whatever `n` is. INT64 keys are compared exactly; STRING keys by their 63-bit
 * fingerprint: two vocabulary keys never share one (the builder retries other seeds), and an unknown key
 * takes a known key's row only if their fingerprints collide, with probability n / 2^63 (2e-12 at 20M).
 */
import { ArtifactError, DataError } from '../../../core/errors.js';
import { attr } from '../attributes.js';
import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';
import { cast, int64s, unsqueeze } from './basic.js';

/** onnxruntime's contrib-op domain (MurmurHash3). */
export const MS_DOMAIN = 'com.microsoft';

/** Seed pairs tried in order until no two vocabulary keys share a fingerprint. */
const SEED_PAIRS: readonly (readonly [number, number])[] = [
  [0x2545f491, 0x9e3779b9],
  [0x61c88647, 0x7f4a7c15],
  [0x1b873593, 0x5bd1e995],
];

export type HashedKeyType = 'STRING' | 'INT64';

export interface HashedKeyIndex {
  keyType: HashedKeyType;
  /** number of keys (table rows) */
  n: number;
  /** bucket bits: 2^bits buckets */
  bits: number;
  /** the largest bucket: how many entries a lookup compares */
  width: number;
  seeds: readonly [number, number];
  /** [n] probe values (fingerprints or INT64 keys), in entry order */
  keys: BigInt64Array;
  /** [n] table row of each entry */
  rows: Int32Array;
  /** [2^bits + 1] first entry of each bucket, then n */
  buckets: Int32Array;
}

/** MurmurHash3_x86_32 of `bytes[off, off + len)`; bit-identical to onnxruntime's `MurmurHash3` (positive = 1). */
export function murmur3(bytes: Uint8Array, off: number, len: number, seed: number): number {
  let h = seed >>> 0;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const end4 = off + (len & ~3);
  let i = off;
  for (; i < end4; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  // The 1–3 trailing bytes, little-endian (the reference's fall-through switch).
  const tail = len & 3;
  if (tail > 0) {
    let k = bytes[i]!;
    if (tail > 1) k ^= bytes[i + 1]! << 8;
    if (tail > 2) k ^= bytes[i + 2]! << 16;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A batch of keys as bytes: UTF-8 strings (`values` with `offsets`, Arrow's Utf8 layout) or INT64s.
 * Arrow key columns come in this shape without decoding a single JS string.
 */
export type KeyBytes = { kind: 'STRING'; values: Uint8Array; offsets: Int32Array; length: number } | { kind: 'INT64'; values: BigInt64Array };

/** Keys held as JS values → {@link KeyBytes}. */
export function keyBytesOf(keys: ArrayLike<string | bigint>, keyType: HashedKeyType): KeyBytes {
  if (keyType === 'INT64') return { kind: 'INT64', values: BigInt64Array.from(Array.from(keys, (k) => BigInt(k))) };
  const enc = new TextEncoder();
  const parts = Array.from(keys, (k) => enc.encode(String(k)));
  const offsets = new Int32Array(parts.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i]! + parts[i]!.byteLength;
  const values = new Uint8Array(offsets[parts.length]!);
  parts.forEach((p, i) => values.set(p, offsets[i]!));
  return { kind: 'STRING', values, offsets, length: parts.length };
}

/**
 * Builds a {@link HashedKeyIndex} from key batches in row order. Holds 8 bytes per key while adding
 * (two 32-bit hashes, or the INT64 key) and 16 per key in the finished index: 320 MB at 20M keys.
 * `batches` may be called again (another seed pair after a fingerprint collision; almost never).
 */
export async function buildHashedKeyIndex(keyType: HashedKeyType, n: number, batches: () => AsyncIterable<KeyBytes> | Iterable<KeyBytes>, where = 'keys'): Promise<HashedKeyIndex> {
  if (n < 1) throw new ArtifactError(`${where}: the vocabulary is empty`, { hint: 'an embedding table needs at least one key' });
  if (n >= 2 ** 31 - 1) throw new ArtifactError(`${where}: ${n} keys is more than a hashed index holds (2^31 − 1)`);
  // ~1.5 keys per bucket: the largest of 2^24 buckets then holds ~10, so a lookup compares ~10 INT64s.
  const bits = Math.max(0, Math.min(31, Math.ceil(Math.log2(n / 1.5))));
  for (const seeds of SEED_PAIRS) {
    const hA = new Uint32Array(n);
    const hB = new Uint32Array(n);
    const ints = keyType === 'INT64' ? new BigInt64Array(n) : null;
    let r = 0;
    for await (const b of batches()) {
      if (b.kind !== keyType) throw new DataError(`${where}: expected ${keyType} keys, got ${b.kind}`);
      const count = b.kind === 'STRING' ? b.length : b.values.length;
      if (r + count > n) throw new DataError(`${where}: more keys than the ${n} rows announced`);
      if (b.kind === 'STRING') {
        for (let i = 0; i < count; i++, r++) {
          const o = b.offsets[i]!;
          const len = b.offsets[i + 1]! - o;
          hA[r] = murmur3(b.values, o, len, seeds[0]) & 0x7fffffff;
          hB[r] = murmur3(b.values, o, len, seeds[1]);
        }
      } else {
        const bytes = new Uint8Array(b.values.buffer, b.values.byteOffset, b.values.byteLength);
        for (let i = 0; i < count; i++, r++) {
          hA[r] = murmur3(bytes, i * 8, 8, seeds[0]) & 0x7fffffff;
          ints![r] = b.values[i]!;
        }
      }
    }
    if (r !== n) throw new DataError(`${where}: ${r} keys read, ${n} rows announced`);
    const shift = 31 - bits;
    const nb = 2 ** bits;
    const buckets = new Int32Array(nb + 1);
    for (let i = 0; i < n; i++) buckets[(hA[i]! >>> shift) + 1]!++;
    for (let b = 0; b < nb; b++) buckets[b + 1]! += buckets[b]!;
    let width = 1;
    for (let b = 0; b < nb; b++) width = Math.max(width, buckets[b + 1]! - buckets[b]!);
    const next = buckets.slice(0, nb);
    const rows = new Int32Array(n);
    const keys = new BigInt64Array(n);
    // Probes through two 32-bit words (little-endian: low word first): no BigInt arithmetic per key.
    const words = new Uint32Array(keys.buffer);
    for (let i = 0; i < n; i++) {
      const e = next[hA[i]! >>> shift]!++;
      rows[e] = i;
      if (ints) keys[e] = ints[i]!;
      else {
        words[2 * e] = hB[i]!;
        words[2 * e + 1] = hA[i]!;
      }
    }
    const dup = firstDuplicate(keys, buckets);
    if (!dup) return { keyType, n, bits, width, seeds, keys, rows, buckets };
    // INT64 probes are the keys themselves, so equal probes are a duplicate key; equal STRING fingerprints
    // are a duplicate key too unless every seed pair collides (each has a chance of ~n² / 2^64).
    if (keyType === 'INT64' || seeds === SEED_PAIRS[SEED_PAIRS.length - 1]) {
      throw new DataError(`${where}: duplicate key at rows ${rows[dup[0]]} and ${rows[dup[1]]}`, { hint: 'each entity must appear once; shards must be disjoint (re-run embed)' });
    }
  }
  throw new Error('unreachable');
}

function firstDuplicate(keys: BigInt64Array, buckets: Int32Array): [number, number] | null {
  for (let b = 0; b + 1 < buckets.length; b++) {
    for (let i = buckets[b]!; i < buckets[b + 1]!; i++) for (let j = i + 1; j < buckets[b + 1]!; j++) if (keys[i] === keys[j]) return [i, j];
  }
  return null;
}

/** The rows of `keys` in the index (−1 for a key it does not hold): the JS twin of {@link hashedLookupIndex}. */
export function findRows(index: HashedKeyIndex, keys: KeyBytes): Int32Array {
  const count = keys.kind === 'STRING' ? keys.length : keys.values.length;
  const out = new Int32Array(count).fill(-1);
  const shift = 31 - index.bits;
  const words = new Uint32Array(index.keys.buffer, index.keys.byteOffset, index.n * 2);
  for (let i = 0; i < count; i++) {
    let hA: number;
    let hB = 0;
    if (keys.kind === 'STRING') {
      const o = keys.offsets[i]!;
      const len = keys.offsets[i + 1]! - o;
      hA = murmur3(keys.values, o, len, index.seeds[0]) & 0x7fffffff;
      hB = murmur3(keys.values, o, len, index.seeds[1]);
    } else {
      hA = murmur3(new Uint8Array(keys.values.buffer, keys.values.byteOffset + i * 8, 8), 0, 8, index.seeds[0]) & 0x7fffffff;
    }
    const b = hA >>> shift;
    for (let e = index.buckets[b]!; e < index.buckets[b + 1]!; e++) {
      const hit = keys.kind === 'STRING' ? words[2 * e] === hB && words[2 * e + 1] === hA : index.keys[e] === keys.values[i];
      if (hit) {
        out[i] = index.rows[e]!;
        break;
      }
    }
  }
  return out;
}

const shared = new WeakMap<OnnxGraphBuilder, WeakMap<HashedKeyIndex, { keys: string; rows: string; buckets: string }>>();

/** The index's three arrays as initializers, added once per graph however many lookups use the index. */
function indexInitializers(g: OnnxGraphBuilder, index: HashedKeyIndex, name: string): { keys: string; rows: string; buckets: string } {
  let byIndex = shared.get(g);
  if (!byIndex) shared.set(g, (byIndex = new WeakMap()));
  let names = byIndex.get(index);
  if (!names) {
    names = {
      keys: g.constant(index.keys, [index.n], { name: `${name}.keys` }),
      rows: g.constant(index.rows, [index.n], { name: `${name}.rows` }),
      buckets: g.constant(index.buckets, [index.buckets.length], { name: `${name}.buckets` }),
    };
    byIndex.set(index, names);
  }
  return names;
}

/**
 * Maps raw keys to table rows with a {@link HashedKeyIndex}: `index = row of key`, or `defaultIndex`
 * for a key not in it (never an error). `keys`: STRING or INT64 (as the index), any shape S; returns
 * INT64 of shape S, as `lookupIndex` does. Initializers `<name>.keys` INT64 [n], `<name>.rows` INT32 [n],
 * `<name>.buckets` INT32 [2^bits + 1] (all numeric: external data may hold them).
 */
export function hashedLookupIndex(g: OnnxGraphBuilder, keys: string, index: HashedKeyIndex, defaultIndex: number | bigint, name: string): string {
  const keyType = g.elemTypeOf(keys);
  if (keyType !== undefined && keyType !== index.keyType) throw new Error(`${name}: keys "${keys}" are ${keyType} but the index holds ${index.keyType} keys`);
  if (g.opsetVersion(MS_DOMAIN) === undefined) g.setOpset(MS_DOMAIN, 1);
  const hash = (seed: number): string =>
    cast(g, g.op('MurmurHash3', [keys], { seed: attr.int(seed), positive: attr.int(1) }, { domain: MS_DOMAIN, name: `${name}.hash` }), 'INT64');
  const i64 = (v: number | bigint, n: string): string => g.constant(BigInt64Array.of(BigInt(v)), [], { name: `${name}.${n}` });
  const hA = g.op('Mod', [hash(index.seeds[0]), i64(2 ** 31, 'two_31')]);
  const probe = index.keyType === 'STRING' ? g.op('Add', [g.op('Mul', [hA, i64(2 ** 32, 'two_32')]), hash(index.seeds[1])]) : keys;
  const bucket = g.op('Div', [hA, i64(2 ** (31 - index.bits), 'bucket_div')]);
  const arrays = indexInitializers(g, index, name);
  const bucketStarts = arrays.buckets;
  const start = cast(g, g.op('Gather', [bucketStarts, bucket], { axis: attr.int(0) }), 'INT64');
  // S + [width] candidate entries, clipped to the last one (a duplicate candidate matches at most the same entry).
  const offsets = int64s(g, Array.from({ length: index.width }, (_, i) => i), `${name}.offsets`);
  const cand = g.op('Min', [g.op('Add', [unsqueeze(g, start, [-1]), offsets]), i64(index.n - 1, 'last')]);
  const probes = g.op('Gather', [arrays.keys, cand], { axis: attr.int(0) });
  const hit = g.op('Equal', [probes, unsqueeze(g, probe, [-1])]);
  const minus1 = i64(-1, 'none');
  const entry = g.op('ReduceMax', [g.op('Where', [hit, cand, minus1])], { axes: attr.ints([-1]), keepdims: attr.int(0) });
  const rowOf = arrays.rows;
  const row = cast(g, g.op('Gather', [rowOf, g.op('Max', [entry, i64(0, 'zero')])], { axis: attr.int(0) }), 'INT64');
  return g.op('Where', [g.op('Less', [entry, i64(0, 'zero_')]), i64(defaultIndex, 'default'), row], undefined, { name });
}
