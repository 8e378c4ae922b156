/**
 * Entity tasks (churn per customer at request time) are not distilled yet: `distill --task churn` and a
 * config naming an entity task as `distillation.task` say so plainly (exit 2) and point to `gnnctl predict`,
 * before any work — no run folder appears.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError, ExitCode, NotImplementedError } from '../../src/core/errors.js';
import { distill } from '../../src/distill/distill.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
beforeAll(async () => {
  fx = await tinySynth(pipelineConfig());
});
afterAll(() => fx?.cleanup());

describe('distilling an entity task', () => {
  it('distill --task churn: NotImplementedError (exit 2) naming --task and pointing to gnnctl predict; no run written', async () => {
    const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
    const err = await distill({ cfg, task: 'churn', backend: 'wasm', cwd: fx.dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotImplementedError);
    const e = err as NotImplementedError;
    expect(e.exitCode).toBe(ExitCode.config);
    expect(e.describe()).toMatch(/entity task "churn".*not implemented/);
    expect(e.describe()).toContain('--task');
    expect(e.describe()).toContain('gnnctl predict');
    expect(existsSync(join(fx.artifacts, 'runs')) ? readdirSync(join(fx.artifacts, 'runs')) : []).toEqual([]);
  });

  it('distillation.task naming an entity task fails config validation with the same explanation', () => {
    const path = join(fx.dir, 'entity-distill.yaml');
    writeFileSync(path, pipelineConfig({ distillation: { task: 'churn' } }));
    let err: unknown;
    try {
      loadConfig(path, { cwd: fx.dir, artifacts: fx.artifacts });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toMatch(/distillation\.task[\s\S]*predicts per entity[\s\S]*not implemented yet/);
    expect((err as ConfigError).describe()).toContain('gnnctl predict');
  });
});
