/**
 * `refresh`: the daily cron job. Embeds the entities of the deployed model's base run at the newest time
 * in the data and exports them, with the same distilled model, as the next version of the model in the
 * repository — no retraining. A running `gnnctl serve` (or Triton with a polling repository) picks the
 * new version up without a restart.
 *
 * Batch predictions ride the same cadence: each run named with `--predict` (e.g. latest:churn) writes
 * `predictions.parquet` for every entity at the same newest time, in the default predictions folder
 * (`artifacts/predictions/<run>/<anchor>/<table>/`). With `--predict` and nothing exported yet (no version
 * in the repository, no `--run`), refresh writes the predictions only: a churn-scoring job needs no
 * online model.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import type { DistillManifest } from '../distill/distill.js';
import { embed } from '../embed/embed.js';
import { embedIncremental, recordFullSnapshot, type IncrementalResult } from '../embed/incremental.js';
import { predict, type PredictResult } from '../predict/predict.js';
import { ArtifactError } from '../core/errors.js';
import { exportModel } from '../export/export.js';
import { readManifest, readModelJson, resolveRun } from '../artifacts/run_store.js';
import { warn } from '../core/log.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import type { FeatureSpec } from '../model/features.js';
import type { OnlineStoreTarget } from '../artifacts/online_store.js';
import { publishSnapshot } from '../online_store/publish_snapshot.js';
import type { PublishResult } from '../online_store/publisher.js';
import { driftReport, type DriftReport } from './drift.js';

export interface RefreshOptions {
  cfg: Config;
  modelRepository?: string;
  /** distilled run to serve (default: the one the latest version was exported from) */
  run?: string;
  /** trained runs (entity tasks) whose predictions to write at the newest time in the data */
  predict?: string[];
  /** Then publish the new embeddings (and predictions) to the online store (`--publish`). */
  publish?: OnlineStoreTarget;
  /** recompute only the entities whose receptive field saw new rows since the previous snapshot (`--incremental`) */
  incremental?: boolean;
  backend?: BackendRequest;
  cwd?: string;
}

export type RefreshedPredictions = Pick<PredictResult, 'run_id' | 'task' | 'table' | 'path' | 'rows' | 'anchor_time'>[];

export interface RefreshResult {
  model: string;
  version: number;
  previous_version: number | null;
  dir: string;
  distilled_run: string;
  base_run: string;
  embedding_anchor: Record<string, string>;
  embedding_rows: Record<string, number>;
  /** the snapshots embedded for this version, one per entity table */
  embeddings: { table: string; path: string; run_id: string; anchor_time: string; dim: number }[];
  /** what `--publish` wrote to the online store */
  published?: PublishResult[];
  /** `--incremental`: per table, what was recomputed and kept, and the embedding seconds saved against the last full refresh */
  incremental?: IncrementalSummary;
  /** batch predictions written on the same cadence (`--predict`) */
  predictions: RefreshedPredictions;
  /** the base run's feature drift on the data this version was embedded from (reported, not enforced: `gnnctl check` gates on it) */
  drift: DriftReport;
  /** wall seconds per step: where a refresh's time goes (the embedding is the part `--incremental` shrinks) */
  phases: RefreshPhases;
  seconds: number;
}

export interface RefreshPhases {
  predictions: number;
  embed: number;
  export: number;
  drift: number;
}

export interface IncrementalSummary {
  recomputed: number;
  kept: number;
  /** embedding seconds of this refresh, and of the last full one (null: unknown) */
  seconds: number;
  full_refresh_seconds: number | null;
  seconds_saved: number | null;
  tables: IncrementalResult[];
}

