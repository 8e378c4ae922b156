import { describe, expect, it } from 'vitest';
import { DUCKDB_MEMORY_ENV, duckdbMemoryLimit } from '../../src/core/duckdb_memory.js';
import { queryValue, withDuck } from '../../src/data/duck.js';

describe('GNNCTL_DUCKDB_MEMORY', () => {
  it.each([
    ['unset', undefined, undefined],
    ['blank', '  ', undefined],
    ['a size', '3GB', '3GB'],
    ['a padded size', ' 512MB ', '512MB'],
  ])('%s reads as the cap %s', (_name, value, expected) => {
    expect(duckdbMemoryLimit(value === undefined ? {} : { [DUCKDB_MEMORY_ENV]: value })).toBe(expected);
  });

  it("caps a stage's DuckDB", async () => {
    const before = process.env[DUCKDB_MEMORY_ENV];
    process.env[DUCKDB_MEMORY_ENV] = '300MB';
    try {
      const limit = await withDuck(({ conn }) => queryValue<string>(conn, "SELECT current_setting('memory_limit')"));
      // DuckDB reports the cap in its own units (300MB = 286.1 MiB).
      expect(limit).toMatch(/^286\.1 MiB$/);
    } finally {
      if (before === undefined) delete process.env[DUCKDB_MEMORY_ENV];
      else process.env[DUCKDB_MEMORY_ENV] = before;
    }
  });
});
