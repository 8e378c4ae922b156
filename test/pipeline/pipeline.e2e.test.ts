/**
 * The whole pipeline end to end on tiny synthetic data (graph → train → embed → distill → export → serve
 * smoke), then what CI and cron jobs rely on: idempotent re-runs, refresh producing a new version, check
 * detecting stale and skewed exports, and the documented exit codes of the CLI entry point.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import type { DistillMetrics } from '../../src/distill/distill.js';
import type { BinaryMetrics } from '../../src/task/metrics.js';
import { parseModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { checkRepository } from '../../src/pipeline/check.js';
import { runPipeline, type PipelineResult } from '../../src/pipeline/pipeline.js';
import { refresh } from '../../src/pipeline/refresh.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
let cfg: Config;
let first: PipelineResult;

beforeAll(async () => {
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  first = await runPipeline({ cfg, distillEpochs: 2, cwd: fx.dir });
}, 300_000);

afterAll(() => fx?.cleanup());

/** Runs the CLI entry point with stdout captured; returns the exit code and stdout. */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    out += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const cwd = process.cwd();
  try {
    process.chdir(fx.dir);
    process.exitCode = undefined;
    const code = await main(['node', 'gnnctl', ...args]);
    return { code, out };
  } finally {
    process.chdir(cwd);
    process.exitCode = undefined;
    spy.mockRestore();
    err.mockRestore();
  }
}

describe('pipeline on tiny data', () => {
  it('runs every stage and leaves a loadable model repository', () => {
    expect(first.stages.map((s) => s.stage)).toEqual(['graph', 'train fraud', 'embed customers', 'embed articles', 'distill', 'export', 'serve smoke']);
    expect(first.stages.every((s) => !s.reused || s.stage === 'graph')).toBe(true);
    const modelDir = join(fx.artifacts, 'model_repository', cfg.export.name);
    const config = parseModelConfig(readFileSync(join(modelDir, 'config.pbtxt'), 'utf8'));
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(existsSync(join(modelDir, String(first.version), 'model.onnx'))).toBe(true);
    expect(first.smoke?.status).toBe(200);
    expect(Number.isFinite(first.smoke?.value)).toBe(true);
    // Tiny data has ~5 fraud rows in its test window, so its AUROC is noise; the quality targets are checked
    // on `small` by test/pipeline/quality.test.ts (GNNCTL_LONG_TESTS=1). Here: every metric is there and sane.
    const d = JSON.parse(readFileSync(join(fx.artifacts, 'runs', first.runs['fraud (distilled)']!, 'metrics.json'), 'utf8')) as DistillMetrics;
    expect(first.metrics.distill?.test).toEqual(d.test);
    expect(d.counts.test).toBeGreaterThan(100);
    expect(d.test.n).toBe(d.counts.test);
    for (const m of [d.test, d.teacher!.test, ...Object.values(d.ablations).map((a) => a.test)] as BinaryMetrics[]) {
      expect(m.auroc).toBeGreaterThanOrEqual(0);
      expect(m.auroc).toBeLessThanOrEqual(1);
    }
    expect(Object.keys(d.ablations).sort()).toEqual(['embedding_only', 'features_only', 'rti_only']);
    expect(d.student.parameters).toBeLessThan(d.teacher_model.parameters_without_embeddings);
  });

  it('re-runs idempotently: unchanged stages are reused, no new version', async () => {
    const again = await runPipeline({ cfg, distillEpochs: 2, noSmoke: true, cwd: fx.dir });
    expect(again.stages.filter((s) => s.stage !== 'graph').every((s) => s.reused)).toBe(true);
    expect(again.version).toBe(first.version);
    expect(again.runs).toEqual(first.runs);
  }, 120_000);

  it('refresh exports the next version from the same distilled run, and check passes on it', async () => {
    const r = await refresh({ cfg, cwd: fx.dir });
    expect(r.previous_version).toBe(first.version);
    expect(r.version).toBe(first.version! + 1);
    expect(r.distilled_run).toBe(first.runs['fraud (distilled)']);
    const versions = readdirSync(join(fx.artifacts, 'model_repository', cfg.export.name)).filter((v) => /^\d+$/.test(v));
    expect(versions.sort()).toEqual([String(first.version), String(r.version)]);
    const ok = await checkRepository(join(fx.artifacts, 'model_repository'), cfg);
    expect(ok.ok).toBe(true);
    expect(ok.reference).toBe('data');
  }, 120_000);

  it('check fails on stale embeddings and on schema skew', async () => {
    const repo = join(fx.artifacts, 'model_repository');
    const stale = await checkRepository(repo, cfg, Date.parse('2021-06-01T00:00:00Z') / 1000);
    expect(stale.ok).toBe(false);
    expect(stale.checks.filter((c) => !c.ok).map((c) => c.check)).toContain('embedding_age');
    // Skew: the latest version claims another graph fingerprint than its embeddings and the data.
    const modelDir = join(repo, cfg.export.name);
    const latest = Math.max(...readdirSync(modelDir).filter((v) => /^\d+$/.test(v)).map(Number));
    const mpath = join(modelDir, String(latest), 'manifest.json');
    const m = JSON.parse(readFileSync(mpath, 'utf8')) as { graph_fingerprint: string };
    writeFileSync(mpath, JSON.stringify({ ...m, graph_fingerprint: '0000000000000000' }));
    const skewed = await checkRepository(repo, cfg);
    expect(skewed.ok).toBe(false);
    expect(skewed.checks.filter((c) => !c.ok).map((c) => c.check)).toContain('schema');
    const { code, out } = await cli(['check', '--model-repository', repo, '--json']);
    expect(code).toBe(4);
    expect(JSON.parse(out.trim().split('\n').pop()!).result.ok).toBe(false);
    writeFileSync(mpath, JSON.stringify(m));
  }, 120_000);
});

