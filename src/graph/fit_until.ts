/**
 * The time a graph's feature statistics and vocabularies are fitted up to (`fit_until`), per run.
 *
 * With `data.fit_until: auto` a train run fits on rows up to ITS task's earliest validation anchor, so no
 * statistic sees that task's validation or test data, and no other task of the config moves it: an entity
 * task with twenty weekly test anchors puts its own cut-off months before the data's end, and a fact-row
 * task beside it keeps the recent statistics it is validated on. The graph cache is keyed by the resolved
 * time (graph/build.ts), so two tasks with the same cut-off share one build. Later stages (embed, predict,
 * evaluate, export, check) rebuild at the time their run recorded, which finds the very graph the run was
 * trained on while the data is unchanged, and fits the same statistics on newer data.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { ConfigError, DataError, suggest } from '../core/errors.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { hashValue } from '../core/hash.js';
import { parseIsoTime, TIME_HINT } from '../core/time.js';
import { q, queryRows, withDuck } from '../data/duck.js';
import { createSourceView, type SourceFile } from '../data/source.js';
import type { TaskDefinition } from '../task/task_spec.js';
import { AUTO_VAL_ANCHORS_MAX, taskSplit, targetTable, targetTimeRange } from '../task/split.js';
import { timeExpression } from './source_checks.js';

/**
 * Whose validation data the statistics must not see: `{ task }` — that task's earliest validation anchor
 * (train); `{ until }` — a time a run recorded (its later stages, distill); absent — no run's: the latest
 * of the tasks' cut-offs (`graph build` without `--task`), a graph every run's encoders read exactly.
 */
export type FitFor = { task: string } | { until: number | null };

/** Per table with a time column: its oldest and newest time (epoch seconds). */
export type TableTimeRanges = Record<string, { time_range: [number, number] | null }>;

/** The fit_until a build uses, from the tables' time ranges (null: no table has a time column). */
export function resolveFitUntil(cfg: Config, tableRanges: TableTimeRanges, fit?: FitFor): number | null {
  if (fit && 'until' in fit) return fit.until;
  const ranges = Object.values(tableRanges).flatMap((r) => (r.time_range ? [r.time_range] : []));
  if (ranges.length === 0) return null;
  if (cfg.data.fit_until !== 'auto') {
    const t = parseIsoTime(cfg.data.fit_until);
    if (t === null) throw new DataError(`data.fit_until is not a time`, { value: cfg.data.fit_until, hint: `${TIME_HINT}, or "auto"` });
    return t;
  }
  const end = Math.max(...ranges.map((r) => r[1]));
  if (fit) {
    const task = cfg.taskSpecs[fit.task];
    if (!task) throw new ConfigError(`unknown task "${fit.task}"`, [], { where: '--task', hint: suggest(fit.task, Object.keys(cfg.taskSpecs)) });
    return Math.min(end, firstValAnchor(task, tableRanges) ?? end);
  }
  // No run named: the latest task cut-off, so the vocabularies hold every value any task's run fitted and
  // any run's encoders read this graph exactly (an earlier graph would read some of them as out-of-vocabulary).
  const cuts = Object.values(cfg.taskSpecs).flatMap((t) => {
    const c = firstValAnchor(t, tableRanges);
    return c === null ? [] : [c];
  });
  return cuts.length ? Math.min(end, Math.max(...cuts)) : end;
}

/** A task's earliest validation anchor with the most validation anchors `val_anchors: auto` may pick. */
export function firstValAnchor(task: TaskDefinition, tableRanges: TableTimeRanges): number | null {
  if (!tableRanges[targetTable(task)]?.time_range) return null;
  const count = task.split.val_anchors === 'auto' ? AUTO_VAL_ANCHORS_MAX : task.split.val_anchors;
  return taskSplit(task, targetTimeRange(task, tableRanges), { valAnchorCount: count }).valAnchors[0]!;
}

/**
 * What a run's later stages build its graph with: the fit_until its manifest records, else its
 * features.json's, else its task's own.
 */
export function runFit(runDir: string, manifest: { task: string; graph: { fit_until?: number | null } }): FitFor {
  if (manifest.graph.fit_until !== undefined) return { until: manifest.graph.fit_until };
  const features = join(runDir, 'model', 'features.json');
  if (existsSync(features)) {
    const spec = JSON.parse(readFileSync(features, 'utf8')) as { fit_until?: number | null };
    if (spec.fit_until !== undefined) return { until: spec.fit_until };
  }
  return { task: manifest.task };
}

/**
 * One graph for several runs (a session student over a user and an item run): the latest of their
 * fit_until values, since a graph fitted earlier than a run reads some of its vocabulary as out-of-vocabulary.
 */
export function latestRunFit(runs: { dir: string; manifest: { task: string; graph: { fit_until?: number | null } } }[]): FitFor {
  const fits = runs.map((r) => runFit(r.dir, r.manifest));
  const untils = fits.flatMap((f) => ('until' in f && f.until !== null ? [f.until] : []));
  return untils.length === fits.length && untils.length > 0 ? { until: Math.max(...untils) } : fits[0]!;
}

/**
 * The tables' time ranges, read once per version of the data (the sources' sizes and mtimes) and kept in
 * `<artifacts>/.cache/time_ranges/` (outside `graphs/`, which holds only complete builds), so a cache hit
 * costs no scan. A time column that does not parse is left out
 * here: the build reports it.
 */
export async function tableTimeRanges(cfg: Config, sources: Record<string, SourceFile[]>): Promise<TableTimeRanges> {
  const file = timeRangesFile(cfg, sources);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as TableTimeRanges;
  const ranges = await withDuck(async ({ conn }) => scanTimeRanges(conn, cfg, sources));
  writeJsonAtomic(file, ranges);
  return ranges;
}

/** Records the ranges a build measured, so the next resolution of the same data needs no scan. */
export function rememberTimeRanges(cfg: Config, sources: Record<string, SourceFile[]>, ranges: TableTimeRanges): void {
  writeJsonAtomic(timeRangesFile(cfg, sources), ranges);
}

function timeRangesFile(cfg: Config, sources: Record<string, SourceFile[]>): string {
  return join(cfg.artifactsDir, '.cache', 'time_ranges', `${timeRangesKey(cfg, sources)}.json`);
}

function timeRangesKey(cfg: Config, sources: Record<string, SourceFile[]>): string {
  return hashValue({ specs: cfg.tableSpecs, sources });
}

async function scanTimeRanges(conn: DuckDBConnection, cfg: Config, sources: Record<string, SourceFile[]>): Promise<TableTimeRanges> {
  const out: TableTimeRanges = {};
  let attach = 0;
  for (const spec of Object.values(cfg.tableSpecs)) {
    if (!spec.time_column) continue;
    const columns = await createSourceView(conn, spec, sources[spec.name]!, attach++);
    const col = columns.find((c) => c.name === spec.time_column);
    if (!col) continue;
    await conn.run(`CREATE VIEW ${q(`raw_${spec.name}`)} AS SELECT * FROM ${q(`src_${spec.name}`)}`);
    const r = await timeExpression(conn, spec, col);
    if ('problem' in r) continue;
    const row = (await queryRows<{ lo: number | null; hi: number | null }>(conn, `SELECT min(${r.expr}) AS lo, max(${r.expr}) AS hi FROM ${q(`raw_${spec.name}`)}`))[0];
    out[spec.name] = { time_range: row && row.lo !== null && row.hi !== null ? [row.lo, row.hi] : null };
  }
  return out;
}
