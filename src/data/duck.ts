/**
 * DuckDB access: one in-process database per stage, opened and closed explicitly, plus the fast path that
 * moves whole columns into typed arrays. Numeric columns come out of DuckDB in 2,048-row chunks whose
 * vectors already are typed arrays; copying them with `TypedArray.set` is ~100× faster than reading values
 * one by one, which matters at H&M scale (31.8M transactions).
 */
import { DuckDBInstance, type DuckDBConnection, type DuckDBVector } from '@duckdb/node-api';
import { availableParallelism, totalmem } from 'node:os';
import { duckdbMemoryLimit } from '../core/duckdb_memory.js';

export interface Duck {
  instance: DuckDBInstance;
  conn: DuckDBConnection;
}

export interface DuckOptions {
  /** Folder for DuckDB's spill files (large sorts and joins). */
  tempDir?: string;
  /** Database file; default in-memory. */
  path?: string;
  /** Cap on DuckDB's memory, e.g. "8GB" (default: $GNNCTL_DUCKDB_MEMORY, else 40% of RAM, leaving room for the JS heap). */
  memoryLimit?: string;
}

/** Opens DuckDB, runs `fn`, and always closes the connection and the database. */
export async function withDuck<T>(fn: (duck: Duck) => Promise<T>, opts: DuckOptions = {}): Promise<T> {
  const duck = await openDuck(opts);
  try {
    return await fn(duck);
  } finally {
    closeDuck(duck);
  }
}

/**
 * Opens DuckDB for a caller whose lifetime is not one callback (an async generator streaming a query);
 * it must call {@link closeDuck} in `finally`. Everything else uses {@link withDuck}.
 */
export async function openDuck(opts: DuckOptions = {}): Promise<Duck> {
  const memoryLimit = opts.memoryLimit ?? duckdbMemoryLimit() ?? `${Math.max(1, Math.floor((totalmem() * 0.4) / 2 ** 30))}GB`;
  const instance = await DuckDBInstance.create(opts.path ?? ':memory:', {
    threads: String(availableParallelism()),
    memory_limit: memoryLimit,
    ...(opts.tempDir ? { temp_directory: opts.tempDir } : {}),
  });
  const conn = await instance.connect();
  try {
    await conn.run("SET TimeZone = 'UTC'");
  } catch (e) {
    closeDuck({ instance, conn });
    throw e;
  }
  return { instance, conn };
}

export function closeDuck(duck: Duck): void {
  duck.conn.closeSync();
  duck.instance.closeSync();
}

/** Quotes an identifier for SQL: hyphens, spaces and quotes in column names all work. */
export function q(ident: string): string {
  return `"${ident.replaceAll('"', '""')}"`;
}

/** A SQL string literal. */
export function lit(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/** Rows of a query as plain objects (small results only: schema, stats, examples). */
export async function queryRows<T = Record<string, unknown>>(conn: DuckDBConnection, sql: string): Promise<T[]> {
  const reader = await conn.runAndReadAll(sql);
  return reader.getRowObjectsJS() as T[];
}

export async function queryValue<T = unknown>(conn: DuckDBConnection, sql: string): Promise<T> {
  const rows = await queryRows<Record<string, unknown>>(conn, sql);
  const first = rows[0];
  return (first ? Object.values(first)[0] : undefined) as T;
}

export type ColumnKindOut = 'f64' | 'f32' | 'i32';
export type TypedOut = Float64Array | Float32Array | Int32Array;
/** The typed array `readColumns` fills for one column kind. */
export type TypedOutOf<K extends ColumnKindOut> = K extends 'f64' ? Float64Array : K extends 'f32' ? Float32Array : Int32Array;

/**
 * Streams a query's columns into preallocated typed arrays. The query must produce, per requested column,
 * DOUBLE (for f64 and f32) or INTEGER (for i32) values without NULLs (map them in SQL: `coalesce(x, 'NaN')`,
 * `coalesce(x, -1)`), and exactly `rows` rows.
 */
export async function readColumns<const K extends readonly ColumnKindOut[]>(
  conn: DuckDBConnection,
  sql: string,
  rows: number,
  kinds: K,
): Promise<{ -readonly [I in keyof K]: TypedOutOf<K[I]> }> {
  const out: TypedOut[] = kinds.map((k) => (k === 'f64' ? new Float64Array(rows) : k === 'f32' ? new Float32Array(rows) : new Int32Array(rows)));
  const result = await conn.stream(sql);
  if (result.columnCount !== kinds.length) throw new Error(`readColumns: query has ${result.columnCount} columns, expected ${kinds.length}`);
  let offset = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const n = chunk.rowCount;
    if (offset + n > rows) throw new Error(`readColumns: query returned more than ${rows} rows`);
    for (let c = 0; c < kinds.length; c++) {
      copyVector(chunk.getColumnVector(c), out[c]!, offset, n);
    }
    offset += n;
  }
  if (offset !== rows) throw new Error(`readColumns: query returned ${offset} rows, expected ${rows}`);
  // out[c] was allocated from kinds[c] above, which is what the mapped type states.
  return out as { -readonly [I in keyof K]: TypedOutOf<K[I]> };
}

function copyVector(vec: DuckDBVector, dst: TypedOut, offset: number, n: number): void {
  // DuckDB's numeric vectors keep their values in a typed array named `items` (private in the typings).
  const items = (vec as unknown as { items?: unknown }).items;
  if (items instanceof Float64Array || items instanceof Int32Array || items instanceof Float32Array) {
    if (dst instanceof Float32Array && items instanceof Float64Array) {
      for (let i = 0; i < n; i++) dst[offset + i] = items[i]!;
    } else {
      dst.set(items.subarray(0, n), offset);
    }
    return;
  }
  for (let i = 0; i < n; i++) {
    const v = vec.getItem(i);
    dst[offset + i] = v === null ? Number.NaN : Number(v);
  }
}

/** Streams one VARCHAR column into a JS string array (keys, for small-to-medium tables). */
export async function readStrings(conn: DuckDBConnection, sql: string): Promise<(string | null)[]> {
  const result = await conn.stream(sql);
  const out: (string | null)[] = [];
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const vec = chunk.getColumnVector(0);
    for (let i = 0; i < chunk.rowCount; i++) out.push(vec.getItem(i) as string | null);
  }
  return out;
}
