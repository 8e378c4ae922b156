#!/usr/bin/env node
/**
 * `predict` against `embed` on the same churn run and anchor (exact mode, every customer): end-to-end and
 * compute seconds, median of --repeat runs (default 3), interleaved (embed, predict, embed, …) so a change
 * in the machine's load hits both alike; the ratio predict / embed is the target (≤ 1.2). The load
 * average before and after is printed with the figures: on a shared machine they are provisional.
 *
 *   npm run build && node bench/predict.mjs --size medium [--run RUN] [--repeat 3]
 * Without --run it trains a 1-epoch churn run first (not timed).
 */
import { loadavg } from 'node:os';
import { arg, churnBench, peakRssMb } from './common.mjs';

const size = arg('size', 'medium');
const repeat = Number(arg('repeat', '3'));
const { cfg, run } = await churnBench(size);
const { embed } = await import('../dist/embed/embed.js');
const { predict } = await import('../dist/predict/predict.js');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load_before = loadavg().map((x) => Math.round(x * 100) / 100);
const runs = { embed: [], predict: [] };
let rows = null;
for (let i = 0; i < repeat; i++) {
  const e = await embed({ cfg, run, mode: 'exact', out: `${cfg.artifactsDir}/bench-predict-embed.parquet` });
  runs.embed.push({ seconds: e.seconds, compute_seconds: e.compute_seconds });
  const p = await predict({ cfg, run, mode: 'exact', out: `${cfg.artifactsDir}/bench-predict.parquet` });
  runs.predict.push({ seconds: p.seconds, compute_seconds: p.compute_seconds });
  rows = p.rows;
}
const figures = (k) => ({ seconds_median: median(runs[k].map((r) => r.seconds)), compute_seconds_median: median(runs[k].map((r) => r.compute_seconds)), seconds: runs[k].map((r) => r.seconds) });
const out = {
  bench: 'predict vs embed (customers, churn, exact)',
  size,
  run,
  rows,
  repeat,
  embed: figures('embed'),
  predict: figures('predict'),
  load_before,
  load_after: loadavg().map((x) => Math.round(x * 100) / 100),
  cores: (await import('node:os')).cpus().length,
  peak_rss_mb: peakRssMb(),
};
out.ratio_end_to_end = Math.round((out.predict.seconds_median / out.embed.seconds_median) * 100) / 100;
out.ratio_compute = Math.round((out.predict.compute_seconds_median / out.embed.compute_seconds_median) * 100) / 100;
out.provisional = out.load_before[0] > out.cores ? `load average ${out.load_before[0]} on ${out.cores} cores: the machine is shared; rerun on a quiet machine` : null;
console.log(JSON.stringify(out));
