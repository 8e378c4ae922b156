/**
 * Shared helpers of the bench scripts: flags, synthetic data at a size (generated once and cached under
 * the bench cache folder), a config pointing at it, and the PyTorch reference (optional: run it only
 * where Debian's python3-torch is installed).
 */
import { existsSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

export function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

export function flag(name) {
  return process.argv.includes(`--${name}`);
}

export const ROOT = resolve(new URL('..', import.meta.url).pathname);
export const CACHE = resolve(arg('cache', join(ROOT, 'artifacts', 'bench')));

/** Synthetic H&M-shaped data of a size, generated once (seed 0). */
export async function dataset(size) {
  const dir = join(CACHE, `data-${size}`);
  if (!existsSync(join(dir, 'transactions.csv'))) {
    mkdirSync(dir, { recursive: true });
    const { generateSynthetic } = await import('../dist/datasets/synth.js');
    await generateSynthetic({ out: dir, size, seed: 0, format: 'csv' });
  }
  return dir;
}

/** configs/retail.yaml pointed at a data folder, with its own artifact folder. */
export function benchConfig(size, dataDir) {
  const text = readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8').replaceAll('datasets/retail', dataDir);
  const path = join(CACHE, `retail-${size}.yaml`);
  writeFileSync(path, `${text}\nartifacts: ${join(CACHE, `artifacts-${size}`)}\n`);
  return path;
}

export function peakRssMb() {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

/** Runs the PyTorch reference (one JSON line) when Debian's torch is installed; null otherwise. */
export function reference(dataDir, modeArgs) {
  const py = '/usr/bin/python3';
  // /work/shared beside the main checkout; a git worktree sits one folder deeper (/work/wt/NAME).
  const script = [resolve(ROOT, '..', 'shared', 'reference', 'gnn_ref.py'), resolve(ROOT, '..', '..', 'shared', 'reference', 'gnn_ref.py')].find((p) => existsSync(p));
  if (!existsSync(py) || !script) return null;
  const probe = spawnSync(py, ['-c', 'import torch, sklearn, pandas'], { encoding: 'utf8' });
  if (probe.status !== 0) return null;
  const r = spawnSync(py, [script, '--data', dataDir, ...modeArgs], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) return { error: (r.stderr || '').split('\n').slice(-3).join(' ') };
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/**
 * The bench config at a size and a churn run to embed or predict with: `--run RUN` (or the flag named by
 * `runFlag`), or a 1-epoch run trained now (50 steps, `sampling` — last by default; not timed). Returns the
 * loaded config, the run id and the data dir.
 */
export async function churnBench(size, { sampling = 'last', runFlag = 'run' } = {}) {
  const data = await dataset(size);
  const { loadConfig } = await import('../dist/config/load.js');
  const { train } = await import('../dist/train/trainer.js');
  const { setQuiet } = await import('../dist/core/log.js');
  setQuiet(true);
  const cfg = loadConfig(benchConfig(size, data));
  let run = arg(runFlag, null);
  if (!run) {
    cfg.taskSpecs.churn.model = { ...cfg.taskSpecs.churn.model, num_neighbors: [10, 5], sampling, max_steps_per_epoch: 50 };
    run = (await train({ cfg, task: 'churn', epochs: 1, skip_baseline: true })).runId;
  }
  return { cfg, run, data };
}
