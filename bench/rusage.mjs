#!/usr/bin/env node
/**
 * Runs a script (or `gnnctl`: bin/gnnctl.js) in this process and, on exit, writes the process's resource
 * usage as JSON to the file named by GNNCTL_BENCH_USAGE_FILE: peak RSS (KB) and user and system CPU
 * seconds, worker threads, TF.js wasm heaps and DuckDB's threads included (they live in this process).
 * Node reports no rusage for a spawned child, so bench/scale.mjs runs each stage through this.
 *
 *   GNNCTL_BENCH_USAGE_FILE=/tmp/u node bench/rusage.mjs gnnctl train -t fraud --json
 *   GNNCTL_BENCH_USAGE_FILE=/tmp/u node bench/rusage.mjs bench/serve_request.mjs --repository DIR --model NAME
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const file = process.env.GNNCTL_BENCH_USAGE_FILE;
process.on('exit', () => {
  if (!file) return;
  const u = process.resourceUsage();
  writeFileSync(file, JSON.stringify({ max_rss_kb: u.maxRSS, user_seconds: u.userCPUTime / 1e6, system_seconds: u.systemCPUTime / 1e6 }));
});
const [target, ...rest] = process.argv.slice(2);
if (!target) {
  console.error('usage: node bench/rusage.mjs gnnctl|SCRIPT [ARGS…]');
  process.exit(2);
}
const script = target === 'gnnctl' ? new URL('../bin/gnnctl.js', import.meta.url).pathname : resolve(target);
process.argv = [process.argv[0], script, ...rest];
await import(pathToFileURL(script).href);
