/** Checks and expressions on a table's source before it is materialised: primary keys and the time column. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { TableSpec } from '../config/load.js';
import { q, queryRows, queryValue } from '../data/duck.js';
import type { ColumnInfo } from '../data/source.js';
import { NUMERIC_TYPES, TIME_TYPES } from './table_plan.js';

export async function checkPrimaryKey(conn: DuckDBConnection, spec: TableSpec): Promise<string[]> {
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
export async function timeExpression(conn: DuckDBConnection, spec: TableSpec, col: ColumnInfo): Promise<{ expr: string } | { problem: string }> {
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
export function inferEpochUnit(maxAbs: number): 's' | 'ms' | 'us' | 'ns' {
  if (maxAbs > 1e17) return 'ns';
  if (maxAbs > 1e14) return 'us';
  if (maxAbs > 1e11) return 'ms';
  return 's';
}
