/**
 * Parity between the TF.js student and the exported ONNX model: both are fed the same examples — TF.js
 * through the training feature path (graph arrays), onnxruntime through raw request tensors rebuilt from
 * the rows — and must agree within a tolerance. Export runs it as a self-check; tests run it on 1,000
 * examples at batch 1 and batch 256.
 */
import { objectiveFor } from '../task/objective/objective.js';
import { tf } from '../core/tf.js';
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import { isEntityHopPath, type HopPath } from '../task/task_spec.js';
import { lit, q, readStrings, withDuck } from '../data/duck.js';
import { entityRtiElements, rtiElements } from '../distill/data.js';
import { StudentFeatures, type StudentData } from '../model/student/features.js';
import { isIntegerType, type CategoricalSpec, type StudentSpec } from '../model/student/spec.js';
import type { StudentModel } from '../model/student/student.js';
import type { Graph } from '../graph/graph.js';
import { INT64_MIN } from '../artifacts/onnx/ops/time.js';
import { elemTypeOf, requestInputs, type EntityRows, type EntityTable } from './student_onnx.js';

export interface ParityReport {
  examples: number;
  max_abs_diff: number;
  /** ORT at batch 1 vs ORT at the full batch */
  max_batch_diff: number;
  non_finite: number;
  /** onnxruntime-node wall time of one batch-1 request (one intra-op thread), over the single runs after a warm-up */
  latency_ms: { p50: number; p99: number; runs: number } | null;
}

const WARMUP_RUNS = 20;

/**
 * The raw key standing for "a foreign key that refers to no row" in rebuilt requests. Not NUL-prefixed:
 * onnxruntime-node passes string tensors as C strings, so "\u0000…" would arrive as "" (the missing value).
 */
const UNKNOWN = '\uFFFFunknown';

/** Raw request tensors for a set of fact rows, in the layout `requestInputs` declares. */
export interface RawRequests {
  n: number;
  /** input name → flat values ([n] or [n × seq]) */
  values: Map<string, Float32Array | BigInt64Array | string[]>;
  /** per sequence input: length per example (all equal here: the batch is padded to maxLength) */
  seq: number;
  /** FP32 [n, width] inputs beyond `requestInputs` (an `--embeddings-from-store` model's embeddings) */
  extra?: { name: string; width: number }[];
}

/**
 * Builds raw requests and matching student data for fact rows `nodes` (anchor = the row time), or for an
 * entity task's entities `nodes` at `entityAnchors`.
 */
