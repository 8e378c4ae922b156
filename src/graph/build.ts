/**
 * `graph build`: tables → relational graph, all in DuckDB SQL except the final CSR fill (a counting sort
 * over typed arrays, O(edges)). Steps per table: source view → key/time/column checks → dense node ids in
 * time order → FK resolution to parent node ids → feature encoders fitted on rows up to `fit_until` →
 * encoded columns streamed into typed-array files. An unchanged config and data reuse the cached build.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config, TableSpec } from '../config/load.js';
import { lit, q, queryRows, queryValue, readColumns, withDuck } from '../data/duck.js';
import { createSourceView, firstLine, rowCount, sourceFiles, type ColumnInfo, type SourceFile } from '../data/source.js';
import { DataError, suggest } from '../core/errors.js';
import { taskSplit } from '../task/split.js';
import { produceAtomically, writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { hashValue } from '../core/hash.js';
import { info, warn } from '../core/log.js';
import { parseIsoTime, TIME_HINT } from '../core/time.js';
import { VERSION } from '../core/version.js';
import { inferColumnRole } from './infer.js';
import {
  GRAPH_FORMAT,
  type ColumnSchema,
  type EdgeManifest,
  type GraphManifest,
  type GraphSchema,
  type TableManifest,
  type TableSchema,
} from '../artifacts/graph_manifest.js';

export interface BuildOptions {
  /** rebuild even when a cached build with the same fingerprint exists */
  force?: boolean;
}

export interface BuildResult {
  dir: string;
  manifest: GraphManifest;
  cached: boolean;
  seconds: number;
}

const TIME_TYPES = /^(TIMESTAMP|DATE)/;
const NUMERIC_TYPES = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL|REAL)/;

export function graphsDir(cfg: Config): string {
  return join(cfg.artifactsDir, 'graphs');
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
      const fingerprint = hashValue({ format: GRAPH_FORMAT, data: cfg.data, specs: cfg.tableSpecs, sources, tasks: taskSplitsKey(cfg) });
      const dir = join(graphsDir(cfg), `${cfg.name}-${fingerprint}`);
      if (!opts.force && existsSync(join(dir, 'manifest.json'))) {
        const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as GraphManifest;
        info(`graph: reusing cached build ${dir}`);
        return { dir, manifest, cached: true, seconds: (performance.now() - t0) / 1000 };
      }
      const manifest = await produceAtomically(dir, async (tmp) => {
        mkdirSync(tmp, { recursive: true });
        return buildInto(conn, cfg, sources, fingerprint, tmp);
      });
      manifest.timings.total = round((performance.now() - t0) / 1000);
      writeJsonAtomic(join(dir, 'manifest.json'), manifest);
      return { dir, manifest, cached: false, seconds: (performance.now() - t0) / 1000 };
    },
    { tempDir: tmpRoot },
  );
}

/** Only the parts of tasks that change fit_until belong in the cache key. */
function taskSplitsKey(cfg: Config): unknown {
  return Object.fromEntries(Object.entries(cfg.taskSpecs).map(([k, t]) => [k, { q: t.query.text, s: t.split }]));
}

interface TablePlan {
  spec: TableSpec;
  columns: ColumnInfo[];
  rows: number;
  timeExpr: string | null;
  pkType: string | null;
}

