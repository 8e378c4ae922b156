import { loadConfig } from '../../config/load.js';
import { listRuns, resolveRun } from '../../artifacts/run_store.js';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommandOutput } from '../run.js';

export interface RunsOptions {
  config?: string;
  artifacts?: string;
  cwd?: string;
}

/** One row of `gnnctl runs list`: what `--json` prints under `runs`. */
export interface RunRow {
  id: string;
  kind: string;
  task: string;
  status: string;
  /** The main test metric's name (`auroc`, `mae`, `map_at_k`), or null when the run has no test metrics. */
  metric: string | null;
  /** Its value; null when the metric is undefined (e.g. AUROC of a test set without positives). */
  value: number | null;
  /**
   * The model the run serves when it chose one (`chosen` in metrics.json: `gbdt`, `hybrid`, `gnn`, `model`,
   * `reranker`, a heuristic, a student variant), else null; `metric`/`value` are that model's test figures.
   */
  served: string | null;
  created: string;
  dir: string;
}

const MAIN_METRICS = ['auroc', 'mae', 'map_at_k'] as const;

/** The main test metric of a run's `metrics.test`: the first of AUROC, MAE, MAP@k it holds. */
export function mainTestMetric(test: Record<string, unknown> | undefined): { metric: string | null; value: number | null } {
  const metric = MAIN_METRICS.find((m) => test !== undefined && m in test) ?? null;
  const raw = metric ? test?.[metric] : undefined;
  return { metric, value: typeof raw === 'number' && Number.isFinite(raw) ? raw : null };
}

/** The parts of metrics.json that say which model a run serves and its test figures. */
interface ServedMetrics {
  test?: Record<string, unknown>;
  chosen?: string;
  model_choice?: { candidates?: Record<string, { test?: Record<string, unknown> } | undefined> };
  reranker?: { test?: Record<string, unknown> };
  baselines?: Record<string, { test?: Record<string, unknown> } | undefined>;
}

/**
 * The test metrics of the model a run serves: the kept `model.kind` candidate, the re-ranker or the
 * heuristic a ranking run chose; the run's own `test` otherwise (the GNN's, the distilled student's).
 */
export function servedTest(metrics: ServedMetrics): Record<string, unknown> | undefined {
  const chosen = metrics.chosen;
  if (chosen === undefined || chosen === 'model') return metrics.test;
  return metrics.model_choice?.candidates?.[chosen]?.test ?? (chosen === 'reranker' ? metrics.reranker?.test : metrics.baselines?.[chosen]?.test) ?? metrics.test;
}

/** A metric cell: `auroc 0.8280`; `auroc n/a` when the run recorded the metric as undefined (null or NaN). */
export function formatMetric(metric: string | null, value: number | null): string {
  if (!metric) return '-';
  return `${metric} ${value === null ? 'n/a' : value.toFixed(4)}`;
}

/**
 * The text `gnnctl runs list` prints: a header and one line per run, each column as wide as its widest
 * cell, so a long task name (`next_purchases`) or metric (`map_at_k 0.3008`) does not shift the next one.
 */
export function formatRunsTable(runs: readonly RunRow[], runsDir: string): string {
  if (runs.length === 0) return `no runs in ${runsDir}`;
  const header = ['run', 'kind', 'task', 'status', 'serves', 'test metric', 'created'];
  const cells = runs.map((r) => [r.id, r.kind, r.task, r.status, r.served ?? '-', formatMetric(r.metric, r.value), r.created.slice(0, 19).replace('T', ' ')]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (row: readonly string[]): string => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
  return [line(header), ...cells.map(line)].join('\n');
}

export async function runsListCommand(opts: RunsOptions): Promise<CommandOutput> {
  const artifacts = opts.config
    ? loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd }).artifactsDir
    : resolve(opts.cwd ?? process.cwd(), opts.artifacts ?? 'artifacts');
  const runs: RunRow[] = listRuns(artifacts).map((r) => {
    const head = r.manifest.metrics as { test?: Record<string, unknown> } | undefined;
    const full = readMetrics(r.dir);
    return {
      id: r.id,
      kind: r.manifest.kind,
      task: r.manifest.task,
      status: r.manifest.status,
      served: full?.chosen ?? null,
      ...mainTestMetric(full ? servedTest(full) : head?.test),
      created: r.manifest.created_at,
      dir: r.dir,
    };
  });
  return { result: { runs }, text: formatRunsTable(runs, join(artifacts, 'runs')) };
}

