/**
 * `export`: a distilled run → a Triton model repository that NVIDIA Triton (onnxruntime backend) and
 * `gnnctl serve` load as they are:
 *
 *   <out>/<name>/config.pbtxt
 *   <out>/<name>/<version>/model.onnx            (+ model.onnx.data past the 2 GB protobuf limit)
 *   <out>/<name>/<version>/embeddings.<table>.parquet, manifest.json, README.md
 *
 * The entity embeddings are baked into the graph (key → row, then Gather; unknown keys → the student's
 * learned fallback). Their tables grow with the entity count, so past a size (`--external-data`, 64 MiB
 * by default) they are stored as ONNX external data in `model.onnx.data` beside model.onnx — the file
 * onnxruntime (and Triton's onnxruntime backend) reads from the model's folder when it loads by path.
 * Such tables are streamed there from the embedding snapshot chunk by chunk (never one buffer: 20M × 64
 * floats is 5 GB), and their keys go through a hashed index in the same file instead of a LabelEncoder
 * (whose string attribute ONNX cannot store externally): model.onnx keeps only the network. Smaller
 * tables stay inside model.onnx with a LabelEncoder. `--quantize int8` stores the tables as INT8 with a
 * scale per row (about 4× smaller), reporting the score and AUROC change against the same graph in
 * FLOAT32. Embeddings from another base run, another graph schema or of another dimension are
 * refused. The version folder is assembled under a temporary name, checked (onnxruntime loads it and
 * agrees with TF.js), then renamed into place: a server polling the repository never sees half a version.
 */
