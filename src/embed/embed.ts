/**
 * `embed`: the embedding of every entity of a table at one anchor time, from a trained run, into
 * `embeddings.parquet` (or one part file per shard). The daily cron job: fast (exact layer-wise inference
 * by default), restartable (the output appears only when complete), deterministic (same inputs → same
 * file), and refusing a run whose graph schema no longer matches the data.
 */
import { round } from '../core/number.js';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import { lit, q, withDuck } from '../data/duck.js';
import { ArtifactError, DataError, UsageError, suggest } from '../core/errors.js';
import { buildGraph } from '../graph/build.js';
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
import { Progress, formatRate } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { embedExact, tableDepth } from './layerwise.js';
import { readColumnVector, writeEmbeddings, type EmbeddingChunk } from './writer.js';

export type EmbedMode = 'exact' | 'sampled';

export interface EmbedOptions {
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
  /** entities per computation chunk and row group */
  chunkSize?: number;
  cwd?: string;
}

export interface EmbedResult {
  path: string;
  rows: number;
  dim: number;
  anchor_time: string;
  seconds: number;
  /** seconds spent computing embeddings (graph loading and writing excluded) */
  compute_seconds: number;
  entities_per_s: number;
  mode: EmbedMode;
  table: string;
  run_id: string;
  shard: string | null;
}

/** What the parquet metadata and the folder manifest record about an embedding file. */
export interface EmbeddingMetadata {
  run_id: string;
  table: string;
  key: string;
  dim: number;
  anchor_time: string;
  mode: EmbedMode;
  graph_fingerprint: string;
  data_fingerprint: string;
  gnnctl: string;
}

/** `artifacts/embeddings/<run-id>/<anchor>/<table>/`: one folder per snapshot and table (a run may embed several). */
export function defaultEmbeddingDir(artifactsDir: string, runId: string, anchor: number, table: string): string {
  return join(artifactsDir, 'embeddings', runId, isoSeconds(anchor).replace(/[-:]/g, ''), table);
}

