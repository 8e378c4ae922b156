/**
 * One entity table of a trained run at one anchor time: what `embed` and `predict` share. Resolves the run
 * and refuses an unfinished one or a drifted schema, loads the graph and model, picks the entities that
 * exist at the anchor (and the shard's slice of them), names the output file, reads their keys, and
 * yields their representations chunk by chunk (exact layer-wise by default). The two commands differ only
 * in what they write per entity.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type * as arrow from 'apache-arrow';
import { selectBackend, type BackendName, type BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import { lit, q, withDuck } from '../data/duck.js';
import { ArtifactError, DataError, UsageError, suggest } from '../core/errors.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import type { GraphSchema } from '../artifacts/graph_manifest.js';
import { readManifest, readModelJson, resolveRun } from '../artifacts/run_store.js';
import { parseTime } from '../task/split.js';
import { compatibility } from '../model/compatibility.js';
import { DeepModel } from '../model/deep_model.js';
import type { FeatureSpec } from '../model/features.js';
import type { TrainManifest } from '../train/trainer.js';
import { tempSibling, writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { info, warn } from '../core/log.js';
import { formatRate, type Progress } from '../core/progress.js';
import { round } from '../core/number.js';
import { embedExact, tableDepth } from './layerwise.js';
import { EmbedPool, embedWorkers } from './pool.js';
import { PARQUET_FILE_LIMIT_BYTES, readColumnVector, writeEmbeddings, type EmbeddingChunk, type EntityColumn } from './writer.js';

/** Chunks queued on the workers at once (their outputs are held until written). */
const AHEAD = 2;

/** 'auto' gives a worker at least this many rows: starting one (TF.js, the weights) costs about a second. */
const MIN_ROWS_PER_WORKER = 4096;

export type EmbedMode = 'exact' | 'sampled';

export interface SnapshotOptions {
  cfg: Config;
  run: string;
  table?: string;
  /** ISO time or 'latest' (the newest time in the data) */
  anchorTime?: string;
  out?: string;
  shard?: { index: number; count: number };
  mode?: EmbedMode;
  allowSchemaDrift?: boolean;
  backend?: BackendRequest;
  /** entities per computation chunk (and at most per row group: see writer.ts) */
  chunkSize?: number;
  /** worker threads computing the representations ('auto': 2 on wasm/cpu with 2+ cores); outputs do not depend on it */
  workers?: number | 'auto';
  cwd?: string;
}

/** What differs between the commands that write a snapshot. */
export interface SnapshotLayout {
  /** the verb in messages ("embed", "predict") */
  verb: string;
  /** artifact folder under the artifacts dir ("embeddings", "predictions") */
  folder: string;
  /** file name of an unsharded output ("embeddings.parquet") */
  file: string;
  /** the verb's past tense in the summary line ("embedded", "predicted") */
  done: string;
  /** refuses a table this command cannot write for this model (a UsageError naming --table) */
  checkTable?: (table: string, model: DeepModel, run: { id: string; manifest: TrainManifest }) => void;
  /** the time `--anchor-time latest` means (default: the newest time in any table) */
  latest?: (graph: Graph, run: { id: string; manifest: TrainManifest }) => number;
}

export interface Snapshot {
  runId: string;
  runDir: string;
  manifest: TrainManifest;
  graphDir: string;
  graph: Graph;
  model: DeepModel;
  table: string;
  /** depth of the table in the model's training tree */
  depth: number;
  /** primary-key column of the table */
  key: string;
  /** epoch seconds */
  anchor: number;
  mode: EmbedMode;
  /** the TF.js backend computing on this thread */
  backend: BackendName;
  /** entities existing at the anchor (all shards) */
  existing: number;
  /** this shard's node range [lo, hi) */
  lo: number;
  hi: number;
  outDir: string;
  path: string;
  shard: string | null;
  layout: SnapshotLayout;
}

/** `artifacts/<folder>/<run-id>/<anchor>/<table>/`: one folder per snapshot and table (a run may embed several). */
export function defaultSnapshotDir(artifactsDir: string, folder: string, runId: string, anchor: number, table: string): string {
  return join(artifactsDir, folder, runId, isoSeconds(anchor).replace(/[-:]/g, ''), table);
}