import { objectiveFor } from '../task/objective/objective.js';
import * as arrow from 'apache-arrow';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as pq from 'parquet-wasm/node';
import type { Config } from '../config/load.js';
import { lit, queryRows, withDuck } from '../data/duck.js';
import { STUDENT_SPEC_FILE, type DistillManifest } from '../distill/distill.js';
import type { DistillManifestBase } from '../distill/student_kind.js';
import type { StudentSpec } from '../model/student/spec.js';
import { StudentModel } from '../model/student/student.js';
import { embed } from '../embed/embed.js';
import { embeddingFiles } from '../distill/data.js';
import { ArtifactError, DataError, UsageError } from '../core/errors.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import { loadWeightMap, loadWeights, readModelJson, type RunListing } from '../artifacts/run_store.js';
import { VERSION } from '../core/version.js';
import type { TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import type { ExportKind, ExportStep, StudentExportOptions } from './export_kind.js';
import { exportStudent } from './export_student.js';
import { versionResult } from './model_repository.js';
import { checkParity, rawRequests, type ParityReport } from './parity.js';
import { buildStudentOnnx, elemTypeOf, isEntityInitializer, isStreamed, outputName, requestInputs, type EntityRows, type EntityTable, type StreamedEntityTable } from './student_onnx.js';
import { EntitySource } from './entity_source.js';
import { buildHashedKeyIndex, keyBytesOf, type HashedKeyIndex } from '../artifacts/onnx/ops/hashed_lookup.js';
import type { Vocabulary } from '../artifacts/onnx/ops/lookup.js';
import { PROTOBUF_LIMIT_BYTES, type ModelFiles, type OnnxGraphBuilder, type ToFilesOptions } from '../artifacts/onnx/onnx_graph_builder.js';
import { quantizationReport, type QuantizationReport } from './quantization.js';
import { isEntityTableInitializer, type Quantize, type StudentOnnxInputs } from './student_onnx.js';
import { buildTrainingTables } from '../train/examples.js';
import { taskSplit, targetTimeRange } from '../task/split.js';
import { addStoreParityInputs, isStoreInput, storeEntityInputs, storeModelConfig, type StoreEntityInput } from './store_inputs_export.js';

export interface ExportOptions extends StudentExportOptions {
  /** embedding files or folders (default: embed each key table at the newest time with the base run) */
  embeddings?: string[];
  /** examples for the built-in TF.js ↔ onnxruntime check (0 skips it) */
  parityExamples?: number;
  /** entity table storage (default: the config's `export.quantize`, `'none'`: FLOAT32) */
  quantize?: Quantize;
  /**
   * When entity tables go to `model.onnx.data` (default: the config's `export.external_data`): `'auto'` once they reach
   * {@link EXTERNAL_DATA_AUTO_BYTES} or the model nears the 2 GiB protobuf limit, `'always'`, `'never'`
   * (refused for a model past the limit), or a byte size (every initializer of at least that size).
   */
  externalData?: ExternalDataMode;
  /** `--embeddings-from-store`: entity embeddings as request inputs that `serve --online-store` fills (store_inputs_export.ts) */
  embeddingsFromStore?: boolean;
}

export type ExternalDataMode = 'auto' | 'always' | 'never' | number;

/**
 * `--external-data auto` moves entity tables out of model.onnx from this size on. Below it one file is
 * simpler to copy around; above it the external file is memory-mapped by onnxruntime rather than parsed
 * and copied out of a protobuf message, and model.onnx stays small enough for tools that read it whole.
 * (100k customers × 64 floats ≈ 25 MiB stays inline; 1M ≈ 250 MiB goes out.)
 */
export const EXTERNAL_DATA_AUTO_BYTES = 64 * 2 ** 20;

export interface ExportResult {
  repository: string;
  model: string;
  version: number;
  dir: string;
  /** model.onnx + model.onnx.data */
  model_bytes: number;
  /** what is in the version folder besides the embeddings parquet copies */
  files: { model_onnx_bytes: number; external_data_bytes: number; external_tensors: string[] };
  quantize: Quantize;
  /** int8 against FLOAT32 on the test rows; null without --quantize */
  quantization: QuantizationReport | null;
  embedding_rows: Record<string, number>;
  embedding_anchor: Record<string, string>;
  parity: ParityReport | null;
  /** `--embeddings-from-store`: the inputs `serve --online-store` fills; null for baked-in tables */
  online_store: { table: string; input: string; missing: string; key: string; dim: number }[] | null;
  seconds: number;
}

interface EmbeddingSource {
  table: string;
  files: string[];
  anchor: string;
  runId: string;
  fingerprint: string;
  dim: number;
  key: string;
}

/** ONNX element type → Triton data type, for the types gnnctl's models take and give. */
export const ONNX_TYPE_TO_TRITON = { FLOAT: 'TYPE_FP32', INT64: 'TYPE_INT64', STRING: 'TYPE_STRING' } as const;

/** Exports a row student's distilled run (`fact_row`, `entity`) through the one export path (export_student.ts). */
export async function exportModel(opts: ExportOptions): Promise<ExportResult> {
  return exportStudent(rowExport, opts);
}

/** What writing a row student's version gave: its files and checks. */
interface RowWritten {
  files: ModelFiles;
  parity: ParityReport | null;
  quantization: QuantizationReport | null;
}

/** The row student (`fact_row`, `entity`) as a kind of export: entity tables baked in, parity against TF.js, the int8 report. */
const rowExport: ExportKind<ExportOptions, ExportInputs, RowWritten, ExportResult> = {
  kinds: ['fact_row', 'entity', 'row'],
  steps: 3,
  wrongRun: (runId) => new UsageError(`run ${runId} is a session recommender run`, { where: '--run', hint: `export it with \`gnnctl recommender export --run ${runId}\`` }),
  inputs: exportInputs,
  defaultName: (x) => x.cfg.export.name,
  write: writeRowModel,
  describe: (x, target, w) => {
    const config = modelConfig(x.cfg, x.spec, target.name);
    return {
      manifest: (hashes) => exportLineage(x, { name: target.name, version: target.version, files: w.files, parity: w.parity, quantization: w.quantization, hashes }),
      readme: (lineage) => readme(x.spec, target.name, target.version, (lineage as ReturnType<typeof exportLineage>).embeddings, { quantize: x.quantize, externalData: w.files.dataPath !== undefined }),
      config: x.store ? storeModelConfig(config, x.store) : config,
    };
  },
  result: (x, target, w, seconds) => ({
    ...versionResult(target, w.files),
    files: { model_onnx_bytes: w.files.modelBytes, external_data_bytes: w.files.dataBytes, external_tensors: w.files.externalTensors },
    quantize: x.quantize,
    quantization: w.quantization,
    embedding_rows: Object.fromEntries(x.spec.embeddings.map((k, i) => [k.target, x.entitySources[i]!.rows])),
    embedding_anchor: Object.fromEntries(x.sources.map((s) => [s.table, s.anchor])),
    parity: w.parity,
    online_store: onlineStoreInputs(x),
    seconds,
  }),
};

/** The ONNX graph of the row student written into `tmp`, checked against TF.js (and, int8, against its FLOAT32 twin), with the embedding snapshots beside it. */
async function writeRowModel(x: ExportInputs, opts: ExportOptions, tmp: string, step: ExportStep): Promise<RowWritten> {
  const { spec, quantize, streamed } = x;
  const onnxInputs: StudentOnnxInputs = {
    spec,
    weights: x.weights,
    entities: x.entities,
    key_vocabularies: x.keyVocabularies,
    kind: spec.output.kind,
    label_mean: spec.output.label_mean,
    label_std: spec.output.label_std,
    metadata: { 'gnnctl.distilled_run': x.run.id, 'gnnctl.base_run': x.manifest.base_run, 'gnnctl.graph_fingerprint': x.manifest.graph.schema_fingerprint, 'gnnctl.version': VERSION, 'gnnctl.quantize': quantize },
  };
  const g = buildStudentOnnx({ ...onnxInputs, quantize });
  // int8: the same graph in FLOAT32, outside the version folder, for the strict parity and the report.
  const refDir = quantize === 'none' ? null : `${tmp}.fp32`;
  try {
    step('writing the model');
    const files = await g.writeFiles(tmp, externalDataOptions(g, x.externalMode, streamed));
    const nParity = opts.parityExamples ?? 256;
    step(refDir ? `parity check on ${nParity} examples and the int8 report` : `parity check on ${nParity} examples`);
    const { parity, quantization } = await checkExport(x, onnxInputs, g, files.modelPath, refDir, nParity);
    // A store-backed model reads its embeddings from the store: no copy of the snapshot beside it.
    if (!x.store) copyEmbeddings(x.sources, tmp);
    step('copying embeddings and hashing files');
    return { files, parity, quantization };
  } catch (e) {
    if (refDir) rmSync(refDir, { recursive: true, force: true });
    throw e;
  }
}

/** `--embeddings-from-store`: the inputs `serve --online-store` fills; null for baked-in tables. */
function onlineStoreInputs(x: ExportInputs): ExportResult['online_store'] {
  return x.store ? x.store.map((t) => ({ table: t.table, input: t.input, missing: t.missing, key: t.key, dim: t.dim })) : null;
}

/** What an export reads: the distilled run, its graph, the embedding snapshots and the entity tables (in memory or streamed). */
async function exportInputs(opts: ExportOptions, run: RunListing, runManifest: DistillManifestBase) {
  const { cfg } = opts;
  const manifest = runManifest as DistillManifest;
  const spec = readModelJson<StudentSpec>(run.dir, STUDENT_SPEC_FILE);
  const weights = loadWeightMap(run.dir);

  const built = await buildGraph(cfg, { fit: runFit(run.dir, manifest) });
  const graph = Graph.load(built.dir);
  const sources = await embeddingSources(opts, cfg, manifest, spec);
  const quantize = opts.quantize ?? cfg.export.quantize;
  const externalMode = opts.externalData ?? cfg.export.external_data;
  const entitySources = await Promise.all(spec.embeddings.map((k) => EntitySource.open(sources.find((s) => s.table === k.target)!, elemTypeOf(k.type) === 'INT64' ? 'INT64' : 'STRING')));
  // Tables that go to model.onnx.data are streamed there from the snapshot and looked up through a hashed
  // index; the others are read whole and stay in model.onnx with a LabelEncoder (see `streamTables`).
  const store = opts.embeddingsFromStore ? storeEntityInputs(spec, manifest.base_run) : undefined;
  if (store && quantize !== 'none') throw new UsageError('--embeddings-from-store exports no embedding table to quantize', { where: '--quantize', hint: 'drop --quantize (or set export.quantize: none)' });
  const streamedTables = store ? entitySources.map(() => false) : streamTables(entitySources, quantize, externalMode);
  const streamed = streamedTables.some(Boolean);
  const entities: (EntityTable | StreamedEntityTable | StoreEntityInput)[] = [];
  for (const [i, src] of entitySources.entries()) entities.push(store ? store[i]! : streamedTables[i] ? await src.streamed() : await src.readAll());
  // The same-entity flags' key vocabularies grow with the entity count too: with streamed tables they
  // become hashed indexes in model.onnx.data as well, so model.onnx holds no per-entity data at all.
  const keyVocabularies: Record<string, Vocabulary | HashedKeyIndex> = await targetKeys(graph, [...new Set(spec.rti.flatMap((r) => r.same_keys.map((k) => k.target)))]);
  if (streamed) {
    for (const [t, vocab] of Object.entries(keyVocabularies)) {
      const type = typeof (vocab as Vocabulary)[0] === 'bigint' ? 'INT64' : 'STRING';
      keyVocabularies[t] = await buildHashedKeyIndex(type, (vocab as Vocabulary).length, () => [keyBytesOf(vocab as Vocabulary, type)], `keys of ${t}`);
    }
  }
  // What parity and the int8 report look keys up in: the table in memory, or the snapshot's row groups.
  const entityRows = entities.map((t, i) => (isStreamed(t) || isStoreInput(t) ? entitySources[i]! : t));
  return { cfg, run, manifest, spec, weights, built, graph, sources, quantize, externalMode, entitySources, streamed, entities, keyVocabularies, entityRows, store };
}

type ExportInputs = Awaited<ReturnType<typeof exportInputs>>;

/**
 * The export's checks: parity of the written model against TF.js on `nParity` examples and, for an int8
 * model, the same against its FLOAT32 twin (written to `refDir`, then removed) with the quantization report.
 */
async function checkExport(
  x: ExportInputs,
  onnxInputs: StudentOnnxInputs,
  g: OnnxGraphBuilder,
  modelPath: string,
  refDir: string | null,
  nParity: number,
): Promise<{ parity: ParityReport | null; quantization: QuantizationReport | null }> {
  const { cfg, graph, spec, run, entityRows, built } = x;
  if (!refDir) return { parity: nParity > 0 ? await selfCheck(cfg, graph, spec, run.dir, modelPath, entityRows, nParity, x.store) : null, quantization: null };
  const ref = buildStudentOnnx({ ...onnxInputs, quantize: 'none' });
  const refFiles = await ref.writeFiles(refDir, externalDataOptions(ref, 'auto', x.streamed));
  const parity = nParity > 0 ? await selfCheck(cfg, graph, spec, run.dir, refFiles.modelPath, entityRows, nParity) : null;
  const task = cfg.taskSpecs[spec.task]!;
  const tables = await buildTrainingTables(built.dir, graph.manifest, task, taskSplit(task, targetTimeRange(task, graph.manifest.tables)), { seed: cfg.seed });
  const quantization = await quantizationReport({
    graph,
    spec,
    hops: cfg.hopPaths,
    realTimeOffset: cfg.distillation?.real_time_offset ?? 0,
    test: tables.test,
    entities: entityRows,
    fp32Model: refFiles.modelPath,
    quantizedModel: modelPath,
    mode: x.quantize,
    tableBytes: { fp32: ref.payloadBytes(isEntityTableInitializer), quantized: g.payloadBytes(isEntityTableInitializer) },
  });
  rmSync(refDir, { recursive: true, force: true });
  return { parity, quantization };
}

/** The embedding snapshots beside the model, one file per table or its part files. */
function copyEmbeddings(sources: EmbeddingSource[], dir: string): void {
  for (const s of sources) {
    if (s.files.length === 1) copyFileSync(s.files[0]!, join(dir, `embeddings.${s.table}.parquet`));
    else s.files.forEach((f, i) => copyFileSync(f, join(dir, `embeddings.${s.table}.part-${String(i).padStart(5, '0')}.parquet`)));
  }
}

/** The version's manifest.json: what the model was made from, what it takes and gives, its checks and file hashes. */
function exportLineage(
  x: ExportInputs,
  o: { name: string; version: number; files: ModelFiles; parity: ParityReport | null; quantization: QuantizationReport | null; hashes: Record<string, string> },
) {
  const { cfg, spec, run, manifest, graph, sources, entitySources, quantize } = x;
  const { files } = o;
  return {
    kind: 'export',
    gnnctl: VERSION,
    created_at: new Date().toISOString(),
    model: o.name,
    version: o.version,
    task: spec.task,
    distilled_run: run.id,
    base_run: manifest.base_run,
    // which student this is: its kind, and the inputs it reads (an ablation kept as best on validation reads fewer)
    student: { kind: manifest.student_kind ?? (spec.time_column ? 'fact_row' : 'entity'), use_embeddings: spec.use_embeddings, use_rti: spec.use_rti },
    graph_fingerprint: manifest.graph.schema_fingerprint,
    data_fingerprint: graph.manifest.fingerprint,
    max_embedding_offset_seconds: cfg.distillation?.max_embedding_offset ?? null,
    embeddings: sources.map((s) => ({ table: s.table, anchor_time: s.anchor, run_id: s.runId, rows: entitySources[spec.embeddings.findIndex((k) => k.target === s.table)]?.rows ?? 0, sources: s.files })),
    inputs: requestInputs(spec).map((i) => ({ name: i.name, datatype: tritonType(i.elemType).replace('TYPE_', ''), shape: i.sequence ? [-1, -1, 1] : [-1, 1] })),
    output: outputName(spec.output.kind),
    quantize,
    external_data: files.dataPath ? { file: 'model.onnx.data', bytes: files.dataBytes, tensors: files.externalTensors } : null,
    online_store: onlineStoreInputs(x),
    parity: o.parity,
    quantization: o.quantization,
    files: o.hashes,
  };
}

/**
 * Which entity tables are streamed into model.onnx.data (the rest stay in model.onnx): those that
 * `--external-data` would move out anyway — `always`; `auto` once the tables reach
 * {@link EXTERNAL_DATA_AUTO_BYTES}; a size, each table of at least that size; never with `never`. Decided
 * from the snapshots' row counts before anything is read, on the bytes as stored (INT8 + a scale per row).
 */
function streamTables(sources: EntitySource[], quantize: Quantize, mode: ExternalDataMode): boolean[] {
  const bytes = sources.map((s) => (s.rows + 1) * (quantize === 'int8' ? s.dim + 4 : s.dim * 4));
  const total = bytes.reduce((a, b) => a + b, 0);
  switch (mode) {
    case 'never':
      return bytes.map(() => false);
    case 'always':
      return bytes.map(() => true);
    case 'auto':
      return bytes.map(() => total >= EXTERNAL_DATA_AUTO_BYTES);
    default:
      return bytes.map((b) => b >= mode);
  }
}

/** `--external-data` → which initializers `toFiles` writes to model.onnx.data. */
function externalDataOptions(g: OnnxGraphBuilder, mode: ExternalDataMode, streamed: boolean): ToFilesOptions {
  const payload = g.payloadBytes();
  const tables = g.payloadBytes(isEntityTableInitializer);
  // Streamed tables are external whatever the options say; their key indexes go with them.
  if (streamed && mode !== 'never' && typeof mode !== 'number') return { externalize: isEntityInitializer };
  // Past the limit even with the tables outside: every large initializer goes (the builder's own rule).
  if (payload - tables >= PROTOBUF_LIMIT_BYTES / 2) return { externalDataThreshold: 'auto' };
  switch (mode) {
    case 'never':
      if (payload >= PROTOBUF_LIMIT_BYTES) {
        throw new UsageError(`--external-data never: the model would hold ${(payload / 2 ** 30).toFixed(2)} GiB of weights, past the 2 GiB protobuf limit of one model.onnx`, {
          where: '--external-data',
          hint: 'use --external-data auto (the default) or always, or --quantize int8',
        });
      }
      return { externalDataThreshold: Infinity };
    case 'always':
      return { externalize: isEntityInitializer };
    case 'auto':
      return tables >= EXTERNAL_DATA_AUTO_BYTES || payload >= PROTOBUF_LIMIT_BYTES / 2 ? { externalize: isEntityInitializer } : { externalDataThreshold: Infinity };
    default:
      return { externalDataThreshold: mode };
  }
}

function tritonType(t: 'FLOAT' | 'INT64' | 'STRING' | string): string {
  return ONNX_TYPE_TO_TRITON[t as keyof typeof ONNX_TYPE_TO_TRITON] ?? 'TYPE_STRING';
}

export function modelConfig(cfg: Config, spec: StudentSpec, name: string): TritonModelConfig {
  const inputs = requestInputs(spec);
  return {
    name,
    platform: 'onnxruntime_onnx',
    max_batch_size: cfg.export.max_batch_size,
    input: inputs.map((i) => ({ name: i.name, data_type: tritonType(i.elemType) as never, dims: i.sequence ? [-1, 1] : [1] })),
    output: [{ name: outputName(spec.output.kind), data_type: 'TYPE_FP32', dims: [1] }],
    dynamic_batching: { max_queue_delay_microseconds: cfg.export.max_queue_delay_microseconds },
    instance_group: [{ count: cfg.export.instances, kind: 'KIND_CPU' }],
    // gnnctl serve's per-input parameters (Triton ignores unknown parameters): padding, what an omitted
    // input means, and the longest sequence the model was distilled with.
    parameters: Object.fromEntries([
      ...inputs.filter((i) => i.sequence && i.padValue !== undefined).map((i) => [`pad_value:${i.name}`, { string_value: i.padValue! }]),
      ...inputs.filter((i) => i.missingValue !== undefined).map((i) => [`missing_value:${i.name}`, { string_value: i.missingValue! }]),
      ...inputs.filter((i) => i.maxLength !== undefined).map((i) => [`max_sequence_length:${i.name}`, { string_value: String(i.maxLength) }]),
    ]),
  };
}

/** Embedding files per key table: given (newest snapshot per table) or computed now with the base run. */
async function embeddingSources(opts: ExportOptions, cfg: Config, manifest: DistillManifest, spec: StudentSpec): Promise<EmbeddingSource[]> {
  const tables = [...new Set(spec.embeddings.map((k) => k.target))];
  const sources: EmbeddingSource[] = [];
  if (!opts.embeddings?.length) {
    for (const table of tables) {
      const r = await embed({ cfg, run: manifest.base_run, table, mode: 'exact', cwd: opts.cwd });
      sources.push(await describeFiles(table, [r.path]));
    }
  } else {
    const files = opts.embeddings.flatMap((p) => embeddingFiles(p));
    const meta = await Promise.all(files.map(async (f) => ({ f, m: await parquetMetadata(f) })));
    for (const table of tables) {
      const mine = meta.filter((x) => x.m.table === table);
      if (!mine.length) throw new DataError(`no embeddings of ${table} among ${opts.embeddings.join(', ')}`, { where: '--embeddings', hint: `embed it: gnnctl embed --run ${manifest.base_run} --table ${table}` });
      const newest = mine.map((x) => x.m.anchor_time ?? '').sort().pop()!;
      sources.push(await describeFiles(table, mine.filter((x) => x.m.anchor_time === newest).map((x) => x.f)));
    }
  }
  for (const s of sources) {
    const k = spec.embeddings.find((e) => e.target === s.table)!;
    if (s.fingerprint !== manifest.graph.schema_fingerprint) {
      throw new ArtifactError(`version skew: embeddings of ${s.table} (${s.files[0]}) have graph fingerprint ${s.fingerprint}, the distilled run ${manifest.id} has ${manifest.graph.schema_fingerprint}`, {
        hint: 'embed with a run trained on the same data schema, or re-run distill',
      });
    }
    if (s.dim !== k.dim) {
      throw new ArtifactError(`version skew: embeddings of ${s.table} have dimension ${s.dim}, the distilled run expects ${k.dim}`, { where: s.files[0], hint: `use embeddings of the base run ${manifest.base_run}` });
    }
    if (s.runId !== manifest.base_run) {
      throw new ArtifactError(`version skew: embeddings of ${s.table} come from run ${s.runId}, the distilled run was trained on embeddings of ${manifest.base_run}`, {
        where: s.files[0],
        hint: `embed with ${manifest.base_run}, or distill again from ${s.runId}`,
      });
    }
  }
  return sources;
}

async function parquetMetadata(file: string): Promise<Record<string, string>> {
  return withDuck(async ({ conn }) => {
    const rows = await queryRows<{ k: string; v: string }>(conn, `SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${lit(file)})`);
    return Object.fromEntries(rows.filter((r) => r.k !== 'ARROW:schema').map((r) => [r.k, r.v]));
  });
}

async function describeFiles(table: string, files: string[]): Promise<EmbeddingSource> {
  const m = await parquetMetadata(files[0]!);
  if (!m.run_id || !m.graph_fingerprint) throw new DataError(`${files[0]} is not an embedding file written by gnnctl (no run_id/graph_fingerprint metadata)`, { where: '--embeddings' });
  return { table, files, anchor: m.anchor_time ?? '', runId: m.run_id, fingerprint: m.graph_fingerprint, dim: Number(m.dim), key: m.key ?? '' };
}

/** Primary keys of tables in node order (the ids the same-entity flags compare). */
async function targetKeys(graph: Graph, tables: string[]): Promise<Record<string, Vocabulary>> {
  const out: Record<string, Vocabulary> = {};
  for (const t of tables) {
    const pk = graph.manifest.schema.tables[t]!.primary_key!;
    const col = arrow.tableFromIPC(
      pq.readParquet(new Uint8Array(readFileSync(join(graph.dir, graph.manifest.tables[t]!.rows_file))), { columns: [pk.column] }).intoIPCStream(),
    ).getChild(pk.column)!;
    const vals = Array.from(col as Iterable<unknown>);
    out[t] = elemTypeOf(pk.type) === 'INT64' ? vals.map((v) => BigInt(v as number | bigint)) : vals.map(String);
  }
  return out;
}

/** TF.js student vs onnxruntime on the newest fact rows of the data (entity tasks: the newest entities at the newest time). */
async function selfCheck(cfg: Config, graph: Graph, spec: StudentSpec, runDir: string, modelPath: string, entities: (EntityTable | EntityRows)[], n: number, store?: StoreEntityInput[]): Promise<ParityReport> {
  const f = graph.table(spec.fact_table);
  const count = Math.min(n, f.rows);
  const nodes = Int32Array.from({ length: count }, (_, i) => f.rows - count + i);
  const anchors = spec.time_column ? undefined : new Float64Array(count).fill(graph.manifest.time_range?.[1] ?? 0);
  const student = new StudentModel(spec, 0, 0);
  try {
    const { index, blob } = loadWeights(runDir);
    student.params.load(index, blob);
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation?.real_time_offset ?? 0, nodes, entities, anchors);
    if (store) requests.extra = addStoreParityInputs(requests, data.embeddings, store);
    // up to 520 batch-1 runs: 20 warm-up, then 500 timed for the latency figure
    const report = await checkParity(modelPath, spec, student, graph, requests, data, outputName(spec.output.kind), { batch: 256, singles: 520 });
    if (!(report.max_abs_diff <= 1e-4) || report.non_finite > 0 || !(report.max_batch_diff <= 1e-5)) {
      throw new ArtifactError(`the exported model disagrees with the trained one (max |Δ| ${report.max_abs_diff}, batch |Δ| ${report.max_batch_diff}, non-finite ${report.non_finite})`, {
        hint: 'this is a bug in gnnctl export; please report it with the run folder',
      });
    }
    return report;
  } finally {
    student.dispose();
  }
}

