#!/usr/bin/env node
/**
 * Batch embeddings of every customer with a churn run: exact (layer-wise) and sampled mode, end to end
 * (graph loading included) and compute-only entities/s, peak RSS; with `--reference`, the PyTorch
 * reference's sampled and layer-wise figures on the same data, and the ratios.
 *
 *   npm run build && node bench/embed.mjs --size medium [--run RUN] [--reference] [--repeats 3]
 * Without --run it trains a 1-epoch churn run first (not timed).
 *
 * Like with like: the reference times its forward pass only (data in memory), median of 3 repeats in one
 * process, at its test anchor (7 days before the data's last day). So each mode here runs `--repeats`
 * times in this process and reports the median compute-only rate (`entities_per_s`: entities over the
 * time spent computing representations, without graph loading, worker start-up, key reading or Parquet
 * writing, which `seconds_end_to_end` includes), at the same anchor. One difference remains and is in
 * the reference's favour on work done: its `full` mode aggregates every transaction before the anchor
 * (≈ 2M), while exact mode here aggregates the 10 most recent per customer, as the run was trained
 * (`last` sampling) — see `reference_note` in the output.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, churnBench, flag, peakRssMb, reference } from './common.mjs';

const size = arg('size', 'medium');
const repeats = Number(arg('repeats', '3'));
const { cfg, run, data } = await churnBench(size);
const { embed } = await import('../dist/embed/embed.js');
const { loadavg } = await import('node:os');
// The reference's test anchor: day 0 is the first day of data, last_day = ceil(last time in days), anchor = last_day − 7.
const lastDay = JSON.parse(readFileSync(join(data, 'manifest.json'), 'utf8')).last_day;
const anchorTime = new Date(Date.parse(`${lastDay}T00:00:00Z`) - 7 * 86400e3).toISOString();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = { bench: 'embed customers', size, run, anchor_time: anchorTime, repeats, load_average_start: loadavg().map((x) => Math.round(x * 100) / 100) };
for (const mode of ['exact', 'sampled']) {
  const runs = [];
  for (let r = 0; r < repeats; r++) {
    const cpu0 = process.cpuUsage();
    const e = await embed({ cfg, run, mode, anchorTime, out: `${cfg.artifactsDir}/bench-embed-${mode}.parquet` });
    const cpu = process.cpuUsage(cpu0);
    runs.push({ seconds_end_to_end: e.seconds, compute_seconds: e.compute_seconds, entities_per_s: e.entities_per_s, rows: e.rows, workers: e.workers, cpu_seconds: Math.round((cpu.user + cpu.system) / 1e4) / 100 });
  }
  out[mode] = { entities_per_s: median(runs.map((x) => x.entities_per_s)), compute_seconds: median(runs.map((x) => x.compute_seconds)), seconds_end_to_end: median(runs.map((x) => x.seconds_end_to_end)), rows: runs[0].rows, runs };
}
out.peak_rss_mb = peakRssMb();
if (flag('reference')) {
  // The reference embeds with its own trained model; train it (one epoch) if it has none yet.
  const { existsSync } = await import('node:fs');
  if (!existsSync(`${data}/gnn_churn.pt`)) reference(data, ['--mode', 'train', '--epochs', '1']);
  const sampled = reference(data, ['--mode', 'infer', '--how', 'sampled']);
  const full = reference(data, ['--mode', 'infer', '--how', 'full']);
  out.reference = {
    sampled_entities_per_s: sampled?.nodes_per_s ?? null,
    full_entities_per_s: full?.nodes_per_s ?? null,
    sampled_peak_rss_mb: sampled?.peak_rss_mb ?? null,
    full_peak_rss_mb: full?.peak_rss_mb ?? null,
  };
  out.reference_note = 'reference full aggregates every transaction before the anchor; exact mode here the 10 most recent per customer (the run\'s last sampling)';
  if (sampled?.nodes_per_s) out.ratio_sampled = Math.round((out.sampled.entities_per_s / sampled.nodes_per_s) * 100) / 100;
  if (full?.nodes_per_s) out.ratio_exact_vs_full = Math.round((out.exact.entities_per_s / full.nodes_per_s) * 100) / 100;
}
out.load_average_end = loadavg().map((x) => Math.round(x * 100) / 100);
console.log(JSON.stringify(out));
