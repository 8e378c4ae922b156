#!/usr/bin/env node
/**
 * Where a training run's time goes besides the epochs: training tables, the validation pass after each
 * epoch, the final evaluation and the no-graph baseline's fit, against the epoch itself. The target
 * is the bundled fraud teacher at `medium`: non-epoch time (evaluation + baseline, after the epoch) ≤ 20% of
 * the epoch's time.
 *
 *   npm run build && node bench/train_tail.mjs --size medium [--task fraud] [--max-steps N]
 *
 * `--max-steps N` caps the epoch at N optimizer steps to save time; the full epoch's seconds are then
 * extrapolated from the measured seconds per step (`epoch_seconds_estimated: true` in the JSON). The
 * evaluation and the baseline fit do not depend on the number of steps, so they are measured as they are;
 * the wait for the baseline does (it fits beside the epoch, so a capped epoch leaves more of it to wait
 * for). With a cap, `full_epoch_estimate` also gives the wait a full epoch would leave — the fit's seconds
 * beyond the epoch, its validation pass and the evaluation, at least 0 — and the tail ratio with it.
 */
import { arg, benchConfig, dataset, peakRssMb } from './common.mjs';

const size = arg('size', 'medium');
const task = arg('task', 'fraud');
const maxSteps = arg('max-steps', null);
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { readManifest } = await import('../dist/artifacts/run_store.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);
const cfg = loadConfig(benchConfig(size, data));
const spec = cfg.taskSpecs[task];
if (maxSteps) spec.model = { ...spec.model, max_steps_per_epoch: Number(maxSteps) };
const t0 = performance.now();
const r = await train({ cfg, task, backend: arg('backend', 'auto'), epochs: 1 });
const wall = (performance.now() - t0) / 1000;
const m = readManifest(r.runDir);
const e = r.metrics.epochs[0];
const n = r.metrics.counts.train;
const batch = spec.model.batch_size;
const fullSteps = Math.ceil(n / batch);
const steps = Math.min(fullSteps, maxSteps ? Number(maxSteps) : Infinity);
const epochSeconds = steps < fullSteps ? (e.seconds / steps) * fullSteps : e.seconds;
const t = m.timings;
const valPass = Math.round((t.training - e.seconds) * 100) / 100;
// Since the baseline fits beside the epochs, what the run waits for after them is `baseline_wait`.
const tail = (t.evaluation ?? 0) + (t.baseline_wait ?? t.baseline ?? 0);
const round = (x) => Math.round(x * 100) / 100;
console.log(
  JSON.stringify({
    bench: `train tail ${task}`,
    size,
    run: r.runId,
    workers: m.workers,
    train_rows: n,
    val_rows: r.metrics.counts.val,
    test_rows: r.metrics.counts.test,
    steps,
    full_epoch_steps: fullSteps,
    epoch_seconds: round(epochSeconds),
    epoch_seconds_estimated: steps < fullSteps,
    timings: { wall: round(wall), training_tables: t.training_tables, epoch_val_pass: valPass, evaluation: t.evaluation, baseline_fit: t.baseline ?? null, baseline_wait: t.baseline_wait ?? null },
    non_epoch_after_epoch_seconds: round(valPass + tail),
    tail_ratio: round((valPass + tail) / epochSeconds),
    full_epoch_estimate:
      steps < fullSteps && t.baseline_wait !== undefined
        ? (() => {
            const wait = Math.max(0, (t.baseline ?? 0) - (epochSeconds + valPass + (t.evaluation ?? 0)));
            return { baseline_wait: round(wait), tail_ratio: round((valPass + (t.evaluation ?? 0) + wait) / epochSeconds) };
          })()
        : null,
    val_auroc: r.metrics.val.auroc,
    baseline_train_rows: r.metrics.baseline?.train_rows ?? null,
    baseline_val: r.metrics.baseline?.val ?? null,
    baseline_test: r.metrics.baseline?.test ?? null,
    peak_rss_mb: peakRssMb(),
  }),
);
