/**
 * Reading a built graph back in tests: node id → primary key, per table, straight from rows.parquet.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { join } from 'node:path';
import type { GraphManifest } from '../../src/artifacts/graph_manifest.js';

/** Rows of a SQL query as plain JS objects, on a throwaway in-memory DuckDB. */
export async function duckRows(sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    return (await c.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** The primary key (as text) of every node of `table`, indexed by node id. */
export async function nodeKeys(graphDir: string, manifest: GraphManifest, table: string): Promise<string[]> {
  const pk = manifest.schema.tables[table]!.primary_key;
  if (!pk) throw new Error(`${table} has no primary key`);
  const file = join(graphDir, manifest.tables[table]!.rows_file).replaceAll("'", "''");
  const rows = await duckRows(`SELECT CAST("${pk.column}" AS VARCHAR) AS k FROM '${file}' ORDER BY __node`);
  return rows.map((r) => r.k as string);
}