/** Resolves everything a snapshot needs; the caller disposes `model` (see `withSnapshot`). */
export async function openSnapshot(opts: SnapshotOptions, layout: SnapshotLayout): Promise<Snapshot> {
  const { cfg } = opts;
  const mode = opts.mode ?? 'exact';
  const backend = (await selectBackend(opts.backend ?? 'auto')).name;
  const run = resolveRun(cfg.artifactsDir, opts.run, { kind: 'train', cwd: opts.cwd });
  const manifest = readManifest<TrainManifest>(run.dir);
  if (manifest.status !== 'complete' && manifest.status !== 'interrupted') {
    throw new ArtifactError(`run ${run.id} is ${manifest.status}; it has no finished model to ${layout.verb} with`, { hint: 'use a complete run (gnnctl runs list)' });
  }
  const built = await buildGraph(cfg, { fit: runFit(run.dir, manifest) });
  const graph = Graph.load(built.dir);
  checkSchema(run, manifest, graph, opts.allowSchemaDrift, layout.verb);

  const model = DeepModel.load(run.dir, graph);
  try {
    const table = opts.table ?? model.spec.root;
    if (!(table in graph.tables)) throw new UsageError(`unknown table "${table}"`, { where: '--table', hint: suggest(table, Object.keys(graph.tables)) });
    layout.checkTable?.(table, model, { id: run.id, manifest });
    const depth = tableDepth(model, table);
    if (depth === null) {
      throw new UsageError(`the model of run ${run.id} has no representation of ${table} above its input layer`, {
        where: '--table',
        hint: `tables it embeds: ${[...new Set(model.plan.slots.filter((s) => s.depth < model.spec.layers).map((s) => s.type))].join(', ')}`,
      });
    }
    const pk = graph.manifest.schema.tables[table]!.primary_key;
    if (!pk) throw new DataError(`table ${table} has no primary key, so its rows could not be joined back to anything`, { hint: `declare data.tables.${table}.primary_key` });

    const range = graph.manifest.time_range;
    const latest = (): number => layout.latest?.(graph, { id: run.id, manifest }) ?? (range ? range[1] : Date.now() / 1000);
    const anchor = !opts.anchorTime || opts.anchorTime === 'latest' ? latest() : parseTime(opts.anchorTime, '--anchor-time');
    // Entities that exist at the anchor: every row, or (tables with a time column, node ids in time order) a prefix.
    const existing = existingAt(graph, table, anchor);
    const lo = opts.shard ? Math.floor((existing * opts.shard.index) / opts.shard.count) : 0;
    const hi = opts.shard ? Math.floor((existing * (opts.shard.index + 1)) / opts.shard.count) : existing;

    const cwd = opts.cwd ?? process.cwd();
    const outDir = opts.out ? dirname(resolve(cwd, opts.out)) : defaultSnapshotDir(cfg.artifactsDir, layout.folder, run.id, anchor, table);
    const path = opts.out
      ? resolve(cwd, opts.out)
      : join(outDir, opts.shard ? `part-${String(opts.shard.index).padStart(5, '0')}-of-${String(opts.shard.count).padStart(5, '0')}.parquet` : layout.file);
    mkdirSync(outDir, { recursive: true });
    return {
      runId: run.id,
      runDir: run.dir,
      manifest,
      graphDir: built.dir,
      graph,
      model,
      table,
      depth,
      key: pk.column,
      anchor,
      mode,
      backend,
      existing,
      lo,
      hi,
      outDir,
      path,
      shard: opts.shard ? `${opts.shard.index}/${opts.shard.count}` : null,
      layout,
    };
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/** The run, graph and snapshot fields every snapshot file's metadata and folder manifest record. */
export function snapshotMetadata(s: Snapshot, version: string) {
  return {
    run_id: s.runId,
    table: s.table,
    key: s.key,
    anchor_time: isoSeconds(s.anchor),
    mode: s.mode,
    // The schema the run's encoders were fitted on (applied here to today's compatible data).
    graph_fingerprint: s.manifest.graph.schema_fingerprint,
    data_fingerprint: s.graph.manifest.fingerprint,
    gnnctl: version,
  };
}

/** Parquet key-value metadata: every value as text, plus the shard ('' when unsharded). */
export function kvMetadata(meta: object, shard: string | null): Record<string, string> {
  return Object.fromEntries(Object.entries({ ...meta, shard: shard ?? '' }).map(([k, v]) => [k, String(v)]));
}

export interface RepresentationChunk {
  /** primary-key values of the chunk's entities */
  keys: arrow.Vector;
  /** first node id of the chunk */
  start: number;
  /** [rows × channels], all finite */
  embeddings: Float32Array;
}

/**
 * The shard's entities' representations, one chunk at a time (computed as the writer pulls them, at most
 * `AHEAD` chunks ahead with workers, so memory stays bounded). An empty shard yields one empty chunk: a
 * Parquet stream needs a batch for its schema.
 */
export async function* representations(s: Snapshot, opts: SnapshotOptions, timing: { computeMs: number; workers?: number }, progress: Progress): AsyncGenerator<RepresentationChunk> {
  const { model, table, depth, lo, hi, anchor } = s;
  const chunkSize = opts.chunkSize ?? 65536;
  const C = model.spec.channels;
  const degreeCap = exactDegreeCap(opts.cfg, s);
  // 'auto' keeps a small table on this thread (starting workers costs more than it saves).
  const auto = opts.workers === undefined || opts.workers === 'auto';
  const workers = auto ? Math.min(embedWorkers('auto', s.backend), Math.ceil((hi - lo) / MIN_ROWS_PER_WORKER)) : (opts.workers as number);
  // DuckDB reads the keys while the workers start (load TF.js and the weights, build the sampling tree and
  // the static encodings) and compute the first chunk: only writing needs the keys.
  const reading = readKeys(s);
  reading.catch(() => {});
  const prepare = s.mode === 'sampled' ? { table, depth, seeds: hi - lo } : undefined;
  let pool: EmbedPool | null;
  try {
    pool = workers > 1 ? await EmbedPool.start(workers, model, opts.backend ?? 'auto', prepare) : null;
  } catch (e) {
    await reading.catch(() => {});
    throw e;
  }
  timing.workers = pool?.workers ?? 1;
  try {
    const seedOf = (start: number): number => (s.manifest.seed * 1000003 + start) >>> 0;
    // Compute time is the time some chunk is computing (chunks overlap with workers).
    let busy = 0;
    let busySince = 0;
    const compute = async (start: number): Promise<Float32Array> => {
      const end = Math.min(hi, start + chunkSize);
      const nodes = Int32Array.from({ length: end - start }, (_, i) => start + i);
      if (busy++ === 0) busySince = performance.now();
      try {
        if (pool) return s.mode === 'exact' ? await pool.exact(table, depth, nodes, anchor, degreeCap, C) : await pool.sampled(table, depth, nodes, anchor, seedOf(start), C);
        return s.mode === 'exact' ? embedExact(model, table, depth, nodes, anchor, degreeCap) : model.embedSampled(table, depth, nodes, anchor, seedOf(start));
      } finally {
        if (--busy === 0) timing.computeMs += performance.now() - busySince;
      }
    };
    // With workers, the next chunks are queued on the workers while the caller writes this one, so a worker
    // goes from one chunk to the next without waiting for this thread (one chunk ahead left them idle at
    // every chunk boundary, and while DuckDB read the keys); AHEAD chunks at most, so memory stays bounded.
    const queued: Promise<Float32Array>[] = [];
    let next = lo;
    const fill = (depthAhead: number): void => {
      while (next < hi && queued.length < depthAhead) {
        const p = compute(next);
        // A chunk computing ahead may fail while the caller is stopping (a write error): never an unhandled rejection.
        p.catch(() => {});
        queued.push(p);
        next = Math.min(hi, next + chunkSize);
      }
    };
    if (pool) fill(AHEAD);
    const keys = await reading;
    if (hi === lo) yield { keys: keys.slice(0, 0), start: lo, embeddings: new Float32Array(0) };
    for (let from = lo; from < hi; from += chunkSize) {
      const end = Math.min(hi, from + chunkSize);
      fill(pool ? AHEAD : 1);
      const emb = await queued.shift()!;
      if (pool) fill(AHEAD);
      for (let i = 0; i < emb.length; i++) {
        if (!Number.isFinite(emb[i])) throw new ArtifactError(`non-finite embedding value for ${table} node ${from + Math.floor(i / C)}`, { hint: 'the model produced NaN/inf; retrain or check the data for extreme values' });
      }
      progress.update(end - lo);
      yield { keys: keys.slice(from - lo, end - lo), start: from, embeddings: emb };
    }
  } finally {
    await pool?.close();
  }
}

/** Neighbours exact mode aggregates per node beyond the fanout: the task's `exact_degree_cap` for uniform-sampled runs (0: `last` runs read the fanout). */
export function exactDegreeCap(cfg: Config, s: Pick<Snapshot, 'model' | 'manifest'>): number {
  return s.model.spec.sampling === 'uniform' ? cfg.taskSpecs[s.manifest.task]?.model.exact_degree_cap ?? 1000 : 0;
}

/**
 * Refuses, before anything is computed, a file that would pass the Parquet writer's 4 GiB (an embedding
 * costs 4 bytes a channel; 16 bytes a row cover the key and the other columns, Snappy barely shrinks
 * floats), naming the shard count that fits. The writer checks the real size too.
 */
export function checkFileSize(s: Pick<Snapshot, 'lo' | 'hi' | 'existing' | 'table' | 'path'> & { channels: number }, columns: readonly EntityColumn[]): void {
  const rowBytes = 16 + (columns.includes('embedding') ? 4 * s.channels : 0) + (columns.includes('prediction') ? 4 : 0);
  const bytes = (s.hi - s.lo) * rowBytes;
  const budget = 0.9 * PARQUET_FILE_LIMIT_BYTES;
  if (bytes < budget) return;
  const shards = Math.ceil(((s.existing * rowBytes) / budget));
  throw new UsageError(`${(s.hi - s.lo).toLocaleString('en-US')} ${s.table} rows × ${rowBytes} bytes would make ${s.path} about ${(bytes / 2 ** 30).toFixed(1)} GiB, past the 4 GiB one Parquet file can hold here`, {
    where: '--shard',
    hint: `write it in shards: --shard i/${shards} for i = 0…${shards - 1} (the readers of a snapshot folder take its part-*.parquet files together)`,
  });
}

/** What `embed` and `predict` report about the file they wrote (snake_case, for --json). */
export interface SnapshotFigures {
  path: string;
  rows: number;
  anchor_time: string;
  seconds: number;
  /** seconds spent computing (graph loading and writing excluded) */
  compute_seconds: number;
  entities_per_s: number;
  /** threads that computed (the main thread alone: 1) */
  workers: number;
  mode: EmbedMode;
  table: string;
  run_id: string;
  shard: string | null;
}

/**
 * Writes the snapshot's file atomically (the key first, then `columns`), then the folder's manifest, and
 * ends the progress line. `meta` goes into the file's key-value metadata and the manifest.
 */
export async function writeSnapshot(
  s: Snapshot,
  opts: SnapshotOptions,
  chunks: AsyncIterable<EmbeddingChunk>,
  w: { meta: ReturnType<typeof snapshotMetadata>; columns?: EntityColumn[]; timing: { computeMs: number; workers?: number }; progress: Progress; t0: number },
): Promise<SnapshotFigures> {
  checkFileSize({ ...s, channels: s.model.spec.channels }, w.columns ?? ['embedding', 'anchor_time']);
  const { rows } = await writeEmbeddings(s.path, chunks, {
    keyName: s.key,
    dim: s.model.spec.channels,
    anchorTime: s.anchor,
    rowGroupSize: opts.chunkSize ?? 65536,
    columns: w.columns,
    metadata: kvMetadata(w.meta, s.shard),
  });
  const seconds = (performance.now() - w.t0) / 1000;
  const rate = rows / Math.max(1e-9, w.timing.computeMs / 1000);
  w.progress.end(`${s.layout.done} ${rows.toLocaleString('en-US')} ${s.table} in ${seconds.toFixed(1)}s (${formatRate(rate)} entities/s compute)`);
  writeJsonAtomic(join(s.outDir, 'manifest.json'), {
    kind: s.layout.folder,
    ...w.meta,
    run_dir: s.runDir,
    graph_dir: s.graphDir,
    shards: opts.shard?.count ?? 1,
    rows_total: s.existing,
    files: opts.shard ? 'part-*.parquet' : s.layout.file,
  });
  return {
    path: s.path,
    rows,
    anchor_time: w.meta.anchor_time,
    seconds: round(seconds, 3),
    compute_seconds: round(w.timing.computeMs / 1000, 3),
    entities_per_s: Math.round(rate),
    workers: w.timing.workers ?? 1,
    mode: s.mode,
    table: s.table,
    run_id: s.runId,
    shard: s.shard,
  };
}

/**
 * Refuses a run that cannot read today's graph, naming what changed; changes the run does not depend on
 * (new columns, columns it never read) are noted and ignored. See model/compatibility.ts.
 */
export function checkSchema(run: { id: string; dir: string }, manifest: TrainManifest, graph: Graph, allowDrift = false, verb = 'embed'): void {
  const runId = run.id;
  if (manifest.graph.schema_fingerprint === graph.manifest.schema_fingerprint) return;
  const spec = readModelJson<FeatureSpec>(run.dir, 'features.json');
  const { breaking, notes } = compatibility(manifest.graph_schema as GraphSchema, spec, graph.manifest.schema);
  for (const n of notes) info(`run ${runId}: ${n}`);
  if (breaking.length === 0) return;
  const msg = `run ${runId} cannot read the current data (graph schema ${manifest.graph.schema_fingerprint} → ${graph.manifest.schema_fingerprint}): ${breaking.join('; ')}`;
  if (allowDrift) {
    warn(`${msg} (--allow-schema-drift: ${verb === 'embed' ? 'embedding' : `${verb}ing`} anyway; missing columns read as missing)`);
    return;
  }
  throw new ArtifactError(msg, { hint: 'retrain on the current data, or pass --allow-schema-drift if the change is harmless' });
}

/** Keys of the shard's nodes as an Arrow vector, via a small Parquet file DuckDB writes. */
async function readKeys(s: Snapshot): Promise<arrow.Vector> {
  return readTableKeys(s.graph, s.table, s.key, s.lo, s.hi, s.path);
}

/**
 * Primary-key values of a table's nodes [lo, hi) in node order as an Arrow vector (integer keys keep their
 * type, others are VARCHAR), through a temporary Parquet file beside `near`.
 */
export async function readTableKeys(graph: Graph, table: string, key: string, lo: number, hi: number, near: string): Promise<arrow.Vector> {
  const tmp = tempSibling(`${near}.keys.parquet`);
  const type = graph.manifest.schema.tables[table]!.primary_key!.type;
  const expr = /^(VARCHAR|BIGINT|INTEGER|SMALLINT|TINYINT|UBIGINT|UINTEGER)$/.test(type) ? q(key) : `CAST(${q(key)} AS VARCHAR) AS ${q(key)}`;
  try {
    await withDuck(async ({ conn }) => {
      await conn.run(`COPY (SELECT ${expr} FROM read_parquet(${lit(join(graph.dir, graph.manifest.tables[table]!.rows_file))}) WHERE __node >= ${lo} AND __node < ${hi} ORDER BY __node) TO ${lit(tmp)} (FORMAT parquet)`);
    });
    return readColumnVector(new Uint8Array(readFileSync(tmp)), key);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Nodes of a table that exist at an anchor: all rows, or (tables with a time column) a time-ordered prefix. */
export function existingAt(graph: Graph, table: string, anchor: number): number {
  const time = graph.table(table).time;
  return time ? upper(time, anchor) : graph.table(table).rows;
}

function upper(time: Float64Array, t: number): number {
  let lo = 0;
  let hi = time.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (time[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