export async function rawRequests(
  graph: Graph,
  spec: StudentSpec,
  hops: HopPath[],
  realTimeOffset: number,
  nodes: Int32Array,
  entities: (EntityTable | EntityRows)[],
  entityAnchors?: Float64Array,
): Promise<{ requests: RawRequests; data: StudentData }> {
  const n = nodes.length;
  const f = graph.table(spec.fact_table);
  const values = new Map<string, Float32Array | BigInt64Array | string[]>();
  const anchors = spec.time_column ? Float64Array.from(nodes, (v) => f.time![v]!) : entityAnchors!;
  const ns = (s: number): bigint => BigInt(Math.round(s)) * 1_000_000_000n;
  values.set('anchor_time', BigInt64Array.from(anchors, ns));
  if (spec.time_column) values.set(`${spec.fact_table}.${spec.time_column}`, BigInt64Array.from(anchors, ns));
  const fks = new Map(graph.edges.filter((e) => e.kind === 'fk').map((e) => [`${e.src}.${e.meta.column}`, e]));
  const keysOf = await keyColumns(graph, [...new Set([...spec.embeddings.map((k) => k.target), ...spec.rti.flatMap((r) => r.same_keys.map((k) => k.target)), ...(spec.primary_key ? [spec.fact_table] : [])])]);
  const keyValues = (table: string, fkTable: string, column: string, rows: Int32Array, type: string): string[] | BigInt64Array => {
    // A table's own primary key (an entity task's embedding key) refers to the row itself.
    const parent = table === fkTable && graph.manifest.schema.tables[table]!.primary_key?.column === column ? null : fks.get(`${fkTable}.${column}`)!.parent!;
    if (!parent) {
      const keys = keysOf.get(table)!;
      const raw = Array.from(rows, (v) => keys[v]!);
      return elemTypeOf(type) === 'INT64' ? BigInt64Array.from(raw, (k) => BigInt(k)) : raw;
    }
    const keys = keysOf.get(table)!;
    const raw = Array.from(rows, (v) => (v < 0 ? '' : parent[v]! < 0 ? UNKNOWN : keys[parent[v]!]!));
    return elemTypeOf(type) === 'INT64' ? BigInt64Array.from(raw, (k) => (k === '' || k === UNKNOWN ? -987654321n : BigInt(k))) : raw;
  };
  if (spec.primary_key) {
    const keys = keysOf.get(spec.fact_table)!;
    const raw = Array.from(nodes, (v) => keys[v]!);
    values.set(`${spec.fact_table}.${spec.primary_key.column}`, elemTypeOf(spec.primary_key.type) === 'INT64' ? BigInt64Array.from(raw, (k) => BigInt(k)) : raw);
  }
  for (const c of spec.numeric) values.set(`${spec.fact_table}.${c.column}`, Float32Array.from(nodes, (v) => f.numeric.find((x) => x.meta.name === c.column)!.values[v]!));
  for (const c of spec.categorical) values.set(`${spec.fact_table}.${c.column}`, rawCategorical(f.categorical.find((x) => x.meta.name === c.column)!, c, nodes));
  for (const k of spec.embeddings) values.set(`${spec.fact_table}.${k.column}`, keyValues(k.target, spec.fact_table, k.column, nodes, k.type));
  for (const r of spec.rti) for (const k of r.same_keys) values.set(`${spec.fact_table}.${k.column}`, keyValues(k.target, spec.fact_table, k.column, nodes, k.type));

  const rti: Int32Array[] = [];
  let seq = 0;
  for (const [i, r] of spec.rti.entries()) {
    const hop = hops.find((h) => h.text === r.path)!;
    const lists = isEntityHopPath(hop) ? entityRtiElements(graph, hop, nodes, anchors, realTimeOffset) : await rtiElements(graph, hop, nodes, realTimeOffset);
    rti.push(lists);
    const N = r.max_length;
    seq = N;
    const c = graph.table(r.child_table);
    values.set(`${r.path}:${r.time_column}`, BigInt64Array.from(lists, (el) => (el < 0 ? INT64_MIN : ns(c.time![el]!))));
    for (const col of r.numeric) {
      const arr = c.numeric.find((x) => x.meta.name === col.column)!.values;
      values.set(`${r.path}:${col.column}`, Float32Array.from(lists, (el) => (el < 0 ? 0 : arr[el]!)));
    }
    for (const col of r.categorical) values.set(`${r.path}:${col.column}`, rawCategorical(c.categorical.find((x) => x.meta.name === col.column)!, col, lists));
    for (const k of r.same_keys) values.set(`${r.path}:${k.column}`, keyValues(k.target, r.child_table, k.column, lists, k.type));
    void i;
  }

  // The student side sees the export's embedding tables, looked up by the same keys.
  const embeddings: { values: Float32Array; missing: Float32Array }[] = [];
  for (const [j, k] of spec.embeddings.entries()) {
    const t = entities[j]!;
    const rows = 'vectorsFor' in t ? t : inMemoryRows(t);
    embeddings.push(await rows.vectorsFor(values.get(`${spec.fact_table}.${k.column}`) as ArrayLike<string | bigint>));
  }
  return { requests: { n, values, seq }, data: { nodes, anchors, embeddings, rti } };
}

/** {@link EntityRows} over a table held in memory (a key → row Map; tables this small stay inside model.onnx). */
export function inMemoryRows(t: EntityTable): EntityRows {
  let index: Map<string, number> | undefined;
  return {
    dim: t.dim,
    async vectorsFor(keys) {
      index ??= new Map(Array.from(t.keys as ArrayLike<string | bigint>, (key, r) => [String(key), r]));
      const out = new Float32Array(keys.length * t.dim);
      const missing = new Float32Array(keys.length);
      for (let i = 0; i < keys.length; i++) {
        const r = index.get(String(keys[i]));
        if (r === undefined) missing[i] = 1;
        else out.set(t.vectors.subarray(r * t.dim, (r + 1) * t.dim), i * t.dim);
      }
      return { values: out, missing };
    },
  };
}

function rawCategorical(col: { meta: { vocab: string[] }; codes: Int32Array }, c: CategoricalSpec, rows: Int32Array): string[] | BigInt64Array {
  // An out-of-vocabulary row (code 1: a value rarer than data.min_frequency, or first seen after
  // fit_until) is sent as a text no vocabulary holds. Not a NUL-prefixed sentinel: onnxruntime-node reads
  // string tensors as C strings, so "\0unknown" arrives as "" and encodes as null, not unknown.
  let unknown = '<unknown>';
  while (col.meta.vocab.includes(unknown)) unknown += '#';
  const raw = Array.from(rows, (v) => {
    if (v < 0) return '';
    const code = col.codes[v]!;
    return code === 0 ? '' : code === 1 ? unknown : col.meta.vocab[code - 2]!;
  });
  return isIntegerType(c.type) ? BigInt64Array.from(raw, (x) => (x === '' ? INT64_MIN : x === unknown ? -987654321n : BigInt(x))) : raw;
}