export async function embed(opts: EmbedOptions): Promise<EmbedResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  const mode = opts.mode ?? 'exact';
  await selectBackend(opts.backend ?? 'auto');
  const run = resolveRun(cfg.artifactsDir, opts.run, { kind: 'train', cwd: opts.cwd });
  const manifest = readManifest<TrainManifest>(run.dir);
  if (manifest.status !== 'complete' && manifest.status !== 'interrupted') {
    throw new ArtifactError(`run ${run.id} is ${manifest.status}; it has no finished model to embed with`, { hint: 'use a complete run (gnnctl runs list)' });
  }
  const built = await buildGraph(cfg);
  const graph = Graph.load(built.dir);
  checkSchema(run, manifest, graph, opts.allowSchemaDrift);

  const model = DeepModel.load(run.dir, graph);
  try {
    const table = opts.table ?? model.spec.root;
    if (!(table in graph.tables)) throw new UsageError(`unknown table "${table}"`, { where: '--table', hint: suggest(table, Object.keys(graph.tables)) });
    const depth = tableDepth(model, table);
    if (depth === null) {
      throw new UsageError(`the model of run ${run.id} has no representation of ${table} above its input layer`, {
        where: '--table',
        hint: `tables it embeds: ${[...new Set(model.plan.slots.filter((s) => s.depth < model.spec.layers).map((s) => s.type))].join(', ')}`,
      });
    }
    const pk = graph.manifest.schema.tables[table]!.primary_key;
    if (!pk) throw new DataError(`table ${table} has no primary key, so its embeddings could not be joined back to anything`, { hint: `declare data.tables.${table}.primary_key` });

    const range = graph.manifest.time_range;
    const anchor = !opts.anchorTime || opts.anchorTime === 'latest' ? (range ? range[1] : Date.now() / 1000) : parseTime(opts.anchorTime, '--anchor-time');
    // Entities that exist at the anchor: every row, or (tables with a time column, node ids in time order) a prefix.
    const time = graph.table(table).time;
    const existing = time ? upper(time, anchor) : graph.table(table).rows;
    const lo = opts.shard ? Math.floor((existing * opts.shard.index) / opts.shard.count) : 0;
    const hi = opts.shard ? Math.floor((existing * (opts.shard.index + 1)) / opts.shard.count) : existing;

    const outDir = opts.out ? dirname(resolve(opts.cwd ?? process.cwd(), opts.out)) : defaultEmbeddingDir(cfg.artifactsDir, run.id, anchor, table);
    const fileName = opts.out
      ? resolve(opts.cwd ?? process.cwd(), opts.out)
      : join(outDir, opts.shard ? `part-${String(opts.shard.index).padStart(5, '0')}-of-${String(opts.shard.count).padStart(5, '0')}.parquet` : 'embeddings.parquet');
    mkdirSync(outDir, { recursive: true });

    const meta: EmbeddingMetadata = {
      run_id: run.id,
      table,
      key: pk.column,
      dim: model.spec.channels,
      anchor_time: isoSeconds(anchor),
      mode,
      // The schema the run's encoders were fitted on (applied here to today's compatible data).
      graph_fingerprint: manifest.graph.schema_fingerprint,
      data_fingerprint: graph.manifest.fingerprint,
      gnnctl: VERSION,
    };
    const keys = await readKeys(graph, table, pk.column, lo, hi, fileName);
    const chunkSize = opts.chunkSize ?? 65536;
    const C = model.spec.channels;
    let computeMs = 0;
    const progress = new Progress();
    progress.begin(`embed ${table} (${mode})`, hi - lo);
    const seed = manifest.seed;
    async function* chunks(): AsyncGenerator<EmbeddingChunk> {
      // No entity at the anchor (or an empty shard): one empty chunk still gives the file its schema
      // (the Parquet writer fails on a stream without any batch).
      if (hi === lo) yield { keys: keys.slice(0, 0), embeddings: new Float32Array(0) };
      for (let start = lo; start < hi; start += chunkSize) {
        const end = Math.min(hi, start + chunkSize);
        const nodes = Int32Array.from({ length: end - start }, (_, i) => start + i);
        const t = performance.now();
        const emb = mode === 'exact' ? embedExact(model, table, depth!, nodes, anchor, model.spec.sampling === 'uniform' ? cfg.taskSpecs[manifest.task]?.model.exact_degree_cap ?? 1000 : 0) : model.embedSampled(table, depth!, nodes, anchor, (seed * 1000003 + start) >>> 0);
        computeMs += performance.now() - t;
        for (let i = 0; i < emb.length; i++) {
          if (!Number.isFinite(emb[i])) throw new ArtifactError(`non-finite embedding value for ${table} node ${start + Math.floor(i / C)}`, { hint: 'the model produced NaN/inf; retrain or check the data for extreme values' });
        }
        progress.update(end - lo);
        yield { keys: keys.slice(start - lo, end - lo), embeddings: emb };
      }
    }
    const { rows } = await writeEmbeddings(fileName, chunks(), {
      keyName: pk.column,
      dim: C,
      anchorTime: anchor,
      rowGroupSize: chunkSize,
      metadata: Object.fromEntries(Object.entries({ ...meta, shard: opts.shard ? `${opts.shard.index}/${opts.shard.count}` : '' }).map(([k, v]) => [k, String(v)])),
    });
    const seconds = (performance.now() - t0) / 1000;
    progress.end(`embedded ${rows.toLocaleString('en-US')} ${table} in ${seconds.toFixed(1)}s (${formatRate(rows / Math.max(1e-9, computeMs / 1000))} entities/s compute)`);
    writeJsonAtomic(join(outDir, 'manifest.json'), {
      kind: 'embeddings',
      ...meta,
      run_dir: run.dir,
      graph_dir: built.dir,
      shards: opts.shard?.count ?? 1,
      rows_total: existing,
      files: opts.shard ? 'part-*.parquet' : 'embeddings.parquet',
    });
    return {
      path: fileName,
      rows,
      dim: C,
      anchor_time: meta.anchor_time,
      seconds: round(seconds, 3),
      compute_seconds: round(computeMs / 1000, 3),
      entities_per_s: Math.round(rows / Math.max(1e-9, computeMs / 1000)),
      mode,
      table,
      run_id: run.id,
      shard: opts.shard ? `${opts.shard.index}/${opts.shard.count}` : null,
    };
  } finally {
    model.dispose();
  }
}

/**
 * Refuses a run that cannot read today's graph, naming what changed; changes the run does not depend on
 * (new columns, columns it never read) are noted and ignored. See model/compatibility.ts.
 */
export function checkSchema(run: { id: string; dir: string }, manifest: TrainManifest, graph: Graph, allowDrift = false): void {
  const runId = run.id;
  if (manifest.graph.schema_fingerprint === graph.manifest.schema_fingerprint) return;
  const spec = readModelJson<FeatureSpec>(run.dir, 'features.json');
  const { breaking, notes } = compatibility(manifest.graph_schema as GraphSchema, spec, graph.manifest.schema);
  for (const n of notes) info(`run ${runId}: ${n}`);
  if (breaking.length === 0) return;
  const msg = `run ${runId} cannot read the current data (graph schema ${manifest.graph.schema_fingerprint} → ${graph.manifest.schema_fingerprint}): ${breaking.join('; ')}`;
  if (allowDrift) {
    warn(`${msg} (--allow-schema-drift: embedding anyway; missing columns read as missing)`);
    return;
  }
  throw new ArtifactError(msg, { hint: 'retrain on the current data, or pass --allow-schema-drift if the change is harmless' });
}

/** Keys of nodes [lo, hi) of a table as an Arrow vector, via a small Parquet file DuckDB writes. */
async function readKeys(graph: Graph, table: string, key: string, lo: number, hi: number, near: string) {
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


