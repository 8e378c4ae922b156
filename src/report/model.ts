/**
 * Report data: reads a run folder (`manifest.json` + `metrics.json`, and for distilled runs any export
 * of it in the model repository) and normalizes it into one typed `ReportData` the page sections render.
 * The report only reads files: it never imports the trainer, so it works on runs from other machines.
 *
 * metrics.json is validated here with zod (not `.strict()`: newer gnnctl versions may add fields, and
 * older runs may lack the curves or per-epoch timings, which the page then leaves out).
 */
import { OBJECTIVE_KINDS, type ObjectiveKind } from '../task/objective/objective.js';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { ArtifactError, NotImplementedError } from '../core/errors.js';
import { readManifest, type RunManifestBase } from '../artifacts/run_store.js';

/** JSON turns NaN (AUROC of a one-class split) into null, so every metric may be null. */
const value = z.number().nullable();
const metricsSchema = z.record(z.string(), value);
const point = z.tuple([z.number(), z.number()]);
const calibrationBin = z.object({ bin: z.number(), predicted: z.number(), observed: z.number(), count: z.number() });
const curvesSchema = z.object({ roc: z.array(point), pr: z.array(point), calibration: z.array(calibrationBin).optional() });
const countsSchema = z.object({ train: z.number(), val: z.number(), test: z.number() });

const trainMetricsSchema = z.object({
  task: z.string(),
  kind: z.enum(OBJECTIVE_KINDS),
  main_metric: z.string().optional(),
  val: metricsSchema,
  test: metricsSchema,
  baseline: z.object({ val: metricsSchema, test: metricsSchema, features: z.array(z.string()).default([]), train_rows: z.number().optional() }).nullable().default(null),
  lift: value.default(null),
  best_epoch: z.number(),
  epochs: z.array(
    z.object({
      epoch: z.number(),
      loss: value,
      val: metricsSchema,
      val_smoothed: z.number().optional(),
      seconds: z.number().optional(),
      seeds_per_s: z.number().optional(),
      timing: z.object({ sample: z.number(), gather: z.number(), step: z.number() }).optional(),
    }),
  ),
  counts: countsSchema,
  anchors: z.object({
    window: z.number().optional(),
    train: z.array(z.string()).default([]),
    val: z.string(),
    val_anchors: z.array(z.string()).optional(),
    test: z.string(),
    test_anchors: z.array(z.string()).optional(),
    table: z.string().optional(),
  }),
  /** 95% bootstrap intervals (docs/evaluation.md); absent in runs made before them */
  intervals: z
    .object({
      test: z.record(z.string(), z.tuple([z.number(), z.number()]).nullable()),
      baseline_test: z.record(z.string(), z.tuple([z.number(), z.number()]).nullable()).nullable(),
      lift: z.tuple([z.number(), z.number()]).nullable(),
      lift_judgement: z.string(),
      /** ranking runs: each heuristic's (and the re-ranker's) test MAP@k interval */
      test_map_by_list: z.record(z.string(), z.tuple([z.number(), z.number()]).nullable()).optional(),
    })
    .optional(),
  test_by_anchor: z.array(z.object({ anchor: z.string(), n: z.number(), metrics: metricsSchema })).optional(),
  empty_anchors: z.object({ train: z.array(z.string()), val: z.array(z.string()), test: z.array(z.string()) }).optional(),
  seeds: z.object({ model: z.number(), evaluation: z.number() }).optional(),
  validation: z.object({ anchors: z.array(z.string()), examples: z.number(), smoothing: z.number(), small: z.boolean().nullable(), reason: z.string() }).optional(),
  search: z
    .object({
      budget_seconds: z.number(),
      seconds: z.number().optional(),
      chosen: z.string(),
      variants: z.array(
        z.object({
          name: z.string(),
          status: z.enum(['trained', 'skipped']),
          reason: z.string().optional(),
          configured: z.boolean().optional(),
          val: metricsSchema.optional(),
          test: metricsSchema.optional(),
          best_epoch: z.number().optional(),
          epochs: z.number().optional(),
          stopped: z.string().nullable().optional(),
          seconds: z.number().optional(),
          parameters: z.number().optional(),
        }),
      ),
    })
    .nullable()
    .optional(),
  curves: curvesSchema.optional(),
  baseline_curves: curvesSchema.omit({ calibration: true }).optional(),
  parameters: z.object({ total: z.number(), without_embeddings: z.number() }).optional(),
  /** ranking runs: every heuristic (train/ranking_heuristics.ts), and the one with the best validation MAP@k */
  baselines: z.record(z.string(), z.object({ val: metricsSchema, test: metricsSchema })).optional(),
  best_baseline: z.string().optional(),
  /** ranking runs: the heuristics' choices on validation and the seen-items decision */
  heuristics: z
    .object({
      exclude_seen: z.object({ exclude: z.boolean(), reason: z.string() }),
      popularity: z.object({ window: z.string() }),
      affinity: z.object({ column: z.string().nullable() }),
      repeat_affinity: z.object({ repeat_weight: z.number() }),
    })
    .optional(),
  /** ranking runs: the learned re-ranker over the heuristics' and the model's candidates (train/rerank.ts) */
  reranker: z.object({ val: metricsSchema, test: metricsSchema, test_map_intervals: z.record(z.string(), z.tuple([z.number(), z.number()])).optional() }).optional(),
  /** binary and regression runs: the GNN, the trees and the hybrid (`model.kind`, train/candidates.ts) */
  model_choice: z
    .object({
      setting: z.string(),
      best: z.string(),
      candidates: z.record(
        z.string(),
        z.object({
          status: z.enum(['trained', 'skipped']),
          reason: z.string().optional(),
          val: metricsSchema.optional(),
          test: metricsSchema.optional(),
          val_intervals: z.record(z.string(), point.nullable()).optional(),
          test_intervals: z.record(z.string(), point.nullable()).optional(),
          seconds: z.number().optional(),
          trees: z.number().optional(),
          features: z.number().optional(),
        }),
      ),
      tree_features: z.object({ own: z.number(), aggregates: z.number(), candidates: z.number(), seconds: z.number() }).nullable(),
    })
    .optional(),
  /** what to serve and why. Ranking runs: the model, the re-ranker or the heuristic that beat them on validation; binary/regression runs: the candidate model.kind kept */
  chosen: z.string().optional(),
  chosen_reason: z.string().optional(),
});

