/**
 * One table of the graph build: column roles (config or inferred), foreign keys resolved to parent node ids,
 * feature encoders fitted on the rows up to `fit_until` (numeric mean/std, categorical vocabularies with
 * null = 0 and out-of-vocabulary = 1), and every encoded column streamed into a typed-array file, plus the
 * table's rows as Parquet for the SQL stages.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { lit, q, queryRows, readColumns } from '../data/duck.js';
import type { ColumnInfo } from '../data/source.js';
import { DataError } from '../core/errors.js';
import { warn } from '../core/log.js';
import type { ColumnSchema, TableManifest, TableSchema } from '../artifacts/graph_manifest.js';
import { writeTyped } from './csr.js';
import { categoricalShares, numericReference } from './distribution.js';
import { INTEGER_TYPE, inferColumnRole, type ColumnStats } from './infer.js';
import { TIME_TYPES, type TablePlan } from './table_plan.js';

export interface EncodedTable {
  schema: TableSchema;
  manifest: TableManifest;
}

export async function encodeTable(
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
  const fkManifests: TableManifest['foreign_keys'] = [];
  const fkSchemas: TableSchema['foreign_keys'] = [];
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
    fkManifests.push({ column: col, target, file: `${dir}/fk_${safe(col)}.i32`, nulls: Number(counts.nulls), unmatched, unmatched_examples: examples });
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
    numManifests.push({ name: c.name, file: `${dir}/num_${safe(c.name)}.f32`, mean: s.mean ?? 0, std: s.std && s.std > 0 ? s.std : 1, nulls: Number(s.nulls), reference: { edges: [], shares: [] } });
  }

  const catManifests: TableManifest['categorical'] = [];
  const catJoins: string[] = [];
  for (const [k, c] of categorical.entries()) {
    const v = `nullif(trim(CAST(${nt}.${q(c.name)} AS VARCHAR)), '')`;
    // Values rarer than min_frequency share the OOV code. Without this the OOV embedding row is never
    // trained (every training row is in vocabulary), yet every entity new since fit_until reads it, and a
    // value held by one entity is that entity's id, which only memorises training labels (docs/quality.md).
    const vocabRows = await queryRows<{ v: string }>(
      conn,
      `SELECT v FROM (SELECT ${v} AS v, count(*) AS n FROM ${nt} WHERE ${fitWhere} GROUP BY 1) WHERE v IS NOT NULL AND n >= ${cfg.data.min_frequency} ORDER BY n DESC, v LIMIT ${cfg.data.max_vocab}`,
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
    catManifests.push({ name: c.name, file: `${dir}/cat_${safe(c.name)}.i32`, type: c.type, vocab, nulls: 0, oov: 0, reference: { shares: [] } });
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
  // The fit window as a row mask: the rows the encoders above were fitted on, for the drift references.
  const fit = numManifests.length + catManifests.length ? await fitMask(conn, nt, fitWhere, plan.rows) : null;
  for (const m of numManifests) {
    const values = arrays[a++] as Float32Array;
    m.reference = numericReference(values, fit);
    writeTyped(join(out, m.file), values);
  }
  for (const m of catManifests) {
    const codes = arrays[a++] as Int32Array;
    m.reference = { shares: categoricalShares(codes, m.vocab.length + 2, fit) };
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
      primary_key: spec.primary_key ? { column: spec.primary_key, type: plan.pkType! } : null,
      time_column: spec.time_column ?? null,
      foreign_keys: fkSchemas,
      columns,
    },
    manifest: {
      rows: plan.rows,
      time_file: plan.timeExpr ? `${dir}/time.f64` : null,
      time_range: timeRange,
      rows_file: rowsFile,
      numeric: numManifests,
      categorical: catManifests,
      timestamps: tsManifests,
      foreign_keys: fkManifests,
    },
  };
}

/**
 * Which rows feature statistics and vocabularies are fitted on. Time-stamped tables: rows up to
 * `fit_until`. A table without a time column (customers, articles) has no time of its own, but its rows
 * become visible through time-stamped rows that reference them: fit on the entities referenced before
 * `fit_until`, so a customer who first appears in the test period shapes no statistic. A static table
 * nothing time-stamped references is fitted on every row.
 */
/** 1 for the rows of the fit window (`fitFilter`), in node order. */
async function fitMask(conn: DuckDBConnection, nt: string, fitWhere: string, rows: number): Promise<Uint8Array> {
  const [flags] = await readColumns(conn, `SELECT (${fitWhere})::INTEGER FROM ${nt} ORDER BY __node`, rows, ['i32']);
  return Uint8Array.from(flags as Int32Array);
}

export function fitFilter(plan: TablePlan, plans: Record<string, TablePlan>, fitUntil: number | null): string {
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

/** One pass for distinct counts (approximate), non-null counts, string lengths and integer ranges of every column. */
export async function columnStats(conn: DuckDBConnection, table: string, cols: ColumnInfo[]): Promise<Record<string, ColumnStats>> {
  if (cols.length === 0) return {};
  // Integer ranges as DOUBLE: a UBIGINT/HUGEINT extreme would not fit a JS number exactly, and only the
  // spread matters (infer.ts: codes leave gaps in their range).
  const int = (c: ColumnInfo): boolean => INTEGER_TYPE.test(c.type);
  const parts = cols.flatMap((c, i) => [
    `approx_count_distinct(${q(c.name)}) AS d${i}`,
    `count(${q(c.name)}) AS n${i}`,
    c.type === 'VARCHAR' ? `avg(length(${q(c.name)})) AS l${i}` : `NULL AS l${i}`,
    int(c) ? `min(${q(c.name)})::DOUBLE AS lo${i}` : `NULL AS lo${i}`,
    int(c) ? `max(${q(c.name)})::DOUBLE AS hi${i}` : `NULL AS hi${i}`,
  ]);
  const row = (await queryRows<Record<string, number | bigint | null>>(conn, `SELECT ${parts.join(', ')} FROM ${table}`))[0]!;
  const num = (v: number | bigint | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
  return Object.fromEntries(
    cols.map((c, i) => [
      c.name,
      { distinct: Number(row[`d${i}`] ?? 0), nonNull: Number(row[`n${i}`] ?? 0), avgLength: num(row[`l${i}`]), min: num(row[`lo${i}`]), max: num(row[`hi${i}`]) },
    ]),
  );
}

export function listLiteral(values: string[]): string {
  return `[${values.map(lit).join(', ')}]::VARCHAR[]`;
}

export function safe(col: string): string {
  return col.replace(/[^A-Za-z0-9_.-]/g, (ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
