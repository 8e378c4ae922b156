#!/usr/bin/env node
/**
 * Issue 33 item 3: `model.kind: auto` on the bundled data and the realism presets. Per dataset and task,
 * the GNN, the trees (own columns + relational aggregates) and the hybrid (trees + GNN embeddings): their
 * validation and test main metric with 95% bootstrap intervals, and what the run chose and why. One JSON
 * line per run; docs/models.md holds the table.
 *
 *   npm run build && node bench/model_choice.mjs [--runs retail:small:churn,bursty:tiny:churn,ratings:tiny:churn]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, CACHE, ROOT } from './common.mjs';

const runs = arg('runs', 'retail:small:churn,retail:small:item_sales,bursty:tiny:churn,ratings:tiny:churn').split(',').map((s) => s.split(':'));
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { setQuiet } = await import('../dist/core/log.js');
const { SYNTH_PRESETS } = await import('../dist/datasets/presets.js');
setQuiet(true);

function data(preset, size) {
  const dir = join(CACHE, `choice-${preset}-${size}`);
  if (!existsSync(join(dir, 'manifest.json'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'datasets', 'synth', '--preset', preset, '--size', size, '--seed', '0', '--out', dir, '--quiet']);
  }
  return dir;
}

const r4 = (x) => (typeof x === 'number' ? Math.round(x * 1e4) / 1e4 : x);
for (const [preset, size, task] of runs) {
  const dir = data(preset, size);
  const config = readFileSync(join(ROOT, SYNTH_PRESETS[preset].config), 'utf8');
  const folder = /path: (datasets\/[^/]+)\//.exec(config)[1];
  const path = join(CACHE, `choice-${preset}-${size}.yaml`);
  writeFileSync(path, `${config.replaceAll(folder, dir)}\nartifacts: ${join(CACHE, `choice-artifacts-${preset}-${size}`)}\n`);
  const r = await train({ cfg: loadConfig(path), task });
  const m = r.metrics;
  const mm = m.main_metric;
  const c = m.model_choice;
  const row = { preset, size, task, metric: mm, counts: m.counts, chosen: m.chosen, chosen_reason: m.chosen_reason, seconds: Math.round(r.seconds), tree_features: c?.tree_features ?? null };
  for (const [k, x] of Object.entries(c?.candidates ?? {})) {
    row[k] = x.status === 'trained' ? { val: r4(x.val[mm]), val_interval: x.val_intervals[mm], test: r4(x.test[mm]), test_interval: x.test_intervals[mm], seconds: x.seconds } : { skipped: x.reason };
  }
  console.log(JSON.stringify(row));
}