const studentMetricsSchema = z.object({ val: metricsSchema, test: metricsSchema, best_epoch: z.number().optional() });
const distillMetricsSchema = z.object({
  task: z.string(),
  kind: z.enum(OBJECTIVE_KINDS),
  base_run: z.string(),
  base_task: z.string(),
  val: metricsSchema,
  test: metricsSchema,
  teacher: z.object({ val: metricsSchema, test: metricsSchema }).nullable().default(null),
  ablations: z.object({ features_only: studentMetricsSchema, embedding_only: studentMetricsSchema, rti_only: studentMetricsSchema }).partial().default({}),
  /** the variant kept and exported (distill/student_choice.ts) and the full student's metrics; absent in older runs (the full student was kept) */
  chosen: z.enum(['student', 'features_only', 'embedding_only', 'rti_only']).default('student'),
  chosen_reason: z.string().nullable().default(null),
  full_student: studentMetricsSchema.optional(),
  teacher_ratio: value.default(null),
  teacher_ap_ratio: value.default(null),
  student: z.object({ parameters: z.number(), bytes: z.number(), latency_ms_p50: value, latency_ms_p99: value }),
  teacher_model: z.object({ parameters: z.number(), parameters_without_embeddings: z.number(), bytes: z.number() }).nullable().default(null),
  embeddings: z.object({ source: z.string(), snapshots: z.array(z.string()), coverage: z.object({ train: value, val: value, test: value }) }),
  counts: countsSchema,
  epochs: z.array(z.object({ epoch: z.number(), loss: value, val: metricsSchema })),
  best_epoch: z.number(),
  curves: curvesSchema.optional(),
});

