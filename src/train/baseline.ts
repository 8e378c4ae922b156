/**
 * The no-graph baseline: an MLP on the example's own columns plus recency/frequency/monetary aggregates
 * computed in DuckDB, fitted on exactly the training examples of the GNN run. Its test metric is what the
 * graph's lift is measured against.
 *
 * Entity tasks: for each table with a foreign key to the entity and a time column, over rows with
 * time ≤ anchor: counts in the last 7/30/90 days and in all history, days since the last row, and for
 * each numeric column the 90-day mean and 30-day sum.
 * Fact-row tasks: for each foreign key of the row, over the same parent's earlier rows of the fact table
 * (strictly before the row): counts in the last 1/7/30 days, time since the previous row, and for each
 * numeric column the 30-day mean and the row's value relative to it.
 * The target column is never used.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { TaskSpec } from '../config/load.js';
import { lit, q, queryValue, readColumns } from '../data/duck.js';
import type { GraphManifest } from '../artifacts/graph_manifest.js';
import { rowsPath } from '../artifacts/graph_manifest.js';

const DAY = 86400;

export interface SqlFeatures {
  names: string[];
  /** per split, [rows × names.length], rows in the split's example order */
  train: Float32Array;
  val: Float32Array;
  test: Float32Array;
}

function numericColumns(manifest: GraphManifest, table: string, excluded: Set<string>): string[] {
  return manifest.tables[table]!.numeric.map((c) => c.name).filter((c) => !excluded.has(`${table}.${c}`));
}