/** Totals over the tables of an incremental refresh (the time saved is known only when every table's full time is). */
export function summarizeIncremental(tables: IncrementalResult[]): IncrementalSummary {
  const seconds = round3(tables.reduce((a, t) => a + t.seconds, 0));
  const full = tables.every((t) => t.full_seconds !== null) ? round3(tables.reduce((a, t) => a + t.full_seconds!, 0)) : null;
  const incremental = tables.some((t) => t.kind === 'incremental');
  return {
    recomputed: tables.reduce((a, t) => a + t.recomputed, 0),
    kept: tables.reduce((a, t) => a + t.kept, 0),
    seconds,
    full_refresh_seconds: full,
    seconds_saved: full !== null && incremental ? round3(full - seconds) : null,
    tables,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** What refresh writes when only predictions were asked for and nothing is exported yet. */
export interface PredictionsRefreshResult {
  model: null;
  predictions: RefreshedPredictions;
  published?: PublishResult[];
  seconds: number;
}

/** Each run's predictions at the newest time in the data (the default predictions folder). */
export async function refreshPredictions(opts: Pick<RefreshOptions, 'cfg' | 'predict' | 'backend' | 'cwd'>): Promise<RefreshedPredictions> {
  const out: RefreshedPredictions = [];
  for (const run of opts.predict ?? []) {
    const p = await predict({ cfg: opts.cfg, run, mode: 'exact', backend: opts.backend, cwd: opts.cwd });
    out.push({ run_id: p.run_id, task: p.task, table: p.table, path: p.path, rows: p.rows, anchor_time: p.anchor_time });
  }
  return out;
}

/**
 * The `refresh` command: the model refresh (with any `--predict` predictions), or — asked for predictions
 * with nothing exported yet and no `--run` — the predictions alone.
 */
export async function refreshJob(opts: RefreshOptions): Promise<RefreshResult | PredictionsRefreshResult> {
  const t0 = performance.now();
  const modelDir = join(opts.modelRepository ?? join(opts.cfg.artifactsDir, 'model_repository'), opts.cfg.export.name);
  if (opts.predict?.length && !opts.run && latestVersion(modelDir) === null) {
    const predictions = await refreshPredictions(opts);
    const published = opts.publish ? await publishRefreshed([], predictions, opts.publish) : undefined;
    return { model: null, predictions, ...(published ? { published } : {}), seconds: Math.round((performance.now() - t0) / 10) / 100 };
  }
  const r = await refresh(opts);
  if (!opts.publish) return r;
  return { ...r, published: await publishRefreshed(r.embeddings, r.predictions, opts.publish) };
}

/**
 * Publishes the refreshed snapshots, each as a new version of its keyspace, after the model version is
 * exported: a failed publish leaves the store's previous versions current and fails the job, naming it.
 */
async function publishRefreshed(embeddings: RefreshResult['embeddings'], predictions: RefreshedPredictions, target: OnlineStoreTarget): Promise<PublishResult[]> {
  const out: PublishResult[] = [];
  for (const e of embeddings) out.push(await publishSnapshot({ path: e.path, kind: 'embedding', model: e.table, run_id: e.run_id, anchor_time: e.anchor_time, dim: e.dim }, target));
  for (const p of predictions) out.push(await publishSnapshot({ path: p.path, kind: 'prediction', model: p.task, run_id: p.run_id, anchor_time: p.anchor_time, dim: 0 }, target));
  return out;
}

export async function refresh(opts: RefreshOptions): Promise<RefreshResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  const repo = opts.modelRepository ?? join(cfg.artifactsDir, 'model_repository');
  const name = cfg.export.name;
  const modelDir = join(repo, name);
  const previous = latestVersion(modelDir);
  const phases: RefreshPhases = { predictions: 0, embed: 0, export: 0, drift: 0 };
  let mark = performance.now();
  const lap = (phase: keyof RefreshPhases): void => {
    const now = performance.now();
    phases[phase] = round3((now - mark) / 1000);
    mark = now;
  };
  const predictions = await refreshPredictions(opts);
  lap('predictions');
  let distilledRef = opts.run;
  if (!distilledRef) {
    if (previous === null) {
      throw new ArtifactError(`no exported version of ${name} in ${repo} to refresh`, { hint: 'export one first (gnnctl pipeline or gnnctl export), pass --run with a distilled run, or --predict <run> for batch predictions only' });
    }
    distilledRef = (JSON.parse(readFileSync(join(modelDir, String(previous), 'manifest.json'), 'utf8')) as { distilled_run: string }).distilled_run;
  }
  const distilled = resolveRun(cfg.artifactsDir, distilledRef, { kind: 'distill', cwd: opts.cwd });
  const dm = readManifest<DistillManifest>(distilled.dir);
  const tables = [...new Set((JSON.parse(readFileSync(join(distilled.dir, 'model', 'student.json'), 'utf8')) as { embeddings: { target: string }[] }).embeddings.map((e) => e.target))];
  const files: string[] = [];
  const embeddings: RefreshResult['embeddings'] = [];
  const incremental: IncrementalResult[] = [];
  for (const table of tables) {
    // A kept embedding may be as old as the distilled model accepts, no older.
    const r = opts.incremental
      ? await embedIncremental({ cfg, run: dm.base_run, table, mode: 'exact', backend: opts.backend, cwd: opts.cwd, maxAgeSeconds: cfg.distillation?.max_embedding_offset ?? null })
      : await embed({ cfg, run: dm.base_run, table, mode: 'exact', backend: opts.backend, cwd: opts.cwd });
    if ('kind' in r) incremental.push(r);
    else recordFullSnapshot(r.path, r.seconds, r.rows);
    files.push(r.path);
    embeddings.push({ table, path: r.path, run_id: r.run_id, anchor_time: r.anchor_time, dim: r.dim });
  }
  lap('embed');
  const r = await exportModel({ cfg, run: distilled.id, embeddings: files, out: repo, name, backend: opts.backend, cwd: opts.cwd });
  lap('export');
  const base = resolveRun(cfg.artifactsDir, dm.base_run, { kind: 'train', cwd: opts.cwd });
  // Today's data encoded as the base run was fitted: its graph rebuilt at the run's own fit_until.
  const drift = driftReport(Graph.load((await buildGraph(cfg, { fit: runFit(base.dir, readManifest(base.dir)) })).dir), readModelJson<FeatureSpec>(base.dir, 'features.json'));
  if (!drift.ok) warn(`refresh: ${drift.features.filter((f) => f.drifted).length} feature(s) drifted above PSI ${drift.threshold} (max ${drift.max_psi}); run \`gnnctl check --config …\` and consider retraining`);
  lap('drift');
  return {
    model: name,
    version: r.version,
    previous_version: previous,
    dir: r.dir,
    distilled_run: distilled.id,
    base_run: dm.base_run,
    embedding_anchor: r.embedding_anchor,
    embedding_rows: r.embedding_rows,
    embeddings,
    ...(opts.incremental ? { incremental: summarizeIncremental(incremental) } : {}),
    predictions,
    drift,
    phases,
    seconds: Math.round((performance.now() - t0) / 10) / 100,
  };
}

export function latestVersion(modelDir: string): number | null {
  if (!existsSync(modelDir)) return null;
  const v = readdirSync(modelDir)
    .filter((d) => /^\d+$/.test(d) && existsSync(join(modelDir, d, 'manifest.json')))
    .map(Number);
  return v.length ? Math.max(...v) : null;
}
