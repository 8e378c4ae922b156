import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // TF.js wasm and DuckDB hold native state; one fork per file keeps them apart.
    pool: 'forks',
    // At least two files at a time: vitest's default (cores − 1) runs one at a time on a 2-core machine,
    // and most files wait on DuckDB, spawned binaries and worker start-up as much as they compute. On this
    // 2-core machine the default suite took 624 s with one fork and 473 s with two (2026-11-28, CI=true).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
