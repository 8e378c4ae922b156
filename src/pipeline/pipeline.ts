/**
 * `pipeline`: graph → train → embed → distill → export → smoke request, in one command, for first runs
 * and weekly CI rebuilds. Re-runs are idempotent: a stage whose inputs (config, data fingerprint, seed,
 * upstream artifacts, gnnctl version) are unchanged reuses its earlier artifact instead of redoing it
 * (`--force` redoes everything).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import { distill, distillRunKey, type DistillManifest } from '../distill/distill.js';
import { defaultEmbeddingDir, embed } from '../embed/embed.js';
import { ConfigError } from '../core/errors.js';
import { exportModel } from '../export/export.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { listRuns, readManifest } from '../artifacts/run_store.js';
import { train, trainRunKey, type TrainManifest } from '../train/trainer.js';
import { info } from '../core/log.js';
import { smokeRequest, type SmokeResult } from './smoke.js';
import type { OnlineStoreTarget } from '../artifacts/online_store.js';
import { publishEmbeddingFile } from '../online_store/publish_snapshot.js';
import type { PublishResult } from '../online_store/publisher.js';

export interface PipelineOptions {
  cfg: Config;
  backend?: BackendRequest;
  /** redo every stage even when its artifact exists */
  force?: boolean;
  /** override epochs of training and distillation (quick runs, tests) */
  epochs?: number;
  distillEpochs?: number;
  /** skip the serve smoke request */
  noSmoke?: boolean;
  /** then publish each embedded table to the online store (the config's `online_store:` block) */
  publish?: OnlineStoreTarget;
  cwd?: string;
}

export interface StageSummary {
  stage: string;
  seconds: number;
  /** the stage's key figure, as text */
  metric: string;
  artifact: string;
  reused: boolean;
}

export interface PipelineResult {
  stages: StageSummary[];
  metrics: {
    train: Record<string, { val: unknown; test: unknown; baseline: unknown; lift: number | null }>;
    distill: { val: unknown; test: unknown; teacher: unknown; teacher_ratio: number | null; teacher_ap_ratio: number | null; ablations: unknown } | null;
  };
  runs: Record<string, string>;
  model_repository: string | null;
  model: string | null;
  version: number | null;
  smoke: SmokeResult | null;
  /** what the `online_store:` block's publish wrote (absent without the block) */
  published?: PublishResult[];
  seconds: number;
}

