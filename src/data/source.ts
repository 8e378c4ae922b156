/**
 * Table sources → DuckDB views. Each configured table becomes a view `src_<name>` over its CSV/Parquet
 * files (globs allowed) or over a table of an attached `.duckdb` file, so every later step is plain SQL.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, statSync } from 'node:fs';
import type { TableSpec } from '../config/load.js';
import { DataError, suggest } from '../core/errors.js';
import { lit, q, queryRows, queryValue } from './duck.js';

export interface SourceFile {
  path: string;
  bytes: number;
  mtime_ms: number;
}

export interface ColumnInfo {
  name: string;
  /** DuckDB type name, e.g. VARCHAR, BIGINT, TIMESTAMP */
  type: string;
}

const GLOB = /[*?[\]{}]/;

/** The files behind a table (globs expanded) with size and mtime, for the build cache key. */
export async function sourceFiles(conn: DuckDBConnection, spec: TableSpec): Promise<SourceFile[]> {
  const where = `data.tables.${spec.name}`;
  if (spec.databasePath) {
    if (!existsSync(spec.databasePath)) {
      throw new DataError(`database file not found: ${spec.databasePath}`, { where: `${where}.database`, hint: 'check the path (relative paths resolve against the config file\'s folder)' });
    }
    const st = statSync(spec.databasePath);
    return [{ path: spec.databasePath, bytes: st.size, mtime_ms: st.mtimeMs }];
  }
  const files: SourceFile[] = [];
  for (const p of spec.paths) {
    let matched: string[];
    if (GLOB.test(p)) {
      const rows = await queryRows<{ file: string }>(conn, `SELECT file FROM glob(${lit(p)}) ORDER BY file`);
      matched = rows.map((r) => r.file);
      if (matched.length === 0) throw new DataError(`no files match ${p}`, { where: `${where}.path`, hint: 'check the glob and the working directory (or set data.root)' });
    } else {
      if (!existsSync(p)) throw new DataError(`file not found: ${p}`, { where: `${where}.path`, hint: 'check the path; relative paths resolve against data.root or the working directory' });
      matched = [p];
    }
    for (const f of matched) {
      const st = statSync(f);
      files.push({ path: f, bytes: st.size, mtime_ms: st.mtimeMs });
    }
  }
  return files;
}

/** The SQL table expression that reads a table's source. */
export function sourceSql(spec: TableSpec, files: SourceFile[], attachedAs?: string): string {
  if (spec.databasePath) return `${attachedAs ?? 'srcdb'}.${q(spec.table ?? spec.name)}`;
  const list = `[${files.map((f) => lit(f.path)).join(', ')}]`;
  if (spec.format === 'parquet') return `read_parquet(${list}, union_by_name = true)`;
  const opts: string[] = ['union_by_name = true'];
  for (const [k, v] of Object.entries(spec.csv ?? {})) {
    if (v === undefined) continue;
    const val = Array.isArray(v) ? `[${v.map((s) => lit(String(s))).join(', ')}]` : typeof v === 'string' ? lit(v) : String(v);
    opts.push(`${k} = ${val}`);
  }
  return `read_csv(${list}, ${opts.join(', ')})`;
}

/**
 * Creates the view `src_<table>` and returns its columns. Errors name the table and the file.
 */
export async function createSourceView(conn: DuckDBConnection, spec: TableSpec, files: SourceFile[], attachIndex: number): Promise<ColumnInfo[]> {
  let alias: string | undefined;
  if (spec.databasePath) {
    alias = `srcdb${attachIndex}`;
    await conn.run(`ATTACH ${lit(spec.databasePath)} AS ${alias} (READ_ONLY)`);
    const tables = await queryRows<{ name: string }>(conn, `SELECT table_name AS name FROM information_schema.tables WHERE table_catalog = ${lit(alias)}`);
    const wanted = spec.table ?? spec.name;
    if (!tables.some((t) => t.name === wanted)) {
      throw new DataError(`table "${wanted}" not found in ${spec.databasePath}`, {
        where: `data.tables.${spec.name}.table`,
        hint: suggest(wanted, tables.map((t) => t.name)),
      });
    }
  }
  const view = `src_${spec.name}`;
  try {
    await conn.run(`CREATE OR REPLACE VIEW ${q(view)} AS SELECT * FROM ${sourceSql(spec, files, alias)}`);
    return await queryRows<ColumnInfo>(conn, `SELECT column_name AS name, column_type AS type FROM (DESCRIBE ${q(view)})`);
  } catch (e) {
    throw new DataError(`cannot read table ${spec.name}: ${firstLine(e)}`, {
      where: files.map((f) => f.path).join(', '),
      hint: spec.format === 'csv' ? 'check the CSV; reader options (delim, header, quote, nullstr) go under `csv:` in the table\'s config' : 'check that the file is valid Parquet',
    });
  }
}

export async function rowCount(conn: DuckDBConnection, table: string): Promise<number> {
  return Number(await queryValue<bigint | number>(conn, `SELECT count(*) FROM ${q(table)}`));
}

export function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split('\n')[0]!.trim();
}