/** A run's metrics.json, or null when it has none (running, failed) or it cannot be parsed. */
function readMetrics(dir: string): ServedMetrics | null {
  const path = join(dir, 'metrics.json');
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ServedMetrics;
  } catch {
    return null;
  }
}

export interface RunsShowOptions extends RunsOptions {
  run: string;
}

/**
 * `gnnctl runs show <run>`: one run's manifest head and metrics: the main metric on validation and test
 * (with the test interval), and for binary/regression train runs every `model.kind` candidate with its
 * intervals and the one kept; `--json` prints the manifest and the full metrics.json.
 */
export async function runsShowCommand(opts: RunsShowOptions): Promise<CommandOutput> {
  const artifacts = opts.config
    ? loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd }).artifactsDir
    : resolve(opts.cwd ?? process.cwd(), opts.artifacts ?? 'artifacts');
  const run = resolveRun(artifacts, opts.run, { cwd: opts.cwd });
  const path = join(run.dir, 'metrics.json');
  const metrics = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ShownMetrics) : null;
  const m = run.manifest;
  const lines = [`run ${run.id}: ${m.kind} of task ${m.task}, ${m.status}, created ${m.created_at.slice(0, 19).replace('T', ' ')}`, `  ${run.dir}`];
  if (metrics) {
    const mm = metrics.main_metric ?? mainTestMetric(metrics.test).metric;
    const f = (x: Record<string, unknown> | undefined | null): string => (mm && typeof x?.[mm] === 'number' ? (x[mm] as number).toFixed(4) : '-');
    const iv = (x: [number, number] | null | undefined): string => (x ? ` [95% ${x[0].toFixed(4)} … ${x[1].toFixed(4)}]` : '');
    lines.push(`  ${metrics.model_choice ? 'GNN ' : ''}${mm ?? 'metric'}: val ${f(metrics.val)}  test ${f(metrics.test)}${iv(mm ? metrics.intervals?.test?.[mm] : null)}`);
    const mc = metrics.model_choice;
    if (mc) {
      lines.push(`  model.kind ${mc.setting}: kept the ${metrics.chosen} (${metrics.chosen_reason})`);
      for (const [k, c] of Object.entries(mc.candidates)) {
        lines.push(c.status === 'trained' ? `    ${k === metrics.chosen ? '*' : ' '} ${k.padEnd(7)} val ${f(c.val)}${iv(mm ? c.val_intervals?.[mm] : null)}  test ${f(c.test)}${iv(mm ? c.test_intervals?.[mm] : null)}` : `      ${k.padEnd(7)} skipped: ${c.reason ?? ''}`);
      }
    } else if (metrics.chosen) {
      lines.push(`  serving ${metrics.chosen}: ${metrics.chosen_reason ?? ''}`);
    }
    const byList = metrics.intervals?.test_map_by_list;
    if (byList) lines.push(`  test ${mm} by list:${Object.entries(byList).map(([name, x]) => ` ${name}${iv(x)}`).join(';')}`);
  }
  return { result: { run_id: run.id, dir: run.dir, manifest: m, metrics }, text: lines.join('\n') };
}

/** The parts of a run's metrics.json that `runs show` prints. */
interface ShownMetrics {
  main_metric?: string;
  val?: Record<string, unknown>;
  test?: Record<string, unknown>;
  intervals?: { test?: Record<string, [number, number] | null>; test_map_by_list?: Record<string, [number, number] | null> };
  chosen?: string;
  chosen_reason?: string;
  model_choice?: {
    setting: string;
    candidates: Record<string, { status: string; reason?: string; val?: Record<string, unknown>; test?: Record<string, unknown>; val_intervals?: Record<string, [number, number] | null>; test_intervals?: Record<string, [number, number] | null> }>;
  };
}
