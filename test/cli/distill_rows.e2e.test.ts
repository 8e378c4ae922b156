/**
 * `distill` on fewer fact rows than its student has parameters (issue 32: 100 rows, a student below chance
 * and no word about it): the command warns naming both numbers, on stderr and in its --json result. Tiny
 * synthetic data, a one-epoch fraud base run, a two-day training window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distillCommand } from '../../src/cli/commands/distill.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { setQuiet, takeWarnings } from '../../src/core/log.js';
import { train } from '../../src/train/trainer.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig({ distillation: { train_window: '2 days', epochs: 1, ablation_max_train_examples: 100 } }));
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
}, 300_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe('distill with too few rows', () => {
  it('warns with the row count and the student\'s parameters', async () => {
    takeWarnings();
    const out = await distillCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, backend: 'wasm' });
    const r = out.result as { counts: { train: number }; metrics: { student: { parameters: number } }; warnings: string[] };
    expect(r.counts.train).toBeLessThan(r.metrics.student.parameters);
    const expected = `${r.counts.train.toLocaleString('en-US')} training rows for a student of ${r.metrics.student.parameters.toLocaleString('en-US')} parameters`;
    expect(r.warnings).toEqual([expect.stringContaining(expected)]);
    expect(takeWarnings().join('\n')).toContain(expected);
  }, 300_000);
});
