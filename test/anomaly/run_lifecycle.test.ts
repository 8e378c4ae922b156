/**
 * `anomaly fit` goes through the run lifecycle every stage uses: the run folder exists with a `running`
 * manifest while it fits and ends `complete` or `failed`. Scoring must take only a complete run: a failed
 * or unfinished one is refused by id with its status and error, and `latest` passes over it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunLifecycle } from '../../src/artifacts/run_lifecycle.js';
import { readManifest } from '../../src/artifacts/run_store.js';
import { loadRun, type AnomalyManifest } from '../../src/anomaly/run.js';

function head(id: string): AnomalyManifest {
  return {
    kind: 'anomaly',
    id,
    task: 'anomaly',
    status: 'running',
    gnnctl: 'test',
    created_at: '2026-01-05T00:00:00.000Z',
    backend: 'cpu',
    seed: 0,
    config: {} as AnomalyManifest['config'],
    fit: { from: '', until: '', train_snapshots: 0, warmup_snapshots: 0, first_train_ts: '', last_warmup_ts: '', warmup_ts: [] },
    feature_columns: [],
    edge_feature_columns: [],
    model: { feat_dim: 1, edge_extra: 0, hidden: 4, heads: 1, embedding_dim: 2, window: 1, structure_weight: 0.5, negative_ratio: 1, all_pairs_max_nodes: 2, seed: 0 },
    inputs: {},
    timings: {},
    metrics: {},
  };
}

describe('anomaly runs on the run lifecycle', () => {
  it('a failed fit leaves a failed run, which score refuses by id and latest passes over', async () => {
    const artifacts = mkdtempSync(join(tmpdir(), 'gnnctl-anomaly-life-'));
    const run = RunLifecycle.start(artifacts, head('anomaly-20260105-000000-aaaa'), {});
    expect(readManifest(run.dir).status).toBe('running');
    await expect(run.guard(() => Promise.reject(new Error('the ONNX scorer disagrees')))).rejects.toThrow('disagrees');
    const m = readManifest(run.dir);
    expect(m.status).toBe('failed');
    expect(m.error).toBe('the ONNX scorer disagrees');
    expect(() => loadRun(artifacts, run.id)).toThrow(/is failed \(the ONNX scorer disagrees\): only a complete anomaly run can score/);
    expect(() => loadRun(artifacts, 'latest')).toThrow(/no usable run of task "anomaly"/);

    const running = RunLifecycle.start(artifacts, head('anomaly-20260105-000001-bbbb'), {});
    expect(() => loadRun(artifacts, running.id)).toThrow(/is running/);
    running.release();
  });
});
