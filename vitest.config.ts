import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // TF.js wasm and DuckDB hold native state; one fork per file keeps them apart.
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
