/**
 * The user's cap on DuckDB's memory, `GNNCTL_DUCKDB_MEMORY` (a DuckDB size such as "4GB"). Every DuckDB
 * instance gnnctl opens — a stage's (`data/duck.ts`) and the synthetic-data writer's — reads it here, so
 * one setting bounds them all.
 */
export const DUCKDB_MEMORY_ENV = 'GNNCTL_DUCKDB_MEMORY';

/** The cap the user set, or undefined when the variable is unset or blank. */
export function duckdbMemoryLimit(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[DUCKDB_MEMORY_ENV]?.trim();
  return value ? value : undefined;
}