function readme(spec: StudentSpec, name: string, version: number, embeddings: { table: string; anchor_time: string; rows: number }[], storage: { quantize: Quantize; externalData: boolean }): string {
  const inputs = requestInputs(spec);
  const sample = {
    inputs: inputs.map((i) => ({
      name: i.name,
      datatype: tritonType(i.elemType).replace('TYPE_', '').replace('FP32', 'FP32').replace('STRING', 'BYTES'),
      shape: i.sequence ? [1, 2, 1] : [1, 1],
      data: sampleData(i.elemType, i.sequence ? 2 : 1, i.name),
    })),
  };
  return [
    `# ${name} (version ${version})`,
    '',
    spec.time_column
      ? `Distilled gnnctl model for task \`${spec.task}\`: one prediction per \`${spec.fact_table}\` row from the row's own`
      : `Distilled gnnctl model for task \`${spec.task}\`: one prediction per \`${spec.fact_table}\` entity at \`anchor_time\` from its own`,
    'fields, precomputed entity embeddings (part of the model; unknown keys get a learned fallback) and the',
    'entity\'s most recent interactions. Served by NVIDIA Triton (onnxruntime backend) or `gnnctl serve`.',
    '',
    '## Inputs',
    '',
    '| name | datatype | shape | meaning |',
    '|---|---|---|---|',
    ...inputs.map((i) => `| \`${i.name}\` | ${tritonType(i.elemType).replace('TYPE_', '').replace('STRING', 'BYTES')} | ${i.sequence ? '[batch, seq, 1]' : '[batch, 1]'} | ${i.doc} |`),
    '',
    `Timestamps are INT64 nanoseconds since the epoch. Sequence inputs hold the last interactions (any length,`,
    'including 0); all sequence inputs of one request have the same length.',
    '',
    '## Output',
    '',
    `\`${outputName(spec.output.kind)}\` FP32 [batch, 1]: ${objectiveFor(spec.output.kind).outputMeaning}.`,
    '',
    '## Embeddings',
    '',
    ...embeddings.map((e) => `- ${e.table}: ${e.rows} rows, anchor ${e.anchor_time}`),
    '',
    storage.quantize === 'int8' ? 'Stored as INT8 with a FLOAT scale per row (`gnnctl export --quantize int8`); manifest.json gives the score and AUROC change against FLOAT32.' : 'Stored as FLOAT32.',
    storage.externalData
      ? 'The tables, and the hashed key indexes that map keys to their rows (onnxruntime\'s `com.microsoft.MurmurHash3`, in every onnxruntime build), are ONNX external data in `model.onnx.data`, next to model.onnx: keep the two files together and load the model by path (onnxruntime resolves the data file against the model\'s folder; Triton does so from the version folder).'
      : 'The tables are inside model.onnx (`gnnctl export --external-data always` moves them to `model.onnx.data`).',
    '',
    '## Sample request (KServe V2)',
    '',
    '```json',
    JSON.stringify(sample, null, 1),
    '```',
    '',
    `    curl -s localhost:8000/v2/models/${name}/infer -d @request.json`,
    '',
  ].join('\n');
}

function sampleData(t: string, n: number, name: string): unknown[] {
  const now = 1_600_000_000_000_000_000;
  if (t === 'STRING') return Array.from({ length: n }, (_, i) => `key-${i}`);
  if (t === 'INT64') return Array.from({ length: n }, (_, i) => (/time|t_dat|date/.test(name) ? now - i * 86_400_000_000_000 : 1));
  return Array.from({ length: n }, (_, i) => 0.05 + 0.01 * i);
}
