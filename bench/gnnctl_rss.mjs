#!/usr/bin/env node
/**
 * Runs `bin/gnnctl.js <args>` in this process and, on exit, writes the process's peak RSS (kilobytes,
 * worker threads, TF.js wasm heaps and DuckDB included: they live in this process) to the file named by
 * GNNCTL_BENCH_RSS_FILE. Node reports no rusage for a spawned child, so bench/scale.mjs runs each stage
 * through this.
 *
 *   GNNCTL_BENCH_RSS_FILE=/tmp/rss node bench/gnnctl_rss.mjs train -t fraud --json
 */
import { writeFileSync } from 'node:fs';

const file = process.env.GNNCTL_BENCH_RSS_FILE;
process.on('exit', () => {
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
process.argv = [process.argv[0], new URL('../bin/gnnctl.js', import.meta.url).pathname, ...process.argv.slice(2)];
await import('../bin/gnnctl.js');