export async function runPipeline(opts: PipelineOptions): Promise<PipelineResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  const stages: StageSummary[] = [];
  const stage = async <T>(name: string, fn: () => Promise<{ value: T; metric: string; artifact: string; reused: boolean }>): Promise<T> => {
    const t = performance.now();
    info(`pipeline: ${name} …`);
    const r = await fn();
    stages.push({ stage: name, seconds: Math.round((performance.now() - t) / 10) / 100, metric: r.metric, artifact: r.artifact, reused: r.reused });
    return r.value;
  };

  const d = cfg.distillation;
  const trainTasks = d ? [d.base] : Object.keys(cfg.taskSpecs);
  if (trainTasks.length === 0) throw new ConfigError('nothing to train: the config has no tasks', [], { hint: 'add a task under `tasks:`' });
  // Each run's statistics are fitted before its own task's validation data (graph/fit_until.ts): the graph
  // stage builds the first task's; a task with the same cut-off reuses it, another builds its own.
  const graph = await stage('graph', async () => {
    const g = await buildGraph(cfg, { fit: { task: trainTasks[0]! } });
    const nodes = Object.values(g.manifest.tables).reduce((a, t) => a + t.rows, 0);
    const edges = g.manifest.edges.filter((e) => e.kind === 'fk').reduce((a, e) => a + e.count, 0);
    return { value: g, metric: `${nodes.toLocaleString('en-US')} nodes, ${edges.toLocaleString('en-US')} edges`, artifact: g.dir, reused: g.cached };
  });

  const runs: Record<string, string> = {};
  const trainMetrics: PipelineResult['metrics']['train'] = {};
  for (const task of trainTasks) {
    const spec = cfg.taskSpecs[task]!;
    const key = trainRunKey(cfg, spec, (await buildGraph(cfg, { fit: { task } })).manifest.fingerprint, { epochs: opts.epochs });
    await stage(`train ${task}`, async () => {
      const prev = opts.force ? undefined : listRuns(cfg.artifactsDir).reverse().find((r) => r.manifest.kind === 'train' && r.manifest.status === 'complete' && (r.manifest as TrainManifest).run_key === key);
      const dir = prev?.dir ?? (await train({ cfg, task, backend: opts.backend, epochs: opts.epochs })).runDir;
      const id = prev?.id ?? dir.split('/').pop()!;
      const m = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as TrainStageMetrics;
      runs[task] = id;
      trainMetrics[task] = { val: m.val, test: m.test, baseline: m.baseline?.test ?? null, lift: m.lift };
      return { value: id, metric: trainStageLine(m), artifact: dir, reused: Boolean(prev) };
    });
  }
  if (!d) {
    return { stages, metrics: { train: trainMetrics, distill: null }, runs, model_repository: null, model: null, version: null, smoke: null, seconds: secs(t0) };
  }

  const baseRun = runs[d.base]!;
  const anchor = graph.manifest.time_range![1];
  const embeddingFiles: string[] = [];
  const fact = cfg.taskSpecs[d.task]!.query.entity.table;
  const factFks = graph.manifest.schema.tables[fact]!.foreign_keys;
  const keyTables = [...new Set(d.embedding_keys.map((k) => factFks.find((f) => `${fact}.${f.column}` === k)!.target))];
  for (const table of keyTables) {
    await stage(`embed ${table}`, async () => {
      const file = join(defaultEmbeddingDir(cfg.artifactsDir, baseRun, anchor, table), 'embeddings.parquet');
      if (!opts.force && existsSync(file)) {
        embeddingFiles.push(file);
        return { value: file, metric: 'snapshot exists', artifact: file, reused: true };
      }
      const r = await embed({ cfg, run: baseRun, table, backend: opts.backend, cwd: opts.cwd });
      embeddingFiles.push(r.path);
      return { value: r.path, metric: `${r.rows.toLocaleString('en-US')} rows, ${r.entities_per_s.toLocaleString('en-US')} entities/s`, artifact: r.path, reused: false };
    });
  }

  // distill reads the base run's own graph (its recorded fit_until)
  const baseDir = join(cfg.artifactsDir, 'runs', baseRun);
  const distillGraph = await buildGraph(cfg, { fit: runFit(baseDir, readManifest(baseDir)) });
  const distillKey = distillRunKey(cfg, d, d.task, baseRun, distillGraph.manifest.fingerprint, { epochs: opts.distillEpochs });
  const distilled = await stage('distill', async () => {
    const prev = opts.force ? undefined : listRuns(cfg.artifactsDir).reverse().find((r) => r.manifest.kind === 'distill' && r.manifest.status === 'complete' && (r.manifest as DistillManifest).run_key === distillKey);
    const dir = prev?.dir ?? (await distill({ cfg, base: baseRun, backend: opts.backend, epochs: opts.distillEpochs, cwd: opts.cwd })).runDir;
    const m = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as { test: Record<string, number>; val: unknown; teacher: { test: Record<string, number> } | null; teacher_ratio?: number | null; teacher_ap_ratio?: number | null; ablations: Record<string, { test: Record<string, number> }> };
    const id = dir.split('/').pop()!;
    runs[`${d.task} (distilled)`] = id;
    const auc = (x?: Record<string, number>): string => (x?.auroc ?? x?.mae)?.toFixed(4) ?? '-';
    return {
      value: { id, metrics: m },
      metric: `test ${auc(m.test)} (teacher ${auc(m.teacher?.test)}, features only ${auc(m.ablations.features_only?.test)})`,
      artifact: dir,
      reused: Boolean(prev),
    };
  });

  const exported = await stage('export', async () => {
    const repo = join(cfg.artifactsDir, 'model_repository');
    const same = opts.force ? null : latestExport(join(repo, cfg.export.name), distilled.id, embeddingFiles);
    if (same) return { value: same, metric: `version ${same.version} (unchanged)`, artifact: same.dir, reused: true };
    const r = await exportModel({ cfg, run: distilled.id, embeddings: embeddingFiles, backend: opts.backend, cwd: opts.cwd });
    return { value: { version: r.version, dir: r.dir, repo: r.repository }, metric: `version ${r.version}, ${(r.model_bytes / 2 ** 20).toFixed(1)} MiB, parity ${r.parity?.max_abs_diff.toExponential(1) ?? '-'}`, artifact: r.dir, reused: false };
  });

  // After the export, so a failed publish leaves a model that serves the baked-in tables.
  const published: PublishResult[] = [];
  for (const file of opts.publish ? embeddingFiles : []) {
    await stage('publish', async () => {
      const p = await publishEmbeddingFile(file, opts.publish!);
      published.push(p);
      return { value: p, metric: `${p.model} version ${p.version}, ${p.count.toLocaleString('en-US')} values`, artifact: `${p.url} ${p.pointer_key}`, reused: false };
    });
  }

  let smoke: SmokeResult | null = null;
  if (!opts.noSmoke) {
    smoke = await stage('serve smoke', async () => {
      const s = await smokeRequest(cfg, exported.repo, cfg.export.name);
      return { value: s, metric: `HTTP ${s.status}, ${s.output} = ${s.value.toFixed(4)} in ${s.ms.toFixed(1)} ms`, artifact: s.url, reused: false };
    });
  }
  return {
    stages,
    metrics: { train: trainMetrics, distill: {
        val: distilled.metrics.val,
        test: distilled.metrics.test,
        teacher: distilled.metrics.teacher,
        // CI gates on these (`--fail-under distill.teacher_ap_ratio=0.9`)
        teacher_ratio: distilled.metrics.teacher_ratio ?? null,
        teacher_ap_ratio: distilled.metrics.teacher_ap_ratio ?? null,
        ablations: distilled.metrics.ablations,
      },
    },
    runs,
    model_repository: exported.repo,
    model: cfg.export.name,
    version: exported.version,
    smoke,
    ...(opts.publish ? { published } : {}),
    seconds: secs(t0),
  };
}