/** Builds `baseline` (anchor, node, features…) next to the `examples` temp table and reads it per split. */
export async function baselineSqlFeatures(
  conn: DuckDBConnection,
  graphDir: string,
  manifest: GraphManifest,
  task: TaskSpec,
  excluded: Set<string>,
  splitWhere: { train: string; val: string; test: string },
): Promise<SqlFeatures> {
  const entity = task.query.entity.table;
  const selects: string[] = [];
  const names: string[] = [];
  const joins: string[] = [];
  let k = 0;
  if (task.query.target.kind === 'entity') {
    for (const [table, tm] of Object.entries(manifest.schema.tables)) {
      if (!tm.time_column) continue;
      for (const fk of tm.foreign_keys.filter((f) => f.target === entity)) {
        const a = `r${k++}`;
        const nums = numericColumns(manifest, table, excluded);
        const parts = [
          `count(*) FILTER (WHERE f.__t > x.anchor - ${7 * DAY}) AS c7`,
          `count(*) FILTER (WHERE f.__t > x.anchor - ${30 * DAY}) AS c30`,
          `count(*) FILTER (WHERE f.__t > x.anchor - ${90 * DAY}) AS c90`,
          `count(f.__t) AS call`,
          `(x.anchor - max(f.__t)) / ${DAY} AS since`,
          ...nums.flatMap((c, i) => [
            `avg(f.${q(c)}) FILTER (WHERE f.__t > x.anchor - ${90 * DAY}) AS m${i}`,
            `sum(f.${q(c)}) FILTER (WHERE f.__t > x.anchor - ${30 * DAY}) AS s${i}`,
          ]),
        ];
        joins.push(
          `LEFT JOIN (SELECT x.anchor, x.node, ${parts.join(', ')} FROM examples x JOIN read_parquet(${lit(rowsPath(graphDir, manifest, table))}) f ` +
            `ON f.${q(`__fk_${fk.column}`)} = x.node AND f.__t <= x.anchor GROUP BY x.anchor, x.node) ${a} ON ${a}.anchor = e.anchor AND ${a}.node = e.node`,
        );
        const p = `${table}.${fk.column}`;
        selects.push(`ln(1 + coalesce(${a}.c7, 0))`, `ln(1 + coalesce(${a}.c30, 0))`, `ln(1 + coalesce(${a}.c90, 0))`, `ln(1 + coalesce(${a}.call, 0))`);
        names.push(`${p}:log_count_7d`, `${p}:log_count_30d`, `${p}:log_count_90d`, `${p}:log_count_all`);
        selects.push(`ln(1 + coalesce(${a}.since, 365))`, `(${a}.since IS NULL)::DOUBLE`);
        names.push(`${p}:log_days_since_last`, `${p}:never`);
        nums.forEach((c, i) => {
          selects.push(`coalesce(${a}.m${i}, 0)`, `sign(coalesce(${a}.s${i}, 0)) * ln(1 + abs(coalesce(${a}.s${i}, 0)))`);
          names.push(`${p}:${c}_mean_90d`, `${p}:${c}_log_sum_30d`);
        });
      }
    }
  } else {
    const table = entity;
    const fks = manifest.schema.tables[table]!.foreign_keys;
    const nums = numericColumns(manifest, table, excluded);
    const inner: string[] = ['__node'];
    fks.forEach((fk, j) => {
      const part = `PARTITION BY ${q(`__fk_${fk.column}`)} ORDER BY __t`;
      // Frames end just before the row: earlier rows only, never the row itself or its future.
      const frame = (secs: number): string => `(${part} RANGE BETWEEN ${secs} PRECEDING AND 0.000001 PRECEDING)`;
      inner.push(
        `count(*) OVER ${frame(DAY)} AS f${j}_c1`,
        `count(*) OVER ${frame(7 * DAY)} AS f${j}_c7`,
        `count(*) OVER ${frame(30 * DAY)} AS f${j}_c30`,
        `(__t - lag(__t) OVER (${part}, __node)) / ${DAY} AS f${j}_gap`,
        `${q(`__fk_${fk.column}`)} IS NULL AS f${j}_null`,
        ...nums.map((c, i) => `avg(${q(c)}) OVER ${frame(30 * DAY)} AS f${j}_m${i}`),
        ...nums.map((c, i) => `${q(c)} AS v${i}`),
      );
      const p = `${table}.${fk.column}`;
      const nz = (x: string): string => `CASE WHEN f.f${j}_null THEN 0 ELSE ${x} END`;
      selects.push(nz(`ln(1 + f.f${j}_c1)`), nz(`ln(1 + f.f${j}_c7)`), nz(`ln(1 + f.f${j}_c30)`), nz(`ln(1 + coalesce(f.f${j}_gap, 365))`), `(f.f${j}_gap IS NULL)::DOUBLE`);
      names.push(`${p}:log_prior_1d`, `${p}:log_prior_7d`, `${p}:log_prior_30d`, `${p}:log_days_since_prev`, `${p}:first`);
      nums.forEach((c, i) => {
        selects.push(nz(`coalesce(f.f${j}_m${i}, 0)`), nz(`coalesce(ln((abs(f.v${i}) + 1e-9) / (abs(f.f${j}_m${i}) + 1e-9)), 0)`));
        names.push(`${p}:${c}_mean_30d`, `${p}:${c}_log_ratio_to_30d_mean`);
      });
    });
    if (fks.length) {
      joins.push(`LEFT JOIN (SELECT ${[...new Set(inner)].join(', ')} FROM read_parquet(${lit(rowsPath(graphDir, manifest, table))})) f ON f.__node = e.node`);
    }
  }
  if (selects.length === 0) {
    selects.push('0.0');
    names.push('none');
  }
  await conn.run(`CREATE OR REPLACE TEMP TABLE baseline AS SELECT e.anchor, e.node, ${selects.map((s, i) => `coalesce((${s})::DOUBLE, 0) AS b${i}`).join(', ')} FROM examples e ${joins.join(' ')}`);
  const read = async (where: string): Promise<Float32Array> => {
    const n = Number(await queryValue(conn, `SELECT count(*) FROM baseline WHERE ${where}`));
    const cols = await readColumns(conn, `SELECT ${names.map((_, i) => `b${i}`).join(', ')} FROM baseline WHERE ${where} ORDER BY anchor, node`, n, names.map(() => 'f32' as const));
    const X = new Float32Array(n * names.length);
    cols.forEach((col, c) => {
      for (let i = 0; i < n; i++) X[i * names.length + c] = col[i]!;
    });
    return X;
  };
  return { names, train: await read(splitWhere.train), val: await read(splitWhere.val), test: await read(splitWhere.test) };
}
