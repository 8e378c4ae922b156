/**
 * Issue 13's quality matrix: the graph model with the defaults must not lose to its own no-graph baseline
 * on data shaped like real logs. Datasets: the realism presets (`bursty`: sittings seconds apart, heavy
 * tails, cold users; `ratings`: the second schema, date-only with ties; `retail-dates`: H&M's day-only
 * t_dat) and the bundled retail data.
 *
 * Default suite: tiny sizes, one seed each, guarding against a collapse like the issue's (test AUROC
 * 0.445 against 0.798): lift ≥ −0.05 on one seed (the noise of ~170 test examples), the small-validation
 * defaults in force, seeds recorded. `npm run test:long` (GNNCTL_LONG_TESTS=1): the issue's targets —
 * mean test lift over three data seeds ≥ −0.01 on the tiny presets, and on retail small (planted
 * multi-hop signal) lift ≥ +0.03.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { SYNTH_PRESETS, type SynthPresetName } from '../../src/datasets/presets.js';
import type { BinaryMetrics } from '../../src/task/metrics.js';
import { train, type TrainMetrics } from '../../src/train/trainer.js';

const ROOT = join(import.meta.dirname, '..', '..');
const LONG = process.env.GNNCTL_LONG_TESTS === '1';
const root = mkdtempSync(join(tmpdir(), 'gnnctl-matrix-'));

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
});
afterAll(() => {
  setQuiet(false);
  rmSync(root, { recursive: true, force: true });
});

/** Generates a preset through the binary and trains its config's churn task with the defaults. */
async function trainPreset(preset: SynthPresetName, size: string, seed: number): Promise<TrainMetrics> {
  const out = join(root, `${preset}-${size}-${seed}`);
  const s = spawnSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'datasets', 'synth', '--preset', preset, '--size', size, '--seed', String(seed), '--out', out, '--quiet'], { encoding: 'utf8' });
  expect(s.status, s.stderr).toBe(0);
  const config = SYNTH_PRESETS[preset].config;
  // configs/<x>.yaml reads datasets/<folder>: point that folder at the generated data
  const folder = /path: (datasets\/[^/]+)\//.exec(readFileSync(join(ROOT, config), 'utf8'))![1]!;
  const path = join(root, `${preset}-${size}-${seed}.yaml`);
  writeFileSync(path, `${readFileSync(join(ROOT, config), 'utf8').replaceAll(folder, out)}\nartifacts: ${join(root, `artifacts-${preset}-${size}-${seed}`)}\n`);
  const r = await train({ cfg: loadConfig(path), task: 'churn', backend: 'wasm' });
  return r.metrics;
}

const auroc = (m: unknown): number => (m as BinaryMetrics).auroc;

describe('quality matrix, tiny sizes (default suite)', () => {
  for (const preset of ['bursty', 'ratings', 'retail-dates'] as const) {
    it(`${preset} tiny: no collapse against the baseline; small-validation defaults; seeds recorded`, async () => {
      const m = await trainPreset(preset, 'tiny', 0);
      expect(m.lift).not.toBeNull();
      expect(m.lift!).toBeGreaterThanOrEqual(-0.05);
      expect(auroc(m.test)).toBeGreaterThan(0.6);
      // ~150 validation examples at one anchor: "auto" validates at several and smooths the choice
      expect(m.validation.small).toBe(true);
      expect(m.validation.anchors.length).toBeGreaterThan(1);
      expect(m.validation.smoothing).toBe(3);
      expect(m.epochs.every((e) => e.val_smoothed !== undefined)).toBe(true);
      expect(m.seeds).toEqual({ model: 0, evaluation: 1234 });
      // enough optimizer steps that training is not cut short by two-step epochs
      expect(m.batch_size).toBeLessThan(512);
      expect(m.best_epoch).toBeGreaterThanOrEqual(1);
    }, 600_000);
  }
});

describe.runIf(LONG)('quality matrix (npm run test:long)', () => {
  for (const preset of ['bursty', 'ratings'] as const) {
    it(`${preset} tiny, data seeds 0–2: mean test lift ≥ −0.01, no single seed below −0.03`, async () => {
      const lifts: number[] = [];
      for (const seed of [0, 1, 2]) lifts.push((await trainPreset(preset, 'tiny', seed)).lift!);
      expect(lifts.reduce((a, b) => a + b, 0) / lifts.length).toBeGreaterThanOrEqual(-0.01);
      for (const l of lifts) expect(l).toBeGreaterThanOrEqual(-0.03);
    }, 1_800_000);
  }

  for (const preset of ['retail', 'retail-dates'] as const) {
    it(`${preset} small (planted multi-hop signal): test lift ≥ +0.03, one validation anchor (the set is not small)`, async () => {
      const m = await trainPreset(preset, 'small', 0);
      expect(m.lift!).toBeGreaterThanOrEqual(0.03);
      expect(m.validation.small).toBe(false);
      expect(m.validation.anchors).toHaveLength(1);
      expect(m.validation.smoothing).toBe(1);
    }, 1_800_000);
  }
});