const exportManifestSchema = z.object({
  kind: z.literal('export'),
  model: z.string(),
  version: z.union([z.number(), z.string()]),
  created_at: z.string().optional(),
  distilled_run: z.string(),
  max_embedding_offset_seconds: z.number().nullable().optional(),
  embeddings: z.array(z.object({ table: z.string(), anchor_time: z.string(), rows: z.number().optional(), run_id: z.string().optional() })).default([]),
});

export type TaskKind = ObjectiveKind;
export type MetricSet = Record<string, number | null>;
export type CurvePoint = [number, number];
export type CalibrationBin = z.infer<typeof calibrationBin>;
export type TrainMetricsFile = z.infer<typeof trainMetricsSchema>;
export type DistillMetricsFile = z.infer<typeof distillMetricsSchema>;

/** How a metric is labelled, formatted and compared. */
export interface MetricSpec {
  key: string;
  label: string;
  higherIsBetter: boolean;
  /** `rate` values show as percentages, `count` as integers */
  format: 'metric' | 'rate' | 'count';
}

export const METRICS: Record<TaskKind, MetricSpec[]> = {
  binary: [
    { key: 'auroc', label: 'AUROC', higherIsBetter: true, format: 'metric' },
    { key: 'ap', label: 'Average precision', higherIsBetter: true, format: 'metric' },
    { key: 'accuracy', label: 'Accuracy @0.5', higherIsBetter: true, format: 'metric' },
    { key: 'f1', label: 'F1 @0.5', higherIsBetter: true, format: 'metric' },
    // The top of the ranking, where a fraud team works: recall and precision at fixed low false-positive rates.
    { key: 'recall_at_fpr_1', label: 'Recall @ FPR 1%', higherIsBetter: true, format: 'metric' },
    { key: 'precision_at_fpr_1', label: 'Precision @ FPR 1%', higherIsBetter: true, format: 'metric' },
    { key: 'recall_at_fpr_5', label: 'Recall @ FPR 5%', higherIsBetter: true, format: 'metric' },
    { key: 'precision_at_fpr_5', label: 'Precision @ FPR 5%', higherIsBetter: true, format: 'metric' },
    { key: 'positive_rate', label: 'Positive rate', higherIsBetter: true, format: 'rate' },
    { key: 'n', label: 'Examples', higherIsBetter: true, format: 'count' },
  ],
  regression: [
    { key: 'mae', label: 'MAE', higherIsBetter: false, format: 'metric' },
    { key: 'rmse', label: 'RMSE', higherIsBetter: false, format: 'metric' },
    { key: 'r2', label: 'R²', higherIsBetter: true, format: 'metric' },
    { key: 'n', label: 'Examples', higherIsBetter: true, format: 'count' },
  ],
  ranking: [
    { key: 'map_at_k', label: 'MAP@k', higherIsBetter: true, format: 'metric' },
    { key: 'recall_at_k', label: 'Recall@k', higherIsBetter: true, format: 'metric' },
    { key: 'ndcg_at_k', label: 'NDCG@k', higherIsBetter: true, format: 'metric' },
    { key: 'k', label: 'k', higherIsBetter: true, format: 'count' },
    { key: 'n', label: 'Examples', higherIsBetter: true, format: 'count' },
  ],
};

/** The metric early stopping, lift and the teacher ratio are about (the objective's `mainMetric`, `task/objective/`). */
export function mainMetricOf(kind: TaskKind): MetricSpec {
  return METRICS[kind][0]!;
}

/** The second curve drawn beside the main metric per epoch. */
export function secondaryMetricOf(kind: TaskKind): MetricSpec {
  return METRICS[kind][1]!;
}

export interface RunHeader {
  id: string;
  kind: 'train' | 'distill';
  task: string;
  status: string;
  /** the manifest's error message of a failed run */
  error: string | null;
  created_at: string;
  finished_at: string | null;
  backend: string;
  /** gnnctl version that made the run */
  gnnctl: string;
  seed: number | null;
  dataFingerprint: string;
  schema_fingerprint: string;
  graphDir: string;
  configName: string | null;
  configPath: string | null;
  query: string | null;
  /** seconds per stage, as the manifest records them */
  timings: Record<string, number>;
  /** the resolved config, shown collapsed at the end of the page */
  config: unknown;
}