async function buildInto(conn: DuckDBConnection, cfg: Config, sources: Record<string, SourceFile[]>, fingerprint: string, out: string): Promise<GraphManifest> {
  const timings: Record<string, number> = {};
  const warnings: string[] = [];
  const tick = (name: string, t: number): void => {
    timings[name] = round((performance.now() - t) / 1000);
  };
  const specs = Object.values(cfg.tableSpecs);

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
    const order = [plan.timeExpr ? '__t' : null, spec.primary_key ? q(spec.primary_key) : null, 'rowid'].filter(Boolean).join(', ');
    await conn.run(
      `CREATE TABLE ${q(`n_${spec.name}`)} AS SELECT (row_number() OVER (ORDER BY ${order}) - 1)::INTEGER AS __node, * FROM ` +
        `(SELECT ${plan.timeExpr ? `${plan.timeExpr} AS __t, ` : ''}rowid, * FROM ${q(`raw_${spec.name}`)})`,
    );
    await conn.run(`DROP TABLE ${q(`raw_${spec.name}`)}`);
  }
  tick('materialize', t);

  // 3. Global time range and fit_until.
  const ranges: [number, number][] = [];
  for (const plan of Object.values(plans)) {
    if (!plan.timeExpr) continue;
    const r = (await queryRows<{ lo: number; hi: number }>(conn, `SELECT min(__t) AS lo, max(__t) AS hi FROM ${q(`n_${plan.spec.name}`)}`))[0]!;
    ranges.push([r.lo, r.hi]);
  }
  const timeRange: [number, number] | null = ranges.length ? [Math.min(...ranges.map((r) => r[0])), Math.max(...ranges.map((r) => r[1]))] : null;
  const fitUntil = resolveFitUntil(cfg, timeRange);
  if (fitUntil !== null) info(`graph: fitting feature statistics on rows up to ${isoSeconds(fitUntil)}`);

  // 4. Per table: FK resolution, column roles, encoders, arrays.
  t = performance.now();
  const schema: GraphSchema = { tables: {} };
  const tables: Record<string, TableManifest> = {};
  for (const plan of Object.values(plans)) {
    const r = await encodeTable(conn, cfg, plan, plans, fitUntil, out, warnings);
    schema.tables[plan.spec.name] = r.schema;
    tables[plan.spec.name] = r.manifest;
  }
  tick('encode', t);

  // 5. Edges: FK arrays are already per-row parents; reverse CSRs by counting sort.
  t = performance.now();
  const edges: EdgeManifest[] = [];
  for (const [name, tm] of Object.entries(tables)) {
    for (const fk of tm.foreignKeys) {
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
        childTable: name,
        count,
        indptrFile: null,
        indicesFile: null,
        degree: { mean: round(count / Math.max(1, parents.length), 4), p99: count > 0 ? 1 : 0, max: count > 0 ? 1 : 0 },
      });
      edges.push({
        name: `${fk.target}<-${name}.${fk.column}`,
        src: fk.target,
        dst: name,
        kind: 'rev',
        column: fk.column,
        childTable: name,
        count,
        indptrFile: `${base}.indptr.i32`,
        indicesFile: `${base}.indices.i32`,
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
    schemaFingerprint: schemaFingerprint(schema),
    schema,
    createdAt: new Date().toISOString(),
    fitUntil,
    timeRange,
    sources,
    tables,
    edges,
    warnings,
    timings,
  };
  writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

export function schemaFingerprint(schema: GraphSchema): string {
  return hashValue(schema, 16);
}

function resolveFitUntil(cfg: Config, timeRange: [number, number] | null): number | null {
  if (!timeRange) return null;
  if (cfg.data.fit_until !== 'auto') {
    const t = parseIsoTime(cfg.data.fit_until);
    if (t === null) throw new DataError(`data.fit_until is not a time`, { value: cfg.data.fit_until, hint: `${TIME_HINT}, or "auto"` });
    return t;
  }
  let fit = timeRange[1];
  for (const task of Object.values(cfg.taskSpecs)) {
    fit = Math.min(fit, taskSplit(task, { min: timeRange[0], max: timeRange[1] }).valAnchor);
  }
  return fit;
}

/**
 * Which rows feature statistics and vocabularies are fitted on. Time-stamped tables: rows up to
 * `fit_until`. A table without a time column (customers, articles) has no time of its own, but its rows
 * become visible through time-stamped rows that reference them: fit on the entities referenced before
 * `fit_until`, so a customer who first appears in the test period shapes no statistic. A static table
 * nothing time-stamped references is fitted on every row.
 */
function fitFilter(plan: TablePlan, plans: Record<string, TablePlan>, fitUntil: number | null): string {
  if (fitUntil === null) return 'true';
  if (plan.timeExpr) return `__t <= ${fitUntil}`;
  const pk = plan.spec.primary_key;
  if (!pk) return 'true';
  const referrers = Object.values(plans).flatMap((c) =>
    c.timeExpr ? Object.entries(c.spec.foreign_keys).filter(([, target]) => target === plan.spec.name).map(([col]) => ({ child: c, col })) : [],
  );
  if (referrers.length === 0) return 'true';
  const seen = referrers.map(({ child, col }) => `SELECT ${q(col)} FROM ${q(`n_${child.spec.name}`)} WHERE __t <= ${fitUntil}`).join(' UNION ');
  return `${q(pk)} IN (${seen})`;
}

async function checkPrimaryKey(conn: DuckDBConnection, spec: TableSpec): Promise<string[]> {
  const pk = q(spec.primary_key!);
  const t = q(`raw_${spec.name}`);
  const problems: string[] = [];
  const nulls = Number(await queryValue(conn, `SELECT count(*) FROM ${t} WHERE ${pk} IS NULL`));
  if (nulls > 0) problems.push(`${spec.name}.${spec.primary_key}: ${nulls} row${nulls > 1 ? 's have' : ' has'} a NULL primary key; drop or fill them`);
  const dups = await queryRows<{ k: string; n: bigint }>(conn, `SELECT CAST(${pk} AS VARCHAR) AS k, count(*) AS n FROM ${t} WHERE ${pk} IS NOT NULL GROUP BY ${pk} HAVING count(*) > 1 ORDER BY n DESC, k LIMIT 5`);
  if (dups.length > 0) {
    const total = Number(await queryValue(conn, `SELECT count(*) FROM (SELECT ${pk} FROM ${t} WHERE ${pk} IS NOT NULL GROUP BY ${pk} HAVING count(*) > 1)`));
    problems.push(
      `${spec.name}.${spec.primary_key}: ${total} duplicate primary key value${total > 1 ? 's' : ''} (e.g. ${dups.map((d) => `${JSON.stringify(d.k)} ×${d.n}`).join(', ')}); ` +
        'a primary key must be unique: deduplicate the table or choose another key',
    );
  }
  return problems;
}

/** SQL for the time column as epoch seconds (DOUBLE), or a problem description. */
async function timeExpression(conn: DuckDBConnection, spec: TableSpec, col: ColumnInfo): Promise<{ expr: string } | { problem: string }> {
  const c = q(col.name);
  const t = q(`raw_${spec.name}`);
  const where = `${spec.name}.${col.name}`;
  let expr: string;
  if (TIME_TYPES.test(col.type)) {
    expr = `epoch_us(CAST(${c} AS TIMESTAMP)) / 1e6`;
  } else if (col.type === 'VARCHAR') {
    expr = `epoch_us(try_cast(${c} AS TIMESTAMP)) / 1e6`;
    const bad = await queryRows<{ v: string }>(conn, `SELECT ${c} AS v FROM ${t} WHERE ${c} IS NOT NULL AND trim(${c}) <> '' AND try_cast(${c} AS TIMESTAMP) IS NULL LIMIT 3`);
    if (bad.length > 0) {
      const n = Number(await queryValue(conn, `SELECT count(*) FROM ${t} WHERE ${c} IS NOT NULL AND trim(${c}) <> '' AND try_cast(${c} AS TIMESTAMP) IS NULL`));
      return { problem: `time column ${where}: ${n} value${n > 1 ? 's do' : ' does'} not parse as a timestamp (e.g. ${bad.map((b) => JSON.stringify(b.v)).join(', ')}); use ISO timestamps/dates, epoch numbers, or csv.timestampformat` };
    }
  } else if (NUMERIC_TYPES.test(col.type)) {
    const unit = spec.time_unit ?? inferEpochUnit(Number(await queryValue(conn, `SELECT max(abs(${c}))::DOUBLE FROM ${t}`)));
    const div = { s: 1, ms: 1e3, us: 1e6, ns: 1e9 }[unit];
    expr = `CAST(${c} AS DOUBLE) / ${div}`;
  } else {
    return { problem: `time column ${where} has type ${col.type}; use a TIMESTAMP, DATE, ISO string or epoch number column` };
  }
  const nulls = Number(await queryValue(conn, `SELECT count(*) FROM ${t} WHERE (${expr}) IS NULL`));
  if (nulls > 0) return { problem: `time column ${where}: ${nulls} row${nulls > 1 ? 's have' : ' has'} no time (NULL or empty); drop or fill them — every row of a table with a time column needs a time` };
  return { expr };
}

/** Epoch unit from the magnitude of the largest value (seconds until year 5138, then ms, us, ns). */
function inferEpochUnit(maxAbs: number): 's' | 'ms' | 'us' | 'ns' {
  if (maxAbs > 1e17) return 'ns';
  if (maxAbs > 1e14) return 'us';
  if (maxAbs > 1e11) return 'ms';
  return 's';
}

interface EncodedTable {
  schema: TableSchema;
  manifest: TableManifest;
}

async function encodeTable(
  conn: DuckDBConnection,
  cfg: Config,
  plan: TablePlan,
  plans: Record<string, TablePlan>,
  fitUntil: number | null,
  out: string,
  warnings: string[],
): Promise<EncodedTable> {
  const { spec } = plan;
  const name = spec.name;
  const nt = q(`n_${name}`);
  const dir = `tables/${name}`;
  mkdirSync(join(out, dir), { recursive: true });
  const fitWhere = fitFilter(plan, plans, fitUntil);

  // Column roles.
  const keyCols = new Set([spec.primary_key, spec.time_column, ...Object.keys(spec.foreign_keys)].filter(Boolean) as string[]);
  const stats = await columnStats(conn, nt, plan.columns.filter((c) => !keyCols.has(c.name)));
  const columns: ColumnSchema[] = plan.columns.map((c) => {
    if (c.name === spec.primary_key) return { name: c.name, type: c.type, role: 'primary_key', reason: 'config' };
    if (c.name === spec.time_column) return { name: c.name, type: c.type, role: 'time', reason: 'config' };
    if (c.name in spec.foreign_keys) return { name: c.name, type: c.type, role: 'foreign_key', reason: `config: references ${spec.foreign_keys[c.name]}` };
    const override = spec.columns[c.name];
    if (override) return { name: c.name, type: c.type, role: override, reason: 'config override' };
    const { role, reason } = inferColumnRole(c, stats[c.name]!, cfg.data);
    return { name: c.name, type: c.type, role, reason };
  });

  // Foreign keys → parent node ids.
  const fkSelects: string[] = [];
  const fkJoins: string[] = [];
  const fkManifests: TableManifest['foreignKeys'] = [];
  const fkSchemas: TableSchema['foreignKeys'] = [];
  let j = 0;
  for (const [col, target] of Object.entries(spec.foreign_keys)) {
    const parent = plans[target]!;
    const pk = parent.spec.primary_key!;
    const colType = plan.columns.find((c) => c.name === col)!.type;
    const sameType = colType === parent.pkType;
    const left = sameType ? `${nt}.${q(col)}` : `CAST(${nt}.${q(col)} AS VARCHAR)`;
    const right = sameType ? `p${j}.${q(pk)}` : `CAST(p${j}.${q(pk)} AS VARCHAR)`;
    fkJoins.push(`LEFT JOIN ${q(`n_${target}`)} p${j} ON ${left} = ${right}`);
    fkSelects.push(`coalesce(p${j}.__node, -1)::INTEGER`);
    const counts = (
      await queryRows<{ nulls: bigint; unmatched: bigint }>(
        conn,
        `SELECT count(*) FILTER (WHERE ${nt}.${q(col)} IS NULL) AS nulls, count(*) FILTER (WHERE ${nt}.${q(col)} IS NOT NULL AND p${j}.__node IS NULL) AS unmatched FROM ${nt} ${fkJoins[j]}`,
      )
    )[0]!;
    const unmatched = Number(counts.unmatched);
    let examples: string[] = [];
    if (unmatched > 0) {
      examples = (
        await queryRows<{ v: string }>(conn, `SELECT DISTINCT CAST(${nt}.${q(col)} AS VARCHAR) AS v FROM ${nt} ${fkJoins[j]} WHERE ${nt}.${q(col)} IS NOT NULL AND p${j}.__node IS NULL ORDER BY v LIMIT 3`)
      ).map((r) => r.v);
      const typeNote = sameType ? '' : ` (note: ${name}.${col} is ${colType} but ${target}.${pk} is ${parent.pkType}; they are compared as text)`;
      const msg = `${name}.${col}: ${unmatched} of ${plan.rows} rows reference a ${target}.${pk} that does not exist (e.g. ${examples.map((e) => JSON.stringify(e)).join(', ')})${typeNote}`;
      if (cfg.data.strict) throw new DataError(msg, { where: `data.tables.${name}.foreign_keys.${col}`, hint: 'fix the data, or set data.strict: false to drop those edges with a warning' });
      warn(`${msg}; those edges are dropped (data.strict: true makes this an error)`);
      warnings.push(msg);
    }
    fkManifests.push({ column: col, target, file: `${dir}/fk_${safe(col)}.i32`, nulls: Number(counts.nulls), unmatched, unmatchedExamples: examples });
    fkSchemas.push({ column: col, target, type: colType });
    j++;
  }

  // Encoders.
  const numeric = columns.filter((c) => c.role === 'numerical');
  const categorical = columns.filter((c) => c.role === 'categorical');
  const timestamps = columns.filter((c) => c.role === 'timestamp');
  const selects: string[] = [];
  const kinds: ('f64' | 'f32' | 'i32')[] = [];
  if (plan.timeExpr) {
    selects.push(`${nt}.__t`);
    kinds.push('f64');
  }
  selects.push(...fkSelects);
  kinds.push(...fkSelects.map(() => 'i32' as const));

  const numManifests: TableManifest['numeric'] = [];
  for (const c of numeric) {
    const v = `TRY_CAST(${nt}.${q(c.name)} AS DOUBLE)`;
    const s = (await queryRows<{ mean: number | null; std: number | null; nulls: bigint }>(
      conn,
      `SELECT avg(x) FILTER (WHERE ${fitWhere}) AS mean, stddev_pop(x) FILTER (WHERE ${fitWhere}) AS std, count(*) FILTER (WHERE x IS NULL) AS nulls FROM (SELECT ${v} AS x, * FROM ${nt}) WHERE isfinite(x) OR x IS NULL`,
    ))[0]!;
    selects.push(`CASE WHEN isfinite(${v}) THEN ${v} ELSE 'NaN'::DOUBLE END`);
    kinds.push('f32');
    numManifests.push({ name: c.name, file: `${dir}/num_${safe(c.name)}.f32`, mean: s.mean ?? 0, std: s.std && s.std > 0 ? s.std : 1, nulls: Number(s.nulls) });
  }

  const catManifests: TableManifest['categorical'] = [];
  const catJoins: string[] = [];
  for (const [k, c] of categorical.entries()) {
    const v = `nullif(trim(CAST(${nt}.${q(c.name)} AS VARCHAR)), '')`;
    const vocabRows = await queryRows<{ v: string }>(
      conn,
      `SELECT v FROM (SELECT ${v} AS v, count(*) AS n FROM ${nt} WHERE ${fitWhere} GROUP BY 1) WHERE v IS NOT NULL ORDER BY n DESC, v LIMIT ${cfg.data.max_vocab}`,
    );
    const vocab = vocabRows.map((r) => r.v);
    const vt = `vocab_${name}_${k}`;
    await conn.run(`CREATE OR REPLACE TEMP TABLE ${q(vt)} (v VARCHAR, code INTEGER)`);
    if (vocab.length) {
      await conn.run(`INSERT INTO ${q(vt)} SELECT v, (i + 1)::INTEGER FROM (SELECT unnest(${listLiteral(vocab)}) AS v, generate_subscripts(${listLiteral(vocab)}, 1) AS i)`);
    }
    catJoins.push(`LEFT JOIN ${q(vt)} v${k} ON ${v} = v${k}.v`);
    selects.push(`(CASE WHEN ${v} IS NULL THEN 0 ELSE coalesce(v${k}.code, 1) END)::INTEGER`);
    kinds.push('i32');
    catManifests.push({ name: c.name, file: `${dir}/cat_${safe(c.name)}.i32`, type: c.type, vocab, nulls: 0, oov: 0 });
  }

  const tsManifests: TableManifest['timestamps'] = [];
  for (const c of timestamps) {
    const expr = TIME_TYPES.test(c.type) ? `epoch_us(CAST(${nt}.${q(c.name)} AS TIMESTAMP)) / 1e6` : `epoch_us(try_cast(${nt}.${q(c.name)} AS TIMESTAMP)) / 1e6`;
    selects.push(`coalesce(${expr}, 'NaN'::DOUBLE)`);
    kinds.push('f64');
    tsManifests.push({ name: c.name, file: `${dir}/ts_${safe(c.name)}.f64`, nulls: 0 });
  }

  // One ordered pass streams every encoded column into typed arrays.
  const sql = `SELECT ${selects.length ? selects.join(', ') : '0::INTEGER'} FROM ${nt} ${fkJoins.join(' ')} ${catJoins.join(' ')} ORDER BY ${nt}.__node`;
  const arrays = selects.length ? await readColumns(conn, sql, plan.rows, kinds) : [];
  let a = 0;
  let timeRange: [number, number] | null = null;
  if (plan.timeExpr) {
    const time = arrays[a++] as Float64Array;
    writeTyped(join(out, `${dir}/time.f64`), time);
    timeRange = [time[0]!, time[time.length - 1]!];
  }
  for (const fk of fkManifests) writeTyped(join(out, fk.file), arrays[a++]!);
  for (const m of numManifests) writeTyped(join(out, m.file), arrays[a++]!);
  for (const m of catManifests) {
    const codes = arrays[a++] as Int32Array;
    for (let i = 0; i < codes.length; i++) {
      if (codes[i] === 0) m.nulls++;
      else if (codes[i] === 1) m.oov++;
    }
    writeTyped(join(out, m.file), codes);
  }
  for (const m of tsManifests) {
    const vals = arrays[a++] as Float64Array;
    for (let i = 0; i < vals.length; i++) if (Number.isNaN(vals[i])) m.nulls++;
    writeTyped(join(out, m.file), vals);
  }

  // The rows themselves, with node ids, epoch times and resolved parents: later stages (training tables,
  // baselines, RTI extraction) query this file in DuckDB instead of re-reading and re-sorting the sources.
  const rowsFile = `${dir}/rows.parquet`;
  const fkCols = fkManifests.map((fk, i) => `p${i}.__node AS ${q(`__fk_${fk.column}`)}`);
  await conn.run(
    `COPY (SELECT ${nt}.__node${plan.timeExpr ? `, ${nt}.__t` : ''}${fkCols.length ? `, ${fkCols.join(', ')}` : ''}, ${nt}.* EXCLUDE (__node, rowid${plan.timeExpr ? ', __t' : ''}) ` +
      `FROM ${nt} ${fkJoins.join(' ')} ORDER BY ${nt}.__node) TO ${lit(join(out, rowsFile))} (FORMAT parquet, ROW_GROUP_SIZE 122880)`,
  );

  return {
    schema: {
      primaryKey: spec.primary_key ? { column: spec.primary_key, type: plan.pkType! } : null,
      timeColumn: spec.time_column ?? null,
      foreignKeys: fkSchemas,
      columns,
    },
    manifest: {
      rows: plan.rows,
      timeFile: plan.timeExpr ? `${dir}/time.f64` : null,
      timeRange,
      rowsFile,
      numeric: numManifests,
      categorical: catManifests,
      timestamps: tsManifests,
      foreignKeys: fkManifests,
    },
  };
}

export interface ColumnStats {
  distinct: number;
  nonNull: number;
  avgLength: number | null;
}

/** One pass for distinct counts (approximate), non-null counts and string lengths of every column. */
async function columnStats(conn: DuckDBConnection, table: string, cols: ColumnInfo[]): Promise<Record<string, ColumnStats>> {
  if (cols.length === 0) return {};
  const parts = cols.flatMap((c, i) => [
    `approx_count_distinct(${q(c.name)}) AS d${i}`,
    `count(${q(c.name)}) AS n${i}`,
    c.type === 'VARCHAR' ? `avg(length(${q(c.name)})) AS l${i}` : `NULL AS l${i}`,
  ]);
  const row = (await queryRows<Record<string, number | bigint | null>>(conn, `SELECT ${parts.join(', ')} FROM ${table}`))[0]!;
  return Object.fromEntries(
    cols.map((c, i) => [c.name, { distinct: Number(row[`d${i}`] ?? 0), nonNull: Number(row[`n${i}`] ?? 0), avgLength: row[`l${i}`] === null ? null : Number(row[`l${i}`]) }]),
  );
}

export function reverseCsr(parents: Int32Array, nParent: number): { indptr: Int32Array; indices: Int32Array } {
  const indptr = new Int32Array(nParent + 1);
  let count = 0;
  for (let i = 0; i < parents.length; i++) {
    const p = parents[i]!;
    if (p >= 0) {
      indptr[p + 1]!++;
      count++;
    }
  }
  for (let p = 0; p < nParent; p++) indptr[p + 1]! += indptr[p]!;
  const fill = indptr.slice(0, nParent);
  const indices = new Int32Array(count);
  // Children in node-id order = time order, so each parent's segment comes out time-sorted.
  for (let i = 0; i < parents.length; i++) {
    const p = parents[i]!;
    if (p >= 0) indices[fill[p]!++] = i;
  }
  return { indptr, indices };
}

function degreeStats(indptr: Int32Array): { mean: number; p99: number; max: number } {
  const n = indptr.length - 1;
  if (n <= 0) return { mean: 0, p99: 0, max: 0 };
  const deg = new Int32Array(n);
  for (let i = 0; i < n; i++) deg[i] = indptr[i + 1]! - indptr[i]!;
  const sorted = deg.slice().sort();
  return { mean: round(indptr[n]! / n, 3), p99: sorted[Math.min(n - 1, Math.floor(0.99 * n))]!, max: sorted[n - 1]! };
}

function listLiteral(values: string[]): string {
  return `[${values.map(lit).join(', ')}]::VARCHAR[]`;
}

function safe(col: string): string {
  return col.replace(/[^A-Za-z0-9_.-]/g, (ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function writeTyped(path: string, arr: ArrayBufferView): void {
  writeFileSync(path, new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength));
}

export function readInt32(path: string): Int32Array {
  const buf = readFileSync(path);
  return new Int32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
