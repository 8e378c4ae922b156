#!/usr/bin/env node
/**
 * Batch embeddings of every customer with a churn run: exact (layer-wise) and sampled mode, end to end
 * (graph loading included) and compute-only entities/s, peak RSS; with `--reference`, the PyTorch
 * reference's sampled and layer-wise figures on the same data, and the ratios.
 *
 *   npm run build && node bench/embed.mjs --size medium [--run RUN] [--reference]
 * Without --run it trains a 1-epoch churn run first (not timed).
 */
import { arg, churnBench, flag, peakRssMb, reference } from './common.mjs';

const size = arg('size', 'medium');
const { cfg, run, data } = await churnBench(size);
const { embed } = await import('../dist/embed/embed.js');
const out = { bench: 'embed customers', size, run };
for (const mode of ['exact', 'sampled']) {
  const r = await embed({ cfg, run, mode, out: `${cfg.artifactsDir}/bench-embed-${mode}.parquet` });
  out[mode] = { seconds_end_to_end: r.seconds, compute_seconds: r.compute_seconds, entities_per_s: r.entities_per_s, rows: r.rows };
}
out.peak_rss_mb = peakRssMb();
if (flag('reference')) {
  // The reference embeds with its own trained model; train it (one epoch) if it has none yet.
  const { existsSync } = await import('node:fs');
  if (!existsSync(`${data}/gnn_churn.pt`)) reference(data, ['--mode', 'train', '--epochs', '1']);
  const sampled = reference(data, ['--mode', 'infer', '--how', 'sampled']);
  const full = reference(data, ['--mode', 'infer', '--how', 'full']);
  out.reference = { sampled_entities_per_s: sampled?.nodes_per_s ?? null, full_entities_per_s: full?.nodes_per_s ?? null };
  if (sampled?.nodes_per_s) out.ratio_sampled = Math.round((out.sampled.entities_per_s / sampled.nodes_per_s) * 100) / 100;
  if (full?.nodes_per_s) out.ratio_exact_vs_full = Math.round((out.exact.entities_per_s / full.nodes_per_s) * 100) / 100;
}
console.log(JSON.stringify(out));