describe('exit codes', () => {
  it('0 with one JSON object on stdout', async () => {
    const { code, out } = await cli(['runs', 'list', '--config', fx.config, '--artifacts', fx.artifacts, '--json']);
    expect(code).toBe(0);
    const parsed = JSON.parse(out) as { runs: { kind: string }[] };
    expect(parsed.runs.map((r) => r.kind)).toEqual(expect.arrayContaining(['train', 'distill']));
  });

  it('2 for a config error and for a usage error', async () => {
    writeFileSync(join(fx.dir, 'bad.yaml'), 'name: x\ndata:\n  tablez: {}\n');
    expect((await cli(['config', 'validate', '--config', 'bad.yaml'])).code).toBe(2);
    expect((await cli(['train', '--config', fx.config, '--task', 'fraud', '--backend', 'gpu'])).code).toBe(2);
  });

  it('3 for a data error', async () => {
    writeFileSync(join(fx.dir, 'missing.yaml'), readFileSync(fx.config, 'utf8').replace('path: customers.csv', 'path: nope.csv'));
    const { code, out } = await cli(['graph', 'build', '--config', 'missing.yaml', '--artifacts', fx.artifacts, '--json']);
    expect(code).toBe(3);
    expect(JSON.parse(out).message).toMatch(/file not found: .*nope\.csv/);
  });

  it('4 for a failed quality gate, with the result still printed', async () => {
    const { code, out } = await cli(['pipeline', '--config', fx.config, '--artifacts', fx.artifacts, '--distill-epochs', '2', '--no-smoke', '--fail-under', 'distill.test.auroc=0.999', '--json']);
    expect(code).toBe(4);
    const body = JSON.parse(out) as { error: string; result: { stages: unknown[] } };
    expect(body.error).toBe('QualityGateError');
    expect(body.result.stages.length).toBeGreaterThan(3);
  }, 120_000);

  it('5 for an artifact error', async () => {
    expect((await cli(['embed', '--config', fx.config, '--artifacts', fx.artifacts, '--run', 'no-such-run'])).code).toBe(5);
  });
});
