/**
 * The distilled model as an ONNX graph, built op by op from the student's spec and trained weights. It
 * reads raw request fields (docs/architecture.md, "Export contract") and computes the features of
 * `model/student/spec.ts` and the network of `model/student/student.ts` — the same formulas, in float32,
 * so onnxruntime and TF.js agree to ~1e-6.
 *
 * Inputs: `anchor_time` INT64 [b, 1] (ns since the epoch); fact columns `<table>.<column>` [b, 1] (FLOAT
 * for numbers, INT64 for integer codes and keys, STRING for text codes and keys, INT64 ns for the time
 * column; an entity task has no time column, its clock features read `anchor_time`, and its own key is the
 * embedding key); RTI columns `<hop path>:<column>` [b, seq, 1] with a variable `seq` (0 allowed). Padded RTI
 * slots carry INT64 min in the time column and are masked. Output: `probability` FLOAT [b, 1] (binary
 * tasks) or `prediction` (regression).
 */
import { assertUnreachable } from '../core/errors.js';
import { objectiveFor, type ObjectiveKind, type OutputTransform } from '../task/objective/objective.js';
import { attr } from '../artifacts/onnx/attributes.js';
import { ML_DOMAIN, OnnxGraphBuilder } from '../artifacts/onnx/onnx_graph_builder.js';
import { cast, concat, floatScalar, int64s, squeeze } from '../artifacts/onnx/ops/basic.js';
import { dense } from '../artifacts/onnx/ops/dense.js';
import { lookupIndex, type Vocabulary } from '../artifacts/onnx/ops/lookup.js';
import { hashedLookupIndex, type HashedKeyIndex } from '../artifacts/onnx/ops/hashed_lookup.js';
import { maskedAttentionPool, maskedMeanPool } from '../artifacts/onnx/ops/pooling.js';
import { standardize } from '../artifacts/onnx/ops/standardize.js';
import { INT64_MIN, relativeTime } from '../artifacts/onnx/ops/time.js';
import type { ElemType } from '../artifacts/onnx/types.js';
import { isStoreInput, storeEntityFeatures, type StoreEntityInput } from './store_inputs_export.js';
import { DELTA_CAP_DAYS, MINUTES_PER_DAY, MINUTE_RECENCY_SCALE, LOG_RATIO_CLIP, LOG_RATIO_EPS, elementNumericDim, factNumericDim, headInputDim, isIntegerType, type CategoricalSpec, type StudentSpec } from '../model/student/spec.js';

export interface EntityTable {
  /** keys in row order (strings, or bigints for integer keys) */
  keys: Vocabulary;
  /** [rows × dim] */
  vectors: Float32Array;
  dim: number;
}

/**
 * An entity table too large to hold: its keys as a hashed index (the lookup becomes
 * {@link hashedLookupIndex} instead of a LabelEncoder) and its vectors produced chunk by chunk when the
 * model is written (`OnnxGraphBuilder.writeFiles`), straight into model.onnx.data.
 */
export interface StreamedEntityTable {
  index: HashedKeyIndex;
  rows: number;
  dim: number;
  /** the vectors in row order, row-major float32, whole rows per chunk; called once per model written */
  vectorChunks: () => AsyncIterable<Float32Array>;
}

/** The vectors of given keys, as parity and the int8 report need them (in memory or read from the snapshot). */
export interface EntityRows {
  dim: number;
  /** [keys × dim] (zeros where missing) and 1 where the key has no row */
  vectorsFor(keys: ArrayLike<string | bigint>): Promise<{ values: Float32Array; missing: Float32Array }>;
}

export function isStreamed(t: EntityTable | StreamedEntityTable | StoreEntityInput): t is StreamedEntityTable {
  return 'index' in t;
}

