#!/usr/bin/env node
/**
 * Training throughput on churn (2-layer SAGE, 64 channels, fanouts [10, 5], batch 512): seeds/s, seconds
 * per epoch, where the time goes (sampling, feature gathering, TF.js step) and peak RSS; with
 * `--reference`, the PyTorch reference on the same data in the same run, and the ratio.
 *
 *   npm run build && node bench/train.mjs --size medium [--epochs 1] [--reference]
 */
import { arg, benchConfig, dataset, flag, peakRssMb, reference } from './common.mjs';

const size = arg('size', 'medium');
const epochs = Number(arg('epochs', '1'));
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);
const cfg = loadConfig(benchConfig(size, data));
cfg.taskSpecs.churn.model = { ...cfg.taskSpecs.churn.model, encoder: 'sage', layers: 2, channels: 64, num_neighbors: [10, 5], batch_size: 512, sampling: 'last' };
const r = await train({ cfg, task: 'churn', backend: arg('backend', 'auto'), epochs, skip_baseline: !flag('baseline') });
const e = r.metrics.epochs;
const out = {
  bench: 'train churn',
  size,
  run: r.runId,
  seeds_per_epoch: r.metrics.counts.train,
  seeds_per_s: Math.round(e.reduce((a, x) => a + x.seeds_per_s, 0) / e.length),
  seconds_per_epoch: Math.round((e.reduce((a, x) => a + x.seconds, 0) / e.length) * 10) / 10,
  time_split: e[e.length - 1].timing,
  val_auroc: r.metrics.val.auroc,
  test_auroc: r.metrics.test.auroc,
  peak_rss_mb: peakRssMb(),
};
if (flag('reference')) {
  const ref = reference(data, ['--mode', 'train', '--epochs', String(Math.max(1, epochs))]);
  out.reference = ref && !ref.error ? { seeds_per_s: ref.median_seeds_per_s, seconds_per_epoch: ref.median_epoch_s, peak_rss_mb: ref.peak_rss_mb, test_auroc: ref.test_auroc_sampled } : ref;
  if (ref && !ref.error) out.ratio_vs_reference = Math.round((out.seeds_per_s / ref.median_seeds_per_s) * 100) / 100;
}
console.log(JSON.stringify(out));
