#!/usr/bin/env node
/**
 * Issue 13, small and noisy data: the realism presets (tiny: ~1,000 users, ~150 validation examples at
 * one anchor) trained over several data seeds and model seeds, once validating as before (one val anchor,
 * best epoch by the raw score) and once with the defaults (val_anchors / val_smoothing "auto"), and with
 * `--search` the variant search on top. Prints one JSON line per run and a summary per preset and mode:
 * mean deep / baseline validation and test figures, how often the deep model loses on test by more than
 * 0.01, and the spread of the chosen epoch over model seeds.
 *
 *   npm run build && node bench/quality_seeds.mjs [--presets bursty,ratings] [--data-seeds 0,1,2] [--model-seeds 0,1] [--search]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, CACHE, flag, ROOT } from './common.mjs';

const presets = arg('presets', 'bursty,ratings').split(',');
const dataSeeds = arg('data-seeds', '0,1,2').split(',').map(Number);
const modelSeeds = arg('model-seeds', '0,1').split(',').map(Number);
const modes = arg('modes', ['before', 'auto', ...(flag('search') ? ['search'] : [])].join(',')).split(',');
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

function data(preset, seed) {
  const dir = join(CACHE, `${preset}-tiny-${seed}`);
  if (!existsSync(join(dir, 'manifest.json'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'datasets', 'synth', '--preset', preset, '--size', 'tiny', '--seed', String(seed), '--out', dir, '--quiet']);
  }
  return dir;
}

const r4 = (x) => Math.round(x * 1e4) / 1e4;
const mean = (xs) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
const rows = [];
for (const preset of presets) {
  for (const ds of dataSeeds) {
    const dir = data(preset, ds);
    const text = readFileSync(join(ROOT, 'configs', `${preset}.yaml`), 'utf8').replaceAll(`datasets/${preset}`, dir);
    for (const ms of modelSeeds) {
      for (const mode of modes) {
        const path = join(CACHE, `${preset}-${ds}.yaml`);
        writeFileSync(path, `${text}\nartifacts: ${join(CACHE, `artifacts-${preset}-${ds}`)}\n`);
        const cfg = loadConfig(path);
        cfg.seed = ms;
        const t = cfg.taskSpecs.churn;
        t.model = { ...t.model, seed: ms };
        if (mode === 'before') {
          t.split = { ...t.split, val_anchors: 1 };
          t.model = { ...t.model, val_smoothing: 1 };
        }
        const r = await train({ cfg, task: 'churn', search: mode === 'search' ? { budget_seconds: 600 } : undefined });
        const m = r.metrics;
        const row = {
          preset,
          data_seed: ds,
          model_seed: ms,
          mode,
          val: m.val.auroc,
          test: m.test.auroc,
          baseline_val: m.baseline.val.auroc,
          baseline_test: m.baseline.test.auroc,
          lift: m.lift,
          best_epoch: m.best_epoch,
          epochs: m.epochs.length,
          val_examples: m.counts.val,
          val_anchors: m.validation.anchors.length,
          smoothing: m.validation.smoothing,
          ...(m.search ? { chosen: m.search.chosen } : {}),
          seconds: Math.round(r.seconds * 10) / 10,
        };
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  }
}
for (const preset of presets) {
  for (const mode of modes) {
    const rs = rows.filter((r) => r.preset === preset && r.mode === mode);
    // spread of the chosen epoch over model seeds, per data seed: how much the choice follows noise
    const spreads = dataSeeds.map((ds) => {
      const e = rs.filter((r) => r.data_seed === ds).map((r) => r.best_epoch);
      return Math.max(...e) - Math.min(...e);
    });
    console.log(
      JSON.stringify({
        bench: 'quality seeds',
        preset,
        mode,
        runs: rs.length,
        val: mean(rs.map((r) => r.val)),
        test: mean(rs.map((r) => r.test)),
        baseline_val: mean(rs.map((r) => r.baseline_val)),
        baseline_test: mean(rs.map((r) => r.baseline_test)),
        mean_lift: mean(rs.map((r) => r.lift)),
        min_lift: Math.min(...rs.map((r) => r.lift)),
        losses_over_0_01: rs.filter((r) => r.lift < -0.01).length,
        best_epoch_spread: mean(spreads),
      }),
    );
  }
}
