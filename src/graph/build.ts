/**
 * `graph build`: tables → relational graph, all in DuckDB SQL except the final CSR fill (a counting sort
 * over typed arrays, O(edges)). Steps per table: source view → key/time/column checks → dense node ids in
 * time order → FK resolution to parent node ids → feature encoders fitted on rows up to `fit_until` →
 * encoded columns streamed into typed-array files. An unchanged config and data reuse the cached build.
 */
import { round } from '../core/number.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { q, queryRows, withDuck } from '../data/duck.js';
import { createSourceView, firstLine, rowCount, sourceFiles, type SourceFile } from '../data/source.js';
import { DataError, suggest } from '../core/errors.js';
import { produceAtomically, writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { hashValue } from '../core/hash.js';
import { info } from '../core/log.js';
import { Progress } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { degreeStats, readInt32, reverseCsr, writeTyped } from './csr.js';
import { encodeTable } from './encode_table.js';
import { rememberTimeRanges, resolveFitUntil, tableTimeRanges, type FitFor, type TableTimeRanges } from './fit_until.js';
import { checkPrimaryKey, timeExpression } from './source_checks.js';
import type { TablePlan } from './table_plan.js';
import {
  GRAPH_FORMAT,
  type EdgeManifest,
  type GraphManifest,
  type GraphSchema,
  type TableManifest,
} from '../artifacts/graph_manifest.js';

export interface BuildOptions {
  /** rebuild even when a cached build with the same fingerprint exists */
  force?: boolean;
  /** whose validation data the feature statistics must not see (graph/fit_until.ts; default: every task's) */
  fit?: FitFor;
}

export interface BuildResult {
  dir: string;
  manifest: GraphManifest;
  cached: boolean;
  seconds: number;
}

export function graphsDir(cfg: Config): string {
  return join(cfg.artifactsDir, 'graphs');
}

/** The data's oldest and newest time over every table with a time column, without a build (null: none has one). */
export async function dataTimeRange(cfg: Config): Promise<[number, number] | null> {
  const ranges = await withDuck(async ({ conn }) => {
    const sources: Record<string, SourceFile[]> = {};
    for (const spec of Object.values(cfg.tableSpecs)) sources[spec.name] = await sourceFiles(conn, spec);
    return tableTimeRanges(cfg, sources);
  });
  const all = Object.values(ranges).flatMap((r) => (r.time_range ? [r.time_range] : []));
  return all.length ? [Math.min(...all.map((r) => r[0])), Math.max(...all.map((r) => r[1]))] : null;
}

/** Builds the graph for a config, or returns the cached build when config and data are unchanged. */
export async function buildGraph(cfg: Config, opts: BuildOptions = {}): Promise<BuildResult> {
  const t0 = performance.now();
  const tmpRoot = join(cfg.artifactsDir, '.tmp');
  mkdirSync(tmpRoot, { recursive: true });
  return withDuck(
    async ({ conn }) => {
      const sources: Record<string, SourceFile[]> = {};
      for (const spec of Object.values(cfg.tableSpecs)) sources[spec.name] = await sourceFiles(conn, spec);
      // The cache key holds the resolved fit_until, not the tasks: tasks that resolve to one cut-off share a build.
      const fitUntil = resolveFitUntil(cfg, await tableTimeRanges(cfg, sources), opts.fit);
      const fingerprint = hashValue({ format: GRAPH_FORMAT, data: { ...cfg.data, fit_until: fitUntil }, specs: cfg.tableSpecs, sources });
      const dir = join(graphsDir(cfg), `${cfg.name}-${fingerprint}`);
      if (!opts.force && existsSync(join(dir, 'manifest.json'))) {
        const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as GraphManifest;
        info(`graph: reusing cached build ${dir}`);
        return { dir, manifest, cached: true, seconds: (performance.now() - t0) / 1000 };
      }
      const progress = new Progress();
      let manifest: GraphManifest;
      try {
        manifest = await produceAtomically(dir, async (tmp) => {
          mkdirSync(tmp, { recursive: true });
          return buildInto(conn, cfg, sources, { fingerprint, fitUntil }, tmp, progress);
        });
      } finally {
        progress.stop();
      }
      manifest.timings.total = round((performance.now() - t0) / 1000, 2);
      const nodes = Object.values(manifest.tables).reduce((a, x) => a + x.rows, 0);
      progress.end(`graph: built ${nodes.toLocaleString('en-US')} nodes in ${manifest.timings.total.toFixed(1)}s (${dir})`);
      writeJsonAtomic(join(dir, 'manifest.json'), manifest);
      return { dir, manifest, cached: false, seconds: (performance.now() - t0) / 1000 };
    },
    { tempDir: tmpRoot },
  );
}

async function buildInto(
  conn: DuckDBConnection,
  cfg: Config,
  sources: Record<string, SourceFile[]>,
  { fingerprint, fitUntil }: { fingerprint: string; fitUntil: number | null },
  out: string,
  progress: Progress,
): Promise<GraphManifest> {
  const timings: Record<string, number> = {};
  const warnings: string[] = [];
  const tick = (name: string, t: number): void => {
    timings[name] = round((performance.now() - t) / 1000, 2);
  };
  const specs = Object.values(cfg.tableSpecs);
  // Progress in steps (read, number, encode each table; reverse each foreign key): DuckDB gives no row
  // count inside one statement, so the ETA is per step and rough, but a CI log sees which step is running.
  const fkCount = specs.reduce((a, sp) => a + Object.keys(sp.foreign_keys).length, 0);
  let stepsDone = 0;
  progress.begin('graph build', specs.length * 3 + fkCount, { steps: true });
  const step = (what: string): void => progress.update(stepsDone++, what);

  // 1. Sources and the checks that need only column names.
  let t = performance.now();
  const plans: Record<string, TablePlan> = {};
  const problems: string[] = [];
  let attach = 0;
  for (const spec of specs) {
    const columns = await createSourceView(conn, spec, sources[spec.name]!, attach++);
    const names = columns.map((c) => c.name);
    const need = (col: string | undefined, what: string, path: string): void => {
      if (col !== undefined && !names.includes(col)) {
        problems.push(`data.tables.${spec.name}.${path}: ${what} "${col}" is not a column of ${spec.name} (${suggest(col, names)})`);
      }
    };
    need(spec.primary_key, 'primary key', 'primary_key');
    need(spec.time_column, 'time column', 'time_column');
    for (const fk of Object.keys(spec.foreign_keys)) need(fk, 'foreign key', `foreign_keys.${fk}`);
    for (const col of Object.keys(spec.columns)) need(col, 'column', `columns.${col}`);
    plans[spec.name] = { spec, columns, rows: 0, timeExpr: null, pkType: columns.find((c) => c.name === spec.primary_key)?.type ?? null };
  }
  if (problems.length) throw new DataError(`${problems.length} column problem${problems.length > 1 ? 's' : ''}:\n  - ${problems.join('\n  - ')}`);
  tick('sources', t);

  // 2. Materialize each table (keeps source order in rowid), check it is non-empty, keys and times valid.
  t = performance.now();
  for (const plan of Object.values(plans)) {
    const { spec } = plan;
    step(`reading ${spec.name}`);
    try {
      await conn.run(`CREATE TABLE ${q(`raw_${spec.name}`)} AS SELECT * FROM ${q(`src_${spec.name}`)}`);
    } catch (e) {
      throw new DataError(`cannot read table ${spec.name}: ${firstLine(e)}`, {
        where: sources[spec.name]!.map((f) => f.path).join(', '),
        hint: 'check the file; CSV reader options go under the table\'s `csv:` block (e.g. ignore_errors: true)',
      });
    }
    plan.rows = await rowCount(conn, `raw_${spec.name}`);
    if (plan.rows === 0) {
      problems.push(`table ${spec.name} is empty (${sources[spec.name]!.map((f) => f.path).join(', ')}): every table needs at least one row`);
      continue;
    }
    if (spec.primary_key) problems.push(...(await checkPrimaryKey(conn, spec)));
    if (spec.time_column) {
      const col = plan.columns.find((c) => c.name === spec.time_column)!;
      const r = await timeExpression(conn, spec, col);
      if ('problem' in r) problems.push(r.problem);
      else plan.timeExpr = r.expr;
    }
  }
  if (problems.length) throw new DataError(`${problems.length} data problem${problems.length > 1 ? 's' : ''}:\n  - ${problems.join('\n  - ')}`);

  // Dense node ids: time order, then primary key, then source order (deterministic whatever the file order).
  for (const plan of Object.values(plans)) {
    const { spec } = plan;
    step(`numbering ${spec.name}`);
    const order = [plan.timeExpr ? '__t' : null, spec.primary_key ? q(spec.primary_key) : null, 'rowid'].filter(Boolean).join(', ');
    await conn.run(
      `CREATE TABLE ${q(`n_${spec.name}`)} AS SELECT (row_number() OVER (ORDER BY ${order}) - 1)::INTEGER AS __node, * FROM ` +
        `(SELECT ${plan.timeExpr ? `${plan.timeExpr} AS __t, ` : ''}rowid, * FROM ${q(`raw_${spec.name}`)})`,
    );
    await conn.run(`DROP TABLE ${q(`raw_${spec.name}`)}`);
  }
  tick('materialize', t);

  // 3. Global time range; fit_until was resolved from the same ranges (graph/fit_until.ts).
  const ranges: [number, number][] = [];
  const tableRanges: TableTimeRanges = {};
  for (const plan of Object.values(plans)) {
    if (!plan.timeExpr) continue;
    const r = (await queryRows<{ lo: number; hi: number }>(conn, `SELECT min(__t) AS lo, max(__t) AS hi FROM ${q(`n_${plan.spec.name}`)}`))[0]!;
    ranges.push([r.lo, r.hi]);
    tableRanges[plan.spec.name] = { time_range: [r.lo, r.hi] };
  }
  const timeRange: [number, number] | null = ranges.length ? [Math.min(...ranges.map((r) => r[0])), Math.max(...ranges.map((r) => r[1]))] : null;
  rememberTimeRanges(cfg, sources, tableRanges);
  if (fitUntil !== null) info(`graph: fitting feature statistics on rows up to ${isoSeconds(fitUntil)}`);

  // 4. Per table: FK resolution, column roles, encoders, arrays.
  t = performance.now();
  const schema: GraphSchema = { tables: {} };
  const tables: Record<string, TableManifest> = {};
  for (const plan of Object.values(plans)) {
    step(`encoding ${plan.spec.name}`);
    const r = await encodeTable(conn, cfg, plan, plans, fitUntil, out, warnings);
    schema.tables[plan.spec.name] = r.schema;
    tables[plan.spec.name] = r.manifest;
  }
  tick('encode', t);

  // 5. Edges: FK arrays are already per-row parents; reverse CSRs by counting sort.
  t = performance.now();
  const edges: EdgeManifest[] = [];
  for (const [name, tm] of Object.entries(tables)) {
    for (const fk of tm.foreign_keys) {
      step(`reversing ${name}.${fk.column}`);
      const parents = readInt32(join(out, fk.file));
      const nParent = tables[fk.target]!.rows;
      const { indptr, indices } = reverseCsr(parents, nParent);
      const base = `edges/${fk.target}<-${name}.${fk.column}`;
      mkdirSync(join(out, 'edges'), { recursive: true });
      writeTyped(join(out, `${base}.indptr.i32`), indptr);
      writeTyped(join(out, `${base}.indices.i32`), indices);
      const count = indices.length;
      edges.push({
        name: `${name}.${fk.column}->${fk.target}`,
        src: name,
        dst: fk.target,
        kind: 'fk',
        column: fk.column,
        child_table: name,
        count,
        indptr_file: null,
        indices_file: null,
        degree: { mean: round(count / Math.max(1, parents.length), 4), p99: count > 0 ? 1 : 0, max: count > 0 ? 1 : 0 },
      });
      edges.push({
        name: `${fk.target}<-${name}.${fk.column}`,
        src: fk.target,
        dst: name,
        kind: 'rev',
        column: fk.column,
        child_table: name,
        count,
        indptr_file: `${base}.indptr.i32`,
        indices_file: `${base}.indices.i32`,
        degree: degreeStats(indptr),
      });
    }
  }
  tick('edges', t);

  const manifest: GraphManifest = {
    kind: 'graph',
    format: GRAPH_FORMAT,
    gnnctl: VERSION,
    name: cfg.name,
    fingerprint,
    schema_fingerprint: schemaFingerprint(schema),
    schema,
    created_at: new Date().toISOString(),
    fit_until: fitUntil,
    time_range: timeRange,
    sources,
    tables,
    edges,
    warnings,
    timings,
  };
  writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/**
 * Hash of the graph's structure: tables, keys, foreign keys, and each column's name, type and role. The
 * `reason` a role was inferred for (e.g. "~27 distinct") is left out: it moves with every new row.
 */
export function schemaFingerprint(schema: GraphSchema): string {
  const tables = Object.fromEntries(
    Object.entries(schema.tables).map(([name, t]) => [name, { ...t, columns: t.columns.map((c) => ({ name: c.name, type: c.type, role: c.role })) }]),
  );
  return hashValue({ tables }, 16);
}
