#!/usr/bin/env node
/**
 * The recommendation targets (docs/recommendations.md, docs/performance.md): train the bundled `next_purchases` task (MAP@12
 * of the deep recommender against the popularity, repeat and co-occurrence baselines on the test anchor),
 * then time `predict`'s exact top-12 over the whole catalogue for every customer (median of --repeats).
 *
 *   npm run build && node bench/recommend.mjs --size small|medium [--data DIR] [--run RUN]
 *     [--epochs N] [--max-steps N] [--train-anchors N] [--repeats 3] [--verbose]
 *
 * --run skips training and reads that run's metrics; --max-steps caps optimizer steps per epoch (medium).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { arg, benchConfig, CACHE, dataset, peakRssMb } from './common.mjs';

const size = arg('size', 'small');
const data = arg('data', null) ?? (await dataset(size));
mkdirSync(CACHE, { recursive: true });
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { predict } = await import('../dist/predict/predict.js');
const { resolveRun } = await import('../dist/artifacts/run_store.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(!process.argv.includes('--verbose'));

const cfg = loadConfig(benchConfig(`${size}-recommend`, data));
const task = cfg.taskSpecs.next_purchases;
const maxSteps = arg('max-steps', null);
const anchors = arg('train-anchors', null);
if (maxSteps) task.model = { ...task.model, max_steps_per_epoch: Number(maxSteps) };
if (anchors) task.split = { ...task.split, train_anchors: Number(anchors) };

let runDir;
let trainSeconds = null;
const given = arg('run', null);
if (given) runDir = resolveRun(cfg.artifactsDir, given).dir;
else {
  const t = performance.now();
  const epochs = arg('epochs', null);
  runDir = (await train({ cfg, task: 'next_purchases', ...(epochs ? { epochs: Number(epochs) } : {}) })).runDir;
  trainSeconds = Math.round((performance.now() - t) / 100) / 10;
}
const m = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8'));
const map = (split) => ({
  deep: m[split].map_at_k,
  ...Object.fromEntries(Object.entries(m.baselines).map(([name, b]) => [name, b[split].map_at_k])),
});
const test = map('test');

const repeats = Number(arg('repeats', '3'));
const times = [];
let last;
for (let i = 0; i < repeats; i++) {
  // CPU seconds too: on a shared machine the wall clock measures the neighbours as much as the code.
  const c0 = process.cpuUsage();
  last = await predict({ cfg, run: runDir, out: join(CACHE, `recommend-${size}.parquet`) });
  const c = process.cpuUsage(c0);
  times.push({ seconds: last.seconds, compute_seconds: last.compute_seconds, cpu_seconds: Math.round((c.user + c.system) / 1e4) / 100 });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log(
  JSON.stringify({
    bench: 'recommend',
    size,
    run: runDir.split('/').pop(),
    k: m.test.k,
    counts: m.counts,
    epochs: m.epochs.length,
    best_epoch: m.best_epoch,
    train_seconds: trainSeconds,
    map_at_12: { test, val: map('val') },
    recall_at_12_test: { deep: m.test.recall_at_k, ...Object.fromEntries(Object.entries(m.baselines).map(([n, b]) => [n, b.test.recall_at_k])) },
    deep_over_popularity: Math.round((test.deep / test.popularity) * 100) / 100,
    deep_above_repeat: test.deep > test.repeat,
    lift_over_best_baseline: m.lift,
    best_baseline: m.best_baseline,
    predict: {
      users: last.rows / last.k,
      items: last.items,
      rows: last.rows,
      seconds_median: median(times.map((t) => t.seconds)),
      compute_seconds_median: median(times.map((t) => t.compute_seconds)),
      cpu_seconds_median: median(times.map((t) => t.cpu_seconds)),
      runs: times,
    },
    load_average_1m: Math.round(loadavg()[0] * 10) / 10,
    peak_rss_mb: peakRssMb(),
  }),
);
