import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunLifecycle, runManifestHead } from '../../src/artifacts/run_lifecycle.js';
import { VERSION } from '../../src/core/version.js';
import { readManifest, type RunManifestBase } from '../../src/artifacts/run_store.js';
import { setQuiet } from '../../src/core/log.js';

function manifest(id: string): RunManifestBase {
  return { kind: 'train', id, task: 't', status: 'running', gnnctl: 'test', created_at: '2026-01-01T00:00:00Z', graph: { dir: '-', fingerprint: 'f', schema_fingerprint: 's' }, backend: 'cpu', seed: 1, config: {}, timings: { tables: 1.5 } };
}

describe('RunLifecycle', () => {
  it('writes a running manifest at start, then metrics.json and a complete manifest once', () => {
    const artifacts = mkdtempSync(join(tmpdir(), 'gnnctl-run-'));
    const run = RunLifecycle.start(artifacts, manifest('r1'));
    expect(run.dir).toBe(join(artifacts, 'runs', 'r1'));
    expect(existsSync(join(run.dir, 'model'))).toBe(true);
    expect(readManifest(run.dir).status).toBe('running');
    const ending = run.finish({ auroc: 0.75 }, { test: 0.75 });
    expect(ending.status).toBe('complete');
    const m = readManifest(run.dir);
    expect(m).toMatchObject({ status: 'complete', metrics: { test: 0.75 }, timings: { tables: 1.5 } });
    expect(typeof m.finished_at).toBe('string');
    expect(typeof m.timings.total).toBe('number');
    expect(JSON.parse(readFileSync(join(run.dir, 'metrics.json'), 'utf8'))).toEqual({ auroc: 0.75 });
    expect(() => run.finish({})).toThrow(/already ended/);
    // a failure after the ending leaves the manifest as it ended
    run.fail(new Error('late'));
    expect(readManifest(run.dir).status).toBe('complete');
  });

  it('guard marks the run failed with the error message and rethrows', async () => {
    const artifacts = mkdtempSync(join(tmpdir(), 'gnnctl-run-'));
    const run = RunLifecycle.start(artifacts, manifest('r2'), { interruptible: true });
    const listeners = process.listenerCount('SIGINT');
    await expect(run.guard(async () => Promise.reject(new Error('no val examples')))).rejects.toThrow('no val examples');
    expect(readManifest(run.dir)).toMatchObject({ status: 'failed', error: 'no val examples' });
    expect(existsSync(join(run.dir, 'metrics.json'))).toBe(false);
    expect(process.listenerCount('SIGINT')).toBe(listeners - 1);
  });

  it('an interruptible run turns Ctrl-C into a stop request and ends interrupted', async () => {
    setQuiet(true);
    const artifacts = mkdtempSync(join(tmpdir(), 'gnnctl-run-'));
    const run = RunLifecycle.start(artifacts, manifest('r3'), { interruptible: true });
    const ending = await run.guard(async () => {
      process.emit('SIGINT');
      expect(run.stop.requested).toBe(true);
      return run.finish({ loss: 1 });
    });
    expect(ending.status).toBe('interrupted');
    expect(readManifest(run.dir).status).toBe('interrupted');
  });

  it('runManifestHead: the fields every run manifest starts with, status running', () => {
    const schema = { tables: {} } as never;
    const head = runManifestHead({ kind: 'distill', id: 'd1', task: 'fraud', graph_dir: '/g', graph: { fingerprint: 'fp', schema_fingerprint: 'sfp', schema }, backend: 'wasm', seed: 7, config: { a: 1 } });
    expect(head).toMatchObject({ kind: 'distill', id: 'd1', task: 'fraud', status: 'running', gnnctl: VERSION, graph: { dir: '/g', fingerprint: 'fp', schema_fingerprint: 'sfp' }, graph_schema: schema, backend: 'wasm', seed: 7, config: { a: 1 }, timings: {} });
    expect(Number.isNaN(Date.parse(head.created_at))).toBe(false);
  });
});