async function keyColumns(graph: Graph, tables: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  await withDuck(async ({ conn }) => {
    for (const t of tables) {
      const pk = graph.manifest.schema.tables[t]!.primary_key!.column;
      const keys = await readStrings(conn, `SELECT CAST(${q(pk)} AS VARCHAR) FROM read_parquet(${lit(join(graph.dir, graph.manifest.tables[t]!.rows_file))}) ORDER BY __node`);
      out.set(t, keys.map((k) => k ?? ''));
    }
  });
  return out;
}

/** ORT feeds for rows [lo, hi) of the raw requests. */
export function feeds(spec: StudentSpec, req: RawRequests, lo: number, hi: number): Record<string, ort.Tensor> {
  const m = hi - lo;
  const out: Record<string, ort.Tensor> = {};
  for (const inp of requestInputs(spec)) {
    const v = req.values.get(inp.name);
    if (!v) throw new Error(`parity: no values for input ${inp.name}`);
    const width = inp.sequence ? req.seq : 1;
    const dims = inp.sequence ? [m, width, 1] : [m, 1];
    const slice = v.slice(lo * width, hi * width);
    if (inp.elemType === 'STRING') out[inp.name] = new ort.Tensor('string', slice as string[], dims);
    else if (inp.elemType === 'INT64') out[inp.name] = new ort.Tensor('int64', slice as BigInt64Array, dims);
    else out[inp.name] = new ort.Tensor('float32', slice as Float32Array, dims);
  }
  for (const e of req.extra ?? []) out[e.name] = new ort.Tensor('float32', (req.values.get(e.name) as Float32Array).slice(lo * e.width, hi * e.width), [m, e.width]);
  return out;
}

/** Compares the TF.js student with the ONNX model on the given requests. */
export async function checkParity(
  modelPath: string,
  spec: StudentSpec,
  student: StudentModel,
  graph: Graph,
  req: RawRequests,
  data: StudentData,
  outputName: string,
  opts: { batch: number; singles: number },
): Promise<ParityReport> {
  const features = new StudentFeatures(graph, spec);
  const rows = Int32Array.from({ length: req.n }, (_, i) => i);
  const o = spec.output;
  const t = tf.tidy(() => {
    const raw = student.forward(features.batch(data, rows), false);
    return objectiveFor(o.kind).transform === 'sigmoid' ? tf.sigmoid(raw) : raw.mul(o.label_std).add(o.label_mean);
  });
  const expected = t.dataSync() as Float32Array;
  t.dispose();
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  try {
    let maxAbsDiff = 0;
    let nonFinite = 0;
    const got = new Float32Array(req.n);
    for (let i = 0; i < req.n; i += opts.batch) {
      const j = Math.min(req.n, i + opts.batch);
      const r = await session.run(feeds(spec, req, i, j));
      got.set(r[outputName]!.data as Float32Array, i);
    }
    for (let i = 0; i < req.n; i++) {
      if (!Number.isFinite(got[i]!)) nonFinite++;
      maxAbsDiff = Math.max(maxAbsDiff, Math.abs(got[i]! - expected[i]!));
    }
    let maxBatchDiff = 0;
    const times: number[] = [];
    const singles = Math.min(opts.singles, req.n);
    for (let i = 0; i < singles; i++) {
      const feed = feeds(spec, req, i, i + 1);
      const t0 = performance.now();
      const r = await session.run(feed);
      if (i >= WARMUP_RUNS) times.push(performance.now() - t0);
      maxBatchDiff = Math.max(maxBatchDiff, Math.abs((r[outputName]!.data as Float32Array)[0]! - got[i]!));
    }
    times.sort((a, b) => a - b);
    const pct = (q: number): number => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 1000) / 1000;
    const latencyMs = times.length > 0 ? { p50: pct(0.5), p99: pct(0.99), runs: times.length } : null;
    return { examples: req.n, max_abs_diff: maxAbsDiff, max_batch_diff: maxBatchDiff, non_finite: nonFinite, latency_ms: latencyMs };
  } finally {
    await session.release();
  }
}