export interface ExportInfo {
  /** `<repository>/<model>/<version>` */
  dir: string;
  model: string;
  version: string;
  created_at: string | null;
  maxOffsetSeconds: number | null;
  embeddings: { table: string; anchorTime: string; rows: number | null }[];
}

export interface TrainReport {
  kind: 'train';
  header: RunHeader;
  taskKind: TaskKind;
  metrics: TrainMetricsFile;
  /** e.g. "sage · 2 layers · 64 channels · fanout 16, 8" */
  modelSummary: string | null;
  init_from: string | null;
}

export interface DistillReport {
  kind: 'distill';
  header: RunHeader;
  taskKind: TaskKind;
  metrics: DistillMetricsFile;
  split: { val: string | null; test: string | null; trainFrom: string | null };
  /** from the run's resolved `distillation` config, in seconds */
  offsets: { max: number | null; min: number | null; realTime: number | null };
  embeddingKeys: string[];
  /** exports of this run found in `<artifacts>/model_repository`, newest version first */
  exports: ExportInfo[];
  /** newest timestamp in the run's graph (epoch seconds), when the graph folder is still there */
  dataEnd: number | null;
}

export type ReportData = TrainReport | DistillReport;

export interface LoadOptions {
  /** the artifacts folder (to find exports); default: the parent of the `runs/` folder holding the run */
  artifactsDir?: string;
}

/** Reads and validates a run folder. Throws `ArtifactError` for a run that has no metrics yet or bad files. */
export function loadReportData(runDir: string, opts: LoadOptions = {}): ReportData {
  const manifest = readManifest(runDir);
  if ((manifest.kind as string) === 'anomaly') {
    throw new NotImplementedError(`run ${manifest.id} is an anomaly-detection run; these report data cover train and distill runs`, {
      where: runDir,
      hint: 'render it with renderReport (report/index.ts), which reads anomaly runs through anomaly_model.ts',
    });
  }
  const metricsPath = join(runDir, 'metrics.json');
  if (!existsSync(metricsPath)) {
    const why =
      manifest.status === 'running'
        ? 'it is still running (metrics.json is written when training ends)'
        : manifest.status === 'failed'
          ? `it failed${typeof manifest.error === 'string' ? `: ${manifest.error}` : ''}`
          : `its status is "${manifest.status}"`;
    throw new ArtifactError(`run ${manifest.id} has no metrics.json: ${why}`, {
      where: runDir,
      hint: manifest.status === 'running' ? 'wait for the run to finish, then run `gnnctl report` again' : 'report on a finished run (`gnnctl runs list` shows them)',
    });
  }
  const raw = readJson(metricsPath);
  const header = readHeader(manifest);
  const artifactsDir = opts.artifactsDir ?? (basename(dirname(runDir)) === 'runs' ? dirname(dirname(runDir)) : undefined);
  switch (manifest.kind) {
    case 'train': {
      const metrics = parseWith(trainMetricsSchema, raw, metricsPath);
      return { kind: 'train', header, taskKind: metrics.kind, metrics, modelSummary: modelSummary(manifest.config), init_from: str(manifest.init_from) };
    }
    case 'distill': {
      const metrics = parseWith(distillMetricsSchema, raw, metricsPath);
      const split = obj(manifest.split);
      const d = obj(obj(manifest.config).distillation);
      return {
        kind: 'distill',
        header,
        taskKind: metrics.kind,
        metrics,
        split: { val: str(split.val), test: str(split.test), trainFrom: str(split.train_from) },
        offsets: { max: num(d.max_embedding_offset), min: num(d.min_embedding_offset), realTime: num(d.real_time_offset) },
        embeddingKeys: Array.isArray(d.embedding_keys) ? d.embedding_keys.map(String) : [],
        exports: artifactsDir ? findExports(join(artifactsDir, 'model_repository'), manifest.id) : [],
        dataEnd: graphDataEnd(header.graphDir),
      };
    }
    default:
      throw new ArtifactError(`run ${manifest.id} has an unknown kind`, { value: manifest.kind, where: join(runDir, 'manifest.json'), hint: 'reports cover train and distill runs' });
  }
}

