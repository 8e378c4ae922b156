#!/usr/bin/env node
/**
 * graph build at a size: wall time (forced rebuild) and peak RSS, one JSON object.
 *
 *   npm run build && node bench/graph.mjs --size medium      (targets: ≤ 30 s, ≤ 3 GB)
 *   node bench/graph.mjs --size large                        (bounded memory at H&M scale)
 */
import { arg, benchConfig, dataset, peakRssMb } from './common.mjs';

const size = arg('size', 'medium');
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { buildGraph } = await import('../dist/graph/build.js');
const cfg = loadConfig(benchConfig(size, data));
const t = performance.now();
const r = await buildGraph(cfg, { force: true });
const seconds = (performance.now() - t) / 1000;
console.log(JSON.stringify({
  bench: 'graph build',
  size,
  seconds: Math.round(seconds * 100) / 100,
  peak_rss_mb: peakRssMb(),
  tables: Object.fromEntries(Object.entries(r.manifest.tables).map(([k, v]) => [k, v.rows])),
  timings: r.manifest.timings,
}));
