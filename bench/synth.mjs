#!/usr/bin/env node
/**
 * Benchmark of `gnnctl datasets synth`: one JSON line with the size, format, wall time, row counts and
 * peak RSS. Runs the compiled generator, so build first:
 *
 *   npm run build && node bench/synth.mjs [--size medium] [--format csv|parquet] [--seed 0] [--out DIR] [--keep]
 *
 * Without --out the data goes to a temporary folder that is deleted afterwards (unless --keep).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateSynthetic } from '../dist/datasets/synth.js';
import { setQuiet } from '../dist/core/log.js';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: 'medium' },
    format: { type: 'string', default: 'csv' },
    seed: { type: 'string', default: '0' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
setQuiet(true);
const out = values.out ?? mkdtempSync(join(tmpdir(), 'gnnctl-bench-synth-'));
const t0 = performance.now();
try {
  const r = await generateSynthetic({ out, size: values.size, seed: Number(values.seed), format: values.format });
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({
    bench: 'synth', size: r.size, format: r.format, seed: r.seed, seconds: Math.round(seconds * 100) / 100,
    rows: r.rows, transactions_per_s: Math.round(r.rows.transactions / seconds),
    // resourceUsage().maxRSS is in kilobytes
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024), node: process.version,
  }));
} finally {
  if (!values.out && !values.keep) rmSync(out, { recursive: true, force: true });
}
