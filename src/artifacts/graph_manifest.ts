/**
 * The graph artifact's contract: what `graph build` writes into `artifacts/graphs/<name>-<fingerprint>/`
 * and what later stages read back. Arrays are raw little-endian typed-array files; everything else is in
 * manifest.json. Rows of every table are numbered by dense node ids in time order (then primary key,
 * then source order), so a neighbour list sorted by node id is also sorted by time.
 */
import { join } from 'node:path';
import type { ColumnKind } from '../config/schema.js';

/** The path of a table's `rows.parquet` (node ids, times, resolved parents and the raw columns). */
export function rowsPath(graphDir: string, manifest: GraphManifest, table: string): string {
  return join(graphDir, manifest.tables[table]!.rows_file);
}

/**
 * Part of every build's fingerprint: raise it when what a build writes or infers changes (column roles,
 * e.g. integer codes read as categories), so a cached graph built by the older rules is rebuilt instead of reused.
 */
export const GRAPH_FORMAT = 6;

/** How a column is used: a feature kind, or why it is not one. */
export type ColumnRole = ColumnKind | 'primary_key' | 'foreign_key' | 'time';

export interface ColumnSchema {
  name: string;
  /** DuckDB type, e.g. VARCHAR, BIGINT, DOUBLE, TIMESTAMP */
  type: string;
  role: ColumnRole;
  /** why the role was chosen (inferred rule or config override) */
  reason: string;
}

export interface TableSchema {
  primary_key: { column: string; type: string } | null;
  time_column: string | null;
  foreign_keys: { column: string; target: string; type: string }[];
  columns: ColumnSchema[];
}

/** The schema part of the graph: what a trained model depends on. Its hash is the schema fingerprint. */
export interface GraphSchema {
  tables: Record<string, TableSchema>;
}

/** A numeric column's distribution on the fit window (drift reference; see graph/distribution.ts). */
export interface NumericReference {
  /** interior bin edges, ascending: bin i holds values in (edges[i−1], edges[i]] */
  edges: number[];
  /** share of rows per bin (edges.length + 1 bins), then the null share last */
  shares: number[];
}

export interface CategoricalReference {
  /** share of rows per code: [null, out-of-vocabulary, vocab[0], vocab[1], …] */
  shares: number[];
}

export interface NumericColumnManifest {
  name: string;
  file: string;
  mean: number;
  std: number;
  nulls: number;
  /** deciles and shares on the fit window (drift reference) */
  reference: NumericReference;
}

export interface CategoricalColumnManifest {
  name: string;
  file: string;
  /** DuckDB type of the raw values (vocabulary entries are their text form) */
  type: string;
  /** code 0 = null, 1 = out of vocabulary, 2 + i = vocab[i] */
  vocab: string[];
  nulls: number;
  /** rows whose value is not in the vocabulary (rare values past max_vocab, or first seen after fit_until) */
  oov: number;
  /** share of each code on the fit window (drift reference) */
  reference: CategoricalReference;
}

export interface TimestampColumnManifest {
  name: string;
  file: string;
  nulls: number;
}

export interface ForeignKeyManifest {
  column: string;
  target: string;
  /** Int32 file: parent node id per row, −1 when null or unmatched */
  file: string;
  nulls: number;
  unmatched: number;
  unmatched_examples: string[];
}

export interface TableManifest {
  rows: number;
  /** Float64 epoch seconds per row, when the table has a time column */
  time_file: string | null;
  time_range: [number, number] | null;
  /**
   * Parquet file of the table's rows in node order: `__node`, `__t` (epoch seconds, tables with a time
   * column), `__fk_<column>` (parent node id or NULL) for each foreign key, then every source column.
   */
  rows_file: string;
  numeric: NumericColumnManifest[];
  categorical: CategoricalColumnManifest[];
  timestamps: TimestampColumnManifest[];
  foreign_keys: ForeignKeyManifest[];
}

export interface EdgeManifest {
  /** e.g. `transactions.customer_id->customers` (fk) or `customers<-transactions.customer_id` (rev) */
  name: string;
  src: string;
  dst: string;
  /** fk: each src row has ≤ 1 neighbour (its parent); rev: a parent's children, time-sorted CSR */
  kind: 'fk' | 'rev';
  /** the foreign-key column (on the child table) */
  column: string;
  /** the child table (= src for fk, dst for rev) */
  child_table: string;
  count: number;
  /** rev only: Int32 files of the CSR */
  indptr_file: string | null;
  indices_file: string | null;
  degree: { mean: number; p99: number; max: number };
}

export interface GraphManifest {
  kind: 'graph';
  format: number;
  gnnctl: string;
  name: string;
  /** hash of the data config and the source files' sizes and mtimes: the cache key and folder suffix */
  fingerprint: string;
  /** hash of `schema`: tables, keys, columns, types and roles (not data statistics) */
  schema_fingerprint: string;
  schema: GraphSchema;
  created_at: string;
  /** feature statistics and vocabularies were fitted on rows with time ≤ this (epoch seconds) */
  fit_until: number | null;
  /** newest and oldest time over all tables with a time column */
  time_range: [number, number] | null;
  sources: Record<string, { path: string; bytes: number; mtime_ms: number }[]>;
  tables: Record<string, TableManifest>;
  edges: EdgeManifest[];
  warnings: string[];
  timings: Record<string, number>;
}