export interface StudentOnnxInputs {
  spec: StudentSpec;
  weights: Map<string, Float32Array>;
  /** per embedding key (spec.embeddings order); a {@link StoreEntityInput} makes the embedding a request input */
  entities: (EntityTable | StreamedEntityTable | StoreEntityInput)[];
  /** primary keys of tables referenced by same-entity flags, by table name */
  key_vocabularies: Record<string, Vocabulary | HashedKeyIndex>;
  kind: ObjectiveKind;
  label_mean?: number;
  label_std?: number;
  metadata?: Record<string, string>;
  /**
   * How the entity tables are stored: `'none'` FLOAT32 (default), `'int8'` one signed byte per value
   * with a FLOAT scale per row (see {@link quantizeRows}).
   */
  quantize?: Quantize;
}

export type Quantize = 'none' | 'int8';

/**
 * Whether an initializer is (part of) an entity embedding table — what grows with the entity count, and
 * what export moves to external data. Names are `entity.<table>.table` / `.scale`, with a `_k` suffix
 * when two keys embed the same table.
 */
export function isEntityTableInitializer(name: string): boolean {
  return /^entity\..+\.(table|scale)(_\d+)?$/.test(name);
}

/**
 * Entity tables and, with streamed tables, the hashed key indexes (`entity.<table>.lookup.*` of the
 * embedding lookups, `same.<column>.*.lookup.*` of the same-entity flags): all that grows with the entity count.
 */
export function isEntityInitializer(name: string): boolean {
  return isEntityTableInitializer(name) || /^(entity|same)\..+\.lookup(_\d+)?\.(keys|rows|buckets)(_\d+)?$/.test(name);
}

/**
 * Symmetric per-row INT8 quantization: s_r = max_c |x_rc| / 127, q_rc = round(x_rc / s_r) ∈ [−127, 127],
 * x̂_rc = q_rc · s_r, so |x̂ − x| ≤ s_r / 2 per value. A row scale rather than one per table because
 * embedding norms vary a lot between entities (a per-table scale wastes the range of every small row);
 * −128 is left unused so the grid is symmetric around 0. An all-zero row gets scale 0 and stays exact.
 */
export function quantizeRows(x: Float32Array, rows: number, dim: number): { q: Int8Array; scale: Float32Array } {
  const q = new Int8Array(rows * dim);
  const scale = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let m = 0;
    for (let c = 0; c < dim; c++) m = Math.max(m, Math.abs(x[r * dim + c]!));
    const s = Math.fround(m / 127);
    scale[r] = s;
    if (s === 0) continue;
    for (let c = 0; c < dim; c++) q[r * dim + c] = Math.max(-127, Math.min(127, Math.round(x[r * dim + c]! / s)));
  }
  return { q, scale };
}

/** A request input: name, ONNX element type, whether it is a sequence ([b, seq, 1]) or a row field ([b, 1]). */
export interface RequestInput {
  name: string;
  elemType: ElemType;
  sequence: boolean;
  /** what a serving layer pads this input with when batching sequences of different lengths */
  padValue?: string;
  /** what a request that omits this input (or sends null) means: the model's own "missing" value */
  missingValue?: string;
  /** sequences: the longest the model was distilled with (longer requests are refused) */
  maxLength?: number;
  doc: string;
}

export function elemTypeOf(duckType: string): ElemType {
  if (isIntegerType(duckType)) return 'INT64';
  if (/^(FLOAT|DOUBLE|REAL|DECIMAL|BOOLEAN)/.test(duckType)) return 'FLOAT';
  if (/^(TIMESTAMP|DATE)/.test(duckType)) return 'INT64';
  return 'STRING';
}