/** The newest export of a model if it was made from this distilled run and these embedding files. */
function latestExport(modelDir: string, distilledRun: string, embeddingFiles: string[]): { version: number; dir: string; repo: string } | null {
  if (!existsSync(modelDir)) return null;
  const versions = readdirSync(modelDir).filter((v) => /^\d+$/.test(v)).map(Number).sort((a, b) => a - b);
  const last = versions[versions.length - 1];
  if (last === undefined) return null;
  const dir = join(modelDir, String(last));
  const mpath = join(dir, 'manifest.json');
  if (!existsSync(mpath)) return null;
  const m = JSON.parse(readFileSync(mpath, 'utf8')) as { distilled_run: string; embeddings: { sources: string[] }[] };
  const sources = m.embeddings.flatMap((e) => e.sources).sort();
  if (m.distilled_run !== distilledRun || sources.join('|') !== [...embeddingFiles].sort().join('|')) return null;
  return { version: last, dir, repo: join(modelDir, '..') };
}

export function formatPipeline(r: PipelineResult): string {
  const rows = r.stages.map((s) => [s.stage, `${s.seconds.toFixed(1)}s${s.reused ? ' (reused)' : ''}`, s.metric, s.artifact]);
  const head = ['stage', 'time', 'key metric', 'artifact'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(w[i]!))).join('  ');
  return [line(head), line(w.map((n) => '─'.repeat(n))), ...rows.map(line), '', `pipeline finished in ${r.seconds.toFixed(1)}s${r.version ? `; model ${r.model} version ${r.version} in ${r.model_repository}` : ''}`].join('\n');
}

function secs(t: number): number {
  return Math.round((performance.now() - t) / 10) / 100;
}

/** What the train stage's line reads from a run's metrics.json. */
interface TrainStageMetrics {
  main_metric: string;
  test: Record<string, number>;
  val: unknown;
  baseline: { test: Record<string, number> } | null;
  lift: number | null;
  chosen?: string;
  model_choice?: { candidates: Record<string, { test?: Record<string, number> } | undefined> };
}

/**
 * The train stage's metric cell: the GNN's test metric (the base distillation reads) beside the no-graph
 * baseline, and the model `model.kind` kept for predict when it is not the GNN.
 */
export function trainStageLine(m: TrainStageMetrics): string {
  const mm = m.main_metric;
  const line = `test ${mm} ${m.test[mm]?.toFixed(4)} (no-graph ${m.baseline?.test[mm]?.toFixed(4) ?? '-'})`;
  const kept = m.chosen !== undefined && m.chosen !== 'gnn' ? m.model_choice?.candidates[m.chosen]?.test?.[mm] : undefined;
  return kept === undefined ? line : `${line}; serves ${m.chosen} ${kept.toFixed(4)}`;
}
