import { ArtifactError, formatValue } from '../../../core/errors.js';
import { attr, type AttributeValue } from '../attributes.js';
import { ML_DOMAIN, type OnnxGraphBuilder } from '../onnx_graph_builder.js';

/** Keys of a lookup table: strings (STRING input) or int64s (INT64 input). Position = row index. */
export type Vocabulary = readonly string[] | readonly bigint[] | BigInt64Array;

/**
 * Maps raw keys to row indices with `ai.onnx.ml` LabelEncoder: `index = position of key in vocab`,
 * or `defaultIndex` for a key not in `vocab` (never an error).
 *
 * - `keys`: STRING tensor when `vocab` is a string array, INT64 tensor when it holds bigints; any shape
 *   (e.g. `[batch, 1]` for `transactions.customer_id`, `[batch, seq, 1]` for an RTI key column).
 * - returns INT64 of the same shape.
 * - ONNX: one `LabelEncoder` (ai.onnx.ml ≥ 2) with `keys_strings` | `keys_int64s`,
 *   `values_int64s = [0, 1, …, n−1]`, `default_int64 = defaultIndex`. String keys compare as exact
 *   UTF-8 bytes: `"007"` and `"7"` are different keys, which is what zero-padded codes need.
 * - TF.js/JS: `index = vocabMap.get(key) ?? defaultIndex` (a `Map` from key to position).
 *
 * `vocab` must be non-empty and free of duplicates (a duplicate would make the index ambiguous).
 */
export function lookupIndex(g: OnnxGraphBuilder, keys: string, vocab: Vocabulary, defaultIndex: number | bigint, name = 'lookup'): string {
  const ml = g.opsetVersion(ML_DOMAIN) ?? 0;
  if (ml < 2) throw new Error(`${name}: LabelEncoder with keys_*/values_* needs ai.onnx.ml opset >= 2 (got ${ml})`);
  if (vocab.length === 0) throw new ArtifactError(`${name}: the vocabulary is empty`, { hint: 'an embedding table needs at least one key' });
  if (typeof defaultIndex === 'number' ? !Number.isSafeInteger(defaultIndex) || defaultIndex < 0 : defaultIndex < 0n) {
    throw new RangeError(`${name}: defaultIndex must be a non-negative integer (got ${defaultIndex})`);
  }
  const stringKeys = typeof vocab[0] === 'string';
  const keyType = g.elemTypeOf(keys);
  const expected = stringKeys ? 'STRING' : 'INT64';
  if (keyType !== undefined && keyType !== expected) {
    throw new Error(`${name}: keys "${keys}" are ${keyType} but the vocabulary holds ${expected} keys`);
  }
  const seen = new Map<string | bigint, number>();
  for (let i = 0; i < vocab.length; i++) {
    const k = vocab[i]!;
    const prev = seen.get(k);
    if (prev !== undefined) {
      throw new ArtifactError(`${name}: duplicate key in the vocabulary at rows ${prev} and ${i}`, { value: typeof k === 'bigint' ? `${k}` : formatValue(k) });
    }
    seen.set(k, i);
  }
  const values = new BigInt64Array(vocab.length);
  for (let i = 0; i < vocab.length; i++) values[i] = BigInt(i);
  const attributes: Record<string, AttributeValue> = stringKeys
    ? { keys_strings: attr.strings(vocab as readonly string[]) }
    : { keys_int64s: attr.ints(BigInt64Array.from(vocab as readonly bigint[])) };
  attributes.values_int64s = attr.ints(values);
  attributes.default_int64 = attr.int(defaultIndex);
  return g.op('LabelEncoder', [keys], attributes, { domain: ML_DOMAIN, name });
}

export interface EmbeddingTable {
  /** Row-major FLOAT rows, shape [rows, dim]. */
  data: Float32Array;
  rows: number;
  dim: number;
  /** Initializer name prefix. Default `embedding`. */
  name?: string;
}

/**
 * Gathers table rows: `out[..., :] = table[index[...], :]`.
 *
 * - `index`: INT64 any shape, every value in `[0, rows)` (what `lookupIndex` produces when its
 *   `defaultIndex` is a row of this table; ORT fails the request on an index out of range).
 * - returns FLOAT `index.shape + [dim]` (e.g. `[batch, 1, dim]` for index `[batch, 1]`).
 * - ONNX: `Gather(table, index, axis = 0)`; TF.js: `tf.gather(table, index)`. Bit-identical (a copy).
 * The table is an initializer, so a large one is a candidate for external data in `toFiles`.
 */
export function embeddingLookup(g: OnnxGraphBuilder, index: string, table: EmbeddingTable): string {
  const prefix = table.name ?? 'embedding';
  if (table.data.length !== table.rows * table.dim) {
    throw new ArtifactError(`${prefix}: table has ${table.data.length} values, expected rows × dim = ${table.rows} × ${table.dim}`);
  }
  const t = g.constant(table.data, [table.rows, table.dim], { name: `${prefix}.table` });
  return g.op('Gather', [t, index], { axis: attr.int(0) }, { name: `${prefix}.gather` });
}

/** The row an unknown key gets: zeros, the mean of all rows, or an explicit vector of length `dim`. */
export type EmbeddingFallback = 'zeros' | 'mean' | Float32Array;

/**
 * Key → embedding with a defined fallback row, the export contract's entity lookup:
 * `lookupIndex(keys, vocab, defaultIndex = rows)` then `embeddingLookup` on the table with the
 * fallback appended as row `rows`. Row `i` of `table` belongs to `vocab[i]`.
 *
 * - `keys`: STRING or INT64 (as `vocab`), any shape S. Returns FLOAT `S + [dim]`.
 * - `'mean'` is the per-column mean over rows computed in float64, rounded once to float32.
 * - JS: `table[vocabMap.get(key) ?? rows]` over the extended table.
 */
export function keyedEmbedding(
  g: OnnxGraphBuilder,
  keys: string,
  spec: { vocab: Vocabulary; table: EmbeddingTable; fallback: EmbeddingFallback },
): string {
  const { vocab, table, fallback } = spec;
  const prefix = table.name ?? 'embedding';
  if (vocab.length !== table.rows) {
    throw new ArtifactError(`${prefix}: ${vocab.length} keys but ${table.rows} table rows`, { hint: 'row i of the table must belong to key i' });
  }
  if (table.data.length !== table.rows * table.dim) {
    throw new ArtifactError(`${prefix}: table has ${table.data.length} values, expected rows × dim = ${table.rows} × ${table.dim}`);
  }
  const extended = new Float32Array((table.rows + 1) * table.dim);
  extended.set(table.data);
  extended.set(fallbackRow(table, fallback), table.rows * table.dim);
  const index = lookupIndex(g, keys, vocab, table.rows, `${prefix}.lookup`);
  return embeddingLookup(g, index, { data: extended, rows: table.rows + 1, dim: table.dim, name: prefix });
}

/** The fallback vector for {@link keyedEmbedding}. */
export function fallbackRow(table: EmbeddingTable, fallback: EmbeddingFallback): Float32Array {
  if (fallback === 'zeros') return new Float32Array(table.dim);
  if (fallback === 'mean') {
    const sum = new Float64Array(table.dim);
    for (let r = 0; r < table.rows; r++) for (let j = 0; j < table.dim; j++) sum[j]! += table.data[r * table.dim + j]!;
    return Float32Array.from(sum, (s) => s / Math.max(table.rows, 1));
  }
  if (fallback.length !== table.dim) throw new ArtifactError(`fallback row has ${fallback.length} values, expected dim = ${table.dim}`);
  return fallback;
}