/** Every request input the model declares, in a stable order. */
export function requestInputs(spec: StudentSpec): RequestInput[] {
  const f = spec.fact_table;
  const out: RequestInput[] = [{ name: 'anchor_time', elemType: 'INT64', sequence: false, doc: 'request time, ns since the epoch' }];
  const seen = new Set<string>(['anchor_time']);
  const add = (i: RequestInput): void => {
    if (seen.has(i.name)) return;
    seen.add(i.name);
    out.push(i);
  };
  // An entity task's primary key is its embedding key (declared below, with its use).
  if (spec.primary_key && !spec.embeddings.some((k) => k.column === spec.primary_key!.column)) {
    add({ name: `${f}.${spec.primary_key.column}`, elemType: elemTypeOf(spec.primary_key.type), sequence: false, doc: 'the row\'s primary key (accepted, not used)' });
  }
  if (spec.time_column) add({ name: `${f}.${spec.time_column}`, elemType: 'INT64', sequence: false, doc: 'row time, ns since the epoch' });
  // Feature columns may be left out of a request: the model reads them as missing (the training mean and
  // the null indicator it learned for numerics; the null code for categoricals).
  for (const c of spec.numeric) add({ name: `${f}.${c.column}`, elemType: 'FLOAT', sequence: false, missingValue: 'nan', doc: 'numeric (NaN = missing)' });
  for (const c of spec.categorical) {
    const text = categoricalType(c) === 'STRING';
    add({ name: `${f}.${c.column}`, elemType: categoricalType(c), sequence: false, missingValue: text ? '' : INT64_MIN.toString(), doc: text ? 'categorical ("" = missing)' : 'categorical (INT64 min = missing)' });
  }
  for (const k of spec.embeddings) add({ name: `${f}.${k.column}`, elemType: elemTypeOf(k.type), sequence: false, doc: `key of ${k.target} (embedding lookup)` });
  for (const r of spec.rti) for (const k of r.same_keys) add({ name: `${f}.${k.column}`, elemType: elemTypeOf(k.type), sequence: false, doc: `key of ${k.target}` });
  for (const r of spec.rti) {
    const maxLength = r.max_length;
    add({ name: `${r.path}:${r.time_column}`, elemType: 'INT64', sequence: true, padValue: INT64_MIN.toString(), maxLength, doc: 'element time, ns since the epoch (INT64 min = padding)' });
    for (const c of r.numeric) add({ name: `${r.path}:${c.column}`, elemType: 'FLOAT', sequence: true, padValue: '0', maxLength, doc: 'numeric' });
    for (const c of r.categorical) add({ name: `${r.path}:${c.column}`, elemType: categoricalType(c), sequence: true, padValue: categoricalType(c) === 'STRING' ? '' : INT64_MIN.toString(), maxLength, doc: categoricalType(c) === 'STRING' ? 'categorical ("" = missing)' : 'categorical (INT64 min = missing)' });
    for (const k of r.same_keys) add({ name: `${r.path}:${k.column}`, elemType: elemTypeOf(k.type), sequence: true, padValue: elemTypeOf(k.type) === 'STRING' ? '' : '0', maxLength, doc: `key of ${k.target}` });
  }
  return out;
}

function categoricalType(c: CategoricalSpec): ElemType {
  return isIntegerType(c.type) ? 'INT64' : 'STRING';
}

/** The objective's output transform as ONNX ops (the same formula as `predictValue` in TF.js and JS). */
function outputTransform(g: OnnxGraphBuilder, x: string, transform: OutputTransform, inp: { label_mean?: number; label_std?: number }): string {
  switch (transform) {
    case 'sigmoid':
      return g.op('Sigmoid', [x]);
    case 'affine':
      return g.op('Add', [g.op('Mul', [x, floatScalar(g, inp.label_std ?? 1, 'label_std')]), floatScalar(g, inp.label_mean ?? 0, 'label_mean')]);
    case 'score':
      // A ranking score is served as it is: an order over items, not a probability or a value.
      return x;
    default:
      return assertUnreachable(transform);
  }
}

export function outputName(kind: ObjectiveKind): string {
  return objectiveFor(kind).outputName;
}

