/**
 * The later pipeline stages (embed → distill → export) on tiny synthetic data: a config whose
 * `distillation` and `export` blocks are the bundled `configs/retail.yaml`'s (read from that file, so the
 * student's request shape stays the one the bundled default serves), with small sizes for speed, and
 * readers for what those stages write (Parquet rows and key-value metadata through DuckDB).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify, parse } from 'yaml';
import { duckRows as sqlRows } from './graph.js';
import { synthConfig } from './synth.js';

const ROOT = join(import.meta.dirname, '..', '..');

export const FRAUD = 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id';
export const CHURN = 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0';
export const RTI_PATH = 'transactions.customer_id->customers.customer_id->transactions.customer_id';

/** `configs/retail.yaml`'s distillation block with sizes small enough for a test (same fields, same exclusions). */
export function bundledDistillation(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const bundled = parse(readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8')) as { distillation: Record<string, unknown> };
  return { ...bundled.distillation, epochs: 2, batch_size: 256, hidden: 16, element_dim: 8, projection_dim: 8, patience: 2, ...overrides };
}

/** `configs/retail.yaml`'s export block. */
export function bundledExport(): Record<string, unknown> {
  return (parse(readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8')) as { export: Record<string, unknown> }).export;
}

/**
 * A config over the tiny synthetic tables with tasks `churn` (customers) and `fraud` (transactions), a
 * small deep model (1 epoch of a few steps) and the bundled distillation block.
 */
export function pipelineConfig(opts: { distillation?: Record<string, unknown>; model?: string; data?: string; tables?: string } = {}): string {
  const extra = `tasks:
  churn:
    query: ${CHURN}
    split: { train_anchors: 2 }
  fraud:
    query: ${FRAUD}
    model: { num_neighbors: [1, 6] }
model: ${opts.model ?? '{ channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 64, max_steps_per_epoch: 3 }'}
${stringify({ distillation: bundledDistillation(opts.distillation), export: bundledExport() })}`;
  return synthConfig(extra, opts.data ?? '');
}

/** Rows of a SQL query as plain JS objects, on a throwaway in-memory DuckDB. */
export { sqlRows };

/** A path as a SQL string literal. */
export function sqlPath(path: string): string {
  return `'${path.replaceAll("'", "''")}'`;
}

/** The key-value metadata of a Parquet file (without Arrow's schema entry). */
export async function parquetKv(path: string): Promise<Record<string, string>> {
  const rows = await sqlRows(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${sqlPath(path)})`);
  return Object.fromEntries(rows.filter((r) => r.k !== 'ARROW:schema').map((r) => [r.k as string, r.v as string]));
}

/** Column name → DuckDB type of a Parquet file (or glob). */
export async function parquetTypes(path: string): Promise<Record<string, string>> {
  const rows = await sqlRows(`DESCRIBE SELECT * FROM read_parquet(${sqlPath(path)})`);
  return Object.fromEntries(rows.map((r) => [r.column_name as string, r.column_type as string]));
}

/** An embeddings file as key (text) → vector, in file order. */
export async function readEmbeddings(path: string, key: string): Promise<Map<string, Float32Array>> {
  const rows = await sqlRows(`SELECT CAST("${key}" AS VARCHAR) AS k, embedding AS e FROM read_parquet(${sqlPath(path)})`);
  return new Map(rows.map((r) => [r.k as string, Float32Array.from(r.e as number[])]));
}

/** Largest |a − b| over two vectors of the same length (Infinity when the lengths differ). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