/**
 * Exports of a run: `<repo>/<model>/<version>/manifest.json` whose `distilled_run` is the run. A
 * repository that is absent or holds unreadable manifests yields none: the section is optional.
 */
export function findExports(repository: string, runId: string): ExportInfo[] {
  if (!existsSync(repository)) return [];
  const out: ExportInfo[] = [];
  for (const model of safeList(repository)) {
    const modelDir = join(repository, model);
    for (const version of safeList(modelDir)) {
      const p = join(modelDir, version, 'manifest.json');
      if (!existsSync(p)) continue;
      let parsed: z.infer<typeof exportManifestSchema>;
      try {
        const r = exportManifestSchema.safeParse(JSON.parse(readFileSync(p, 'utf8')));
        if (!r.success) continue;
        parsed = r.data;
      } catch {
        continue;
      }
      if (parsed.distilled_run !== runId) continue;
      out.push({
        dir: join(modelDir, version),
        model: parsed.model,
        version: String(parsed.version),
        created_at: parsed.created_at ?? null,
        maxOffsetSeconds: parsed.max_embedding_offset_seconds ?? null,
        embeddings: parsed.embeddings.map((e) => ({ table: e.table, anchorTime: e.anchor_time, rows: e.rows ?? null })),
      });
    }
  }
  return out.sort((a, b) => a.model.localeCompare(b.model) || Number(b.version) - Number(a.version));
}

function readHeader(m: RunManifestBase): RunHeader {
  const cfg = obj(m.config);
  const graph = obj(m.graph);
  return {
    id: m.id,
    kind: m.kind,
    task: m.task,
    status: m.status,
    error: str(m.error),
    created_at: m.created_at,
    finished_at: str(m.finished_at),
    backend: m.backend,
    gnnctl: m.gnnctl,
    seed: num(m.seed),
    dataFingerprint: str(graph.fingerprint) ?? '',
    schema_fingerprint: str(graph.schema_fingerprint) ?? '',
    graphDir: str(graph.dir) ?? '',
    configName: str(cfg.name),
    configPath: str(cfg.path),
    query: str(obj(cfg.task).query),
    timings: Object.fromEntries(Object.entries(obj(m.timings)).filter((e): e is [string, number] => typeof e[1] === 'number')),
    config: m.config ?? null,
  };
}

function modelSummary(config: unknown): string | null {
  const m = obj(obj(config).model);
  if (Object.keys(m).length === 0) return null;
  const parts: string[] = [];
  if (typeof m.encoder === 'string') parts.push(m.encoder === 'sage' ? 'GraphSAGE' : m.encoder === 'gat' ? 'GAT' : m.encoder);
  if (typeof m.layers === 'number') parts.push(`${m.layers} layer${m.layers === 1 ? '' : 's'}`);
  if (typeof m.channels === 'number') parts.push(`${m.channels} channels`);
  if (Array.isArray(m.num_neighbors)) parts.push(`fanout ${m.num_neighbors.map((x) => (typeof x === 'number' ? x : JSON.stringify(x))).join(' → ')}`);
  if (typeof m.batch_size === 'number') parts.push(`batch ${m.batch_size}`);
  if (typeof m.lr === 'number') parts.push(`lr ${m.lr}`);
  return parts.join(' · ');
}

function graphDataEnd(graphDir: string): number | null {
  if (!graphDir) return null;
  try {
    const g = obj(JSON.parse(readFileSync(join(graphDir, 'manifest.json'), 'utf8')));
    const range = g.time_range;
    return Array.isArray(range) && typeof range[1] === 'number' ? range[1] : null;
  } catch {
    return null; // the graph folder was cleaned up or moved: the freshness table falls back to the wall clock
  }
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ArtifactError(`cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`, { hint: 'the file is corrupt; train the run again' });
  }
}

function parseWith<S extends z.ZodType>(schema: S, raw: unknown, path: string): z.infer<S> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  const problems = r.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '<root>'}: ${i.message}`);
  throw new ArtifactError(`${path} is not in the shape this gnnctl reads: ${problems.join('; ')}`, {
    hint: 'the run was made by an incompatible gnnctl version, or the file was edited; train the run again',
  });
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isDirectory());
  } catch {
    return [];
  }
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