export function buildStudentOnnx(inp: StudentOnnxInputs): OnnxGraphBuilder {
  const { spec, weights } = inp;
  const w = (name: string): Float32Array => {
    const v = weights.get(name);
    if (!v) throw new Error(`student weights lack ${name}`);
    return v;
  };
  const g = new OnnxGraphBuilder({ graphName: `${spec.task}_distilled`, docString: `gnnctl distilled model for task ${spec.task}` });
  const inputs = requestInputs(spec);
  const names = new Map<string, string>();
  for (const i of inputs) names.set(i.name, g.addInput(i.name, i.elemType, i.sequence ? ['batch', 'seq', 1] : ['batch', 1], i.doc));
  const f = spec.fact_table;
  const input = (n: string): string => names.get(n)!;
  // Added on first use: a student without categorical columns has no table, and an unused initializer
  // would make onnxruntime warn at every load.
  let catTableName: string | undefined;
  const catTable = (): string => (catTableName ??= g.constant(w('cat/emb'), [Math.max(1, spec.categorical_size), spec.categorical_dim], { name: 'categorical.embeddings' }));
  const anchor = input('anchor_time');

  // Fact numerics: (z, null) per column, then the clock features of the row time.
  const factNum: string[] = [];
  for (const c of spec.numeric) {
    const s = standardize(g, input(`${f}.${c.column}`), { mean: Float32Array.of(c.mean), std: Float32Array.of(c.std), name: `fact.${c.column}` });
    factNum.push(s.value, s.isNull);
  }
  factNum.push(...clock(g, spec.time_column ? input(`${f}.${spec.time_column}`) : anchor));
  const parts: string[] = [concat(g, factNum, 1)];
  for (const c of spec.categorical) parts.push(categoricalEmbedding(g, input(`${f}.${c.column}`), c, catTable(), false));

  if (spec.use_embeddings) {
    spec.embeddings.forEach((k, i) => {
      const t = inp.entities[i]!;
      if (isStoreInput(t)) {
        parts.push(...storeEntityFeatures(g, t, w(`emb${i}/fallback`), spec.proj_dim, { kernel: w(`emb${i}/proj_w`), bias: w(`emb${i}/proj_b`) }));
        return;
      }
      if (isStreamed(t)) {
        parts.push(...streamedEntity(g, input(`${f}.${k.column}`), t, k.target, w(`emb${i}/fallback`), inp.quantize ?? 'none', spec.proj_dim, { kernel: w(`emb${i}/proj_w`), bias: w(`emb${i}/proj_b`) }));
        return;
      }
      const rows = t.keys.length;
      const index = lookupIndex(g, input(`${f}.${k.column}`), t.keys, rows, `entity.${k.target}.lookup`);
      const table = new Float32Array((rows + 1) * k.dim);
      table.set(t.vectors);
      table.set(w(`emb${i}/fallback`), rows * k.dim);
      const tableName = `entity.${k.target}.table`;
      const scaleName = `entity.${k.target}.scale`;
      const idx = squeeze(g, index, [1]);
      let vec: string;
      if ((inp.quantize ?? 'none') === 'int8') {
        // Gather the INT8 rows first and dequantize only those: DequantizeLinear on the initializer would
        // turn the whole table back into FLOAT32 on every request.
        const { q, scale } = quantizeRows(table, rows + 1, k.dim);
        const qrows = g.op('Gather', [g.constant(q, [rows + 1, k.dim], { name: tableName }), idx], { axis: attr.int(0) });
        const srows = g.op('Gather', [g.constant(scale, [rows + 1, 1], { name: scaleName }), idx], { axis: attr.int(0) });
        vec = g.op('Mul', [cast(g, qrows, 'FLOAT'), srows]);
      } else {
        vec = g.op('Gather', [g.constant(table, [rows + 1, k.dim], { name: tableName }), idx], { axis: attr.int(0) });
      }
      const missing = cast(g, g.op('Equal', [index, g.constant(BigInt64Array.of(BigInt(rows)), [], { name: `entity.${k.target}.fallback_row` })]), 'FLOAT');
      parts.push(dense(g, vec, { kernel: w(`emb${i}/proj_w`), bias: w(`emb${i}/proj_b`), inputDim: k.dim, units: spec.proj_dim, name: `entity.${k.target}.proj` }), missing);
    });
  }

  if (spec.use_rti) {
    spec.rti.forEach((r, i) => {
      const p = r.path;
      const t = squeeze(g, input(`${p}:${r.time_column}`), [2]);
      const rel = relativeTime(g, t, anchor, { name: `rti${i}.reltime` });
      const delta = g.op('Max', [rel.value, floatScalar(g, 0, 'zero')]);
      const cols: string[] = [];
      for (const c of r.numeric) {
        const s = standardize(g, squeeze(g, input(`${p}:${c.column}`), [2]), { mean: Float32Array.of(c.mean), std: Float32Array.of(c.std), name: `rti${i}.${c.column}` });
        cols.push(s.value, s.isNull);
      }
      cols.push(g.op('Div', [g.op('Log', [g.op('Add', [delta, floatScalar(g, 1, 'one')])]), floatScalar(g, 5, 'five')]));
      cols.push(g.op('Div', [g.op('Min', [delta, floatScalar(g, DELTA_CAP_DAYS, 'delta_cap')]), floatScalar(g, DELTA_CAP_DAYS, 'delta_cap')]));
      if (r.minute_recency) {
        const minutes = g.op('Mul', [delta, floatScalar(g, MINUTES_PER_DAY, 'minutes_per_day')]);
        cols.push(g.op('Div', [g.op('Log', [g.op('Add', [minutes, floatScalar(g, 1, 'one')])]), floatScalar(g, MINUTE_RECENCY_SCALE, 'minute_recency_scale')]));
      }
      for (const c of r.ratios) cols.push(logRatio(g, input(`${f}.${c}`), squeeze(g, input(`${p}:${c}`), [2])));
      for (const k of r.same_keys) {
        const vocab = inp.key_vocabularies[k.target]!;
        const fi = lookupSigned(g, input(`${f}.${k.column}`), vocab, -1n, `same.${k.column}.fact`);
        const ei = lookupSigned(g, squeeze(g, input(`${p}:${k.column}`), [2]), vocab, -2n, `same.${k.column}.rti${i}`);
        cols.push(cast(g, g.op('Equal', [fi, ei]), 'FLOAT'));
      }
      // [b, s] columns → [b, s, ed], in the order features.ts writes them.
      let x = g.op('Concat', cols.map((c) => g.op('Unsqueeze', [c, int64s(g, [2], 'axes')])), { axis: attr.int(2) });
      const cats = r.categorical.map((c) => categoricalEmbedding(g, squeeze(g, input(`${p}:${c.column}`), [2]), c, catTable(), true));
      if (cats.length) x = g.op('Concat', [x, ...cats], { axis: attr.int(2) });
      const inDim = elementNumericDim(r) + r.categorical.length * spec.categorical_dim;
      const h = dense(g, x, { kernel: w(`rti${i}/w`), bias: w(`rti${i}/b`), inputDim: inDim, units: spec.element_dim, activation: 'relu', name: `rti${i}.element` });
      const mean = maskedMeanPool(g, h, rel.mask);
      const att = maskedAttentionPool(g, h, rel.mask, { weight: w(`rti${i}/att_w`), bias: w(`rti${i}/att_b`)[0]!, name: `rti${i}.attention` });
      const count = g.op('ReduceSum', [rel.mask, int64s(g, [1], 'axes')], { keepdims: attr.int(1) });
      const countFeat = g.op('Div', [g.op('Log', [g.op('Add', [count, floatScalar(g, 1, 'one')])]), floatScalar(g, Math.log1p(r.max_length), `rti${i}.log_max`)]);
      parts.push(mean, att, countFeat);
    });
  }

  let x = g.op('Concat', parts, { axis: attr.int(1) });
  const dims = [headInputDim(spec), ...spec.hidden, 1];
  for (let l = 0; l < dims.length - 1; l++) {
    x = dense(g, x, { kernel: w(`head/w${l}`), bias: w(`head/b${l}`), inputDim: dims[l]!, units: dims[l + 1]!, activation: l < dims.length - 2 ? 'relu' : 'linear', name: `head.${l}` });
  }
  const out = outputTransform(g, x, objectiveFor(inp.kind).transform, inp);
  g.addOutput(outputName(inp.kind), 'FLOAT', ['batch', 1], { from: out });
  for (const [k, v] of Object.entries(inp.metadata ?? {})) g.setMetadata(k, v);
  return g;
}

