import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two tiers, chosen by file name. `*.e2e.test.ts` files spawn the binary or train a model for more than a
 * few seconds; they need the compiled `dist/` (training's worker threads run it), so only they run the
 * global setup that rebuilds it. Every other `*.test.ts` is a fast unit test of pure logic.
 * `npm run test:unit` and `npm run test:e2e` pick one with `--project`; `npm test` runs both.
 */
const E2E = 'test/**/*.e2e.test.ts';

export default defineConfig({
  test: {
    // TF.js wasm and DuckDB hold native state; one fork per file keeps them apart.
    pool: 'forks',
    // At least two files at a time: vitest's default (cores − 1) runs one at a time on a 2-core machine,
    // and most files wait on DuckDB, spawned binaries and worker start-up as much as they compute.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 120_000,
    hookTimeout: 120_000,
    projects: [
      // Unit files share a fork's module cache: loading TF.js and DuckDB once per fork, not once per file,
      // is most of this tier's time, and these files leave no backend or server state behind.
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [E2E], isolate: false } },
      { extends: true, test: { name: 'e2e', include: [E2E], globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