/**
 * The entity lookup of a {@link StreamedEntityTable}: the same features as the in-memory path (the
 * projected row, and 1 where the key is unknown), with the key → row lookup through the hashed index and
 * the table (rows + the learned fallback row last) written chunk by chunk. INT8 quantizes each chunk with
 * {@link quantizeRows} as it streams; the per-row scales (4 bytes a row) are kept and written after.
 */
function streamedEntity(
  g: OnnxGraphBuilder,
  keys: string,
  t: StreamedEntityTable,
  target: string,
  fallback: Float32Array,
  quantize: Quantize,
  projDim: number,
  proj: { kernel: Float32Array; bias: Float32Array },
): string[] {
  const { rows, dim } = t;
  if (fallback.length !== dim) throw new Error(`entity ${target}: fallback row has ${fallback.length} values, the table ${dim}`);
  const index = hashedLookupIndex(g, keys, t.index, rows, `entity.${target}.lookup`);
  const idx = squeeze(g, index, [1]);
  const bytesOf = (a: Float32Array | Int8Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  async function* rowsWithFallback(): AsyncGenerator<Float32Array> {
    let seen = 0;
    for await (const c of t.vectorChunks()) {
      if (c.length % dim !== 0) throw new Error(`entity ${target}: a chunk of ${c.length} values is not whole rows of ${dim}`);
      seen += c.length / dim;
      yield c;
    }
    if (seen !== rows) throw new Error(`entity ${target}: the source gave ${seen} rows, ${rows} were announced`);
    yield fallback;
  }
  let vec: string;
  if (quantize === 'int8') {
    const scales = new Float32Array(rows + 1);
    let scaled = -1;
    const tableName = g.addStreamedInitializer(`entity.${target}.table`, 'INT8', [rows + 1, dim], async (write) => {
      let r = 0;
      for await (const c of rowsWithFallback()) {
        const n = c.length / dim;
        const { q, scale } = quantizeRows(c, n, dim);
        scales.set(scale, r);
        r += n;
        write(bytesOf(q));
      }
      scaled = r;
    }, { unique: true });
    // Written after the table (initializer order), whose writer filled `scales`.
    const scaleName = g.addStreamedInitializer(`entity.${target}.scale`, 'FLOAT', [rows + 1, 1], (write) => {
      if (scaled !== rows + 1) throw new Error(`entity ${target}: the scales are written before the table that computes them`);
      write(bytesOf(scales));
    }, { unique: true });
    const qrows = g.op('Gather', [tableName, idx], { axis: attr.int(0) });
    const srows = g.op('Gather', [scaleName, idx], { axis: attr.int(0) });
    vec = g.op('Mul', [cast(g, qrows, 'FLOAT'), srows]);
  } else {
    const tableName = g.addStreamedInitializer(`entity.${target}.table`, 'FLOAT', [rows + 1, dim], async (write) => {
      for await (const c of rowsWithFallback()) write(bytesOf(c));
    }, { unique: true });
    vec = g.op('Gather', [tableName, idx], { axis: attr.int(0) });
  }
  const missing = cast(g, g.op('Equal', [index, g.constant(BigInt64Array.of(BigInt(rows)), [], { name: `entity.${target}.fallback_row` })]), 'FLOAT');
  return [dense(g, vec, { kernel: proj.kernel, bias: proj.bias, inputDim: dim, units: projDim, name: `entity.${target}.proj` }), missing];
}

/** sin/cos of hour of day and day of week from INT64 ns times [b, 1]: four [b, 1] FLOAT columns. */
function clock(g: OnnxGraphBuilder, t: string): string[] {
  const dayNs = g.constant(BigInt64Array.of(86_400_000_000_000n), [], { name: 'ns_per_day' });
  const hourNs = g.constant(Float64Array.of(3_600e9), [], { name: 'ns_per_hour' });
  const hour = cast(g, g.op('Div', [cast(g, g.op('Mod', [t, dayNs]), 'DOUBLE'), hourNs]), 'FLOAT');
  const dow = cast(g, g.op('Mod', [g.op('Div', [t, dayNs]), g.constant(BigInt64Array.of(7n), [], { name: 'seven' })]), 'FLOAT');
  const h = g.op('Mul', [hour, floatScalar(g, (2 * Math.PI) / 24, 'two_pi_over_24')]);
  const d = g.op('Mul', [dow, floatScalar(g, (2 * Math.PI) / 7, 'two_pi_over_7')]);
  return [g.op('Sin', [h]), g.op('Cos', [h]), g.op('Sin', [d]), g.op('Cos', [d])];
}

/**
 * Raw categorical values → offset code (0 null, 1 unknown, 2 + i vocab[i]) → embedding row, flattened.
 * Null is "" for text columns and INT64 min for integer columns (an INT64 request has no null).
 */
function categoricalEmbedding(g: OnnxGraphBuilder, v: string, c: CategoricalSpec, table: string, sequence: boolean): string {
  const integer = isIntegerType(c.type);
  const keys = integer ? [INT64_MIN, ...c.vocab.map((x) => BigInt(x))] : ['', ...c.vocab];
  const values = [BigInt(c.offset), ...c.vocab.map((_, i) => BigInt(c.offset + 2 + i))];
  const code = g.op(
    'LabelEncoder',
    [v],
    {
      ...(integer ? { keys_int64s: attr.ints(BigInt64Array.from(keys as bigint[])) } : { keys_strings: attr.strings(keys as string[]) }),
      values_int64s: attr.ints(BigInt64Array.from(values)),
      default_int64: attr.int(c.offset + 1),
    },
    { domain: ML_DOMAIN, name: `cat.${c.column}.${c.offset}` },
  );
  // [b, 1] → [b, 1, dim] → [b, dim] for row fields; [b, s] → [b, s, dim] for sequences.
  const e = g.op('Gather', [table, code], { axis: attr.int(0) });
  return sequence ? e : squeeze(g, e, [1]);
}

/** Key → row index in `vocab` (a LabelEncoder, or a hashed index for large tables), or `missing` (negative) for unknown keys. */
function lookupSigned(g: OnnxGraphBuilder, keys: string, vocab: Vocabulary | HashedKeyIndex, missing: bigint, name: string): string {
  const size = 'buckets' in vocab ? vocab.n : vocab.length;
  const idx = 'buckets' in vocab ? hashedLookupIndex(g, keys, vocab, size, `${name}.lookup`) : lookupIndex(g, keys, vocab, size, name);
  const unknown = g.op('Equal', [idx, g.constant(BigInt64Array.of(BigInt(size)), [], { name: `${name}.size` })]);
  return g.op('Where', [unknown, g.constant(BigInt64Array.of(missing), [], { name: `${name}.missing` }), idx]);
}

/** clip(log(|x_f| + ε) − log(|x_e| + ε), ±5), 0 when either is NaN. x_f [b, 1], x_e [b, s] → [b, s]. */
function logRatio(g: OnnxGraphBuilder, xf: string, xe: string): string {
  const eps = floatScalar(g, LOG_RATIO_EPS, 'log_ratio_eps');
  const lf = g.op('Log', [g.op('Add', [g.op('Abs', [xf]), eps])]);
  const le = g.op('Log', [g.op('Add', [g.op('Abs', [xe]), eps])]);
  const r = g.op('Clip', [g.op('Sub', [lf, le]), floatScalar(g, -LOG_RATIO_CLIP, 'neg_clip'), floatScalar(g, LOG_RATIO_CLIP, 'pos_clip')]);
  const nan = g.op('Or', [g.op('IsNaN', [xf]), g.op('IsNaN', [xe])]);
  return g.op('Where', [nan, floatScalar(g, 0, 'zero'), r]);
}

export { factNumericDim };
