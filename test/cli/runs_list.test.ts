import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatMetric, formatRunsTable, mainTestMetric, runsListCommand, type RunRow } from '../../src/cli/commands/runs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An artifacts folder holding runs whose manifests carry only what `runs list` reads. */
function artifactsWith(runs: { id: string; task: string; created_at: string; test?: Record<string, unknown>; metrics?: Record<string, unknown> }[]): string {
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-runs-list-'));
  dirs.push(root);
  for (const r of runs) {
    const dir = join(root, 'runs', r.id);
    mkdirSync(dir, { recursive: true });
    const manifest = { kind: 'train', task: r.task, status: 'complete', created_at: r.created_at, metrics: r.test ? { test: r.test } : undefined };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    if (r.metrics) writeFileSync(join(dir, 'metrics.json'), JSON.stringify(r.metrics));
  }
  return root;
}

describe('mainTestMetric', () => {
  it.each([
    ['binary', { auroc: 0.828, ap: 0.87 }, 'auroc', 0.828],
    ['regression', { mae: 0.1313, rmse: 0.2 }, 'mae', 0.1313],
    ['ranking', { map_at_k: 0.264, recall_at_k: 0.447 }, 'map_at_k', 0.264],
    ['undefined auroc (null in metrics.json)', { auroc: null, ap: null }, 'auroc', null],
    ['NaN auroc', { auroc: Number.NaN }, 'auroc', null],
    ['no test metrics', undefined, null, null],
  ])('%s', (_name, test, metric, value) => {
    expect(mainTestMetric(test as Record<string, unknown> | undefined)).toEqual({ metric, value });
  });
});

describe('formatMetric', () => {
  it('prints four decimals, n/a for an undefined value, and never "undefined"', () => {
    expect(formatMetric('auroc', 0.82801)).toBe('auroc 0.8280');
    expect(formatMetric('auroc', null)).toBe('auroc n/a');
    expect(formatMetric(null, null)).toBe('-');
  });
});

describe('gnnctl runs list', () => {
  it('prints one aligned line per run, oldest first, with n/a for a null AUROC', async () => {
    const artifacts = artifactsWith([
      { id: 'churn-20261128-042955-c929', task: 'churn', created_at: '2026-11-28T04:29:55.000Z', test: { auroc: 0.828 } },
      { id: 'dnf-20261128-050000-aaaa', task: 'dnf', created_at: '2026-11-28T05:00:00.000Z', test: { auroc: null } },
      { id: 'fraud-20261128-042735-03a9', task: 'fraud', created_at: '2026-11-28T04:27:35.000Z', test: { auroc: 0.5923 } },
    ]);
    const out = await runsListCommand({ artifacts });
    expect(out.text).not.toContain('undefined');
    expect(out.text.split('\n')).toEqual([
      'run                         kind   task   status    serves  test metric   created',
      'fraud-20261128-042735-03a9  train  fraud  complete  -       auroc 0.5923  2026-11-28 04:27:35',
      'churn-20261128-042955-c929  train  churn  complete  -       auroc 0.8280  2026-11-28 04:29:55',
      'dnf-20261128-050000-aaaa    train  dnf    complete  -       auroc n/a     2026-11-28 05:00:00',
    ]);
    const result = out.result as { runs: { id: string; metric: string | null; value: number | null }[] };
    expect(result.runs.map((r) => [r.id, r.metric, r.value])).toEqual([
      ['fraud-20261128-042735-03a9', 'auroc', 0.5923],
      ['churn-20261128-042955-c929', 'auroc', 0.828],
      ['dnf-20261128-050000-aaaa', 'auroc', null],
    ]);
  });

  it('widens a column to its longest cell, so a long task or metric does not shift the next column', () => {
    const row = (id: string, task: string, metric: string, value: number): RunRow => ({ id, kind: 'train', task, status: 'complete', metric, value, served: null, created: '2026-11-28T04:31:19.000Z', dir: '' });
    const lines = formatRunsTable([row('churn-1', 'churn', 'auroc', 0.828), row('next_purchases-1', 'next_purchases', 'map_at_k', 0.3008)], '').split('\n');
    const createdAt = lines.map((l) => l.indexOf(l.endsWith('created') ? 'created' : '2026-'));
    expect(new Set(createdAt).size).toBe(1);
    expect(lines[2]).toBe('next_purchases-1  train  next_purchases  complete  -       map_at_k 0.3008  2026-11-28 04:31:19');
  });

  it("shows the model a run serves and that model's test metric, not the GNN's", async () => {
    const gnn = { auroc: 0.8973 };
    const artifacts = artifactsWith([
      {
        id: 'fraud-20261128-042735-03a9',
        task: 'fraud',
        created_at: '2026-11-28T04:27:35.000Z',
        test: gnn,
        metrics: { test: gnn, chosen: 'gbdt', model_choice: { candidates: { gnn: { test: gnn }, gbdt: { test: { auroc: 0.9226 } }, hybrid: { test: { auroc: 0.91 } } } } },
      },
      {
        id: 'next_purchases-20261128-050000-bbbb',
        task: 'next_purchases',
        created_at: '2026-11-28T05:00:00.000Z',
        test: { map_at_k: 0.22 },
        metrics: { test: { map_at_k: 0.22 }, chosen: 'repeat_affinity', baselines: { repeat_affinity: { test: { map_at_k: 0.283 } } } },
      },
      {
        id: 'churn-20261128-051000-cccc',
        task: 'churn',
        created_at: '2026-11-28T05:10:00.000Z',
        test: { auroc: 0.82 },
        metrics: { test: { auroc: 0.82 }, chosen: 'gnn', model_choice: { candidates: { gnn: { test: { auroc: 0.82 } } } } },
      },
    ]);
    const rows = (await runsListCommand({ artifacts })).result as { runs: RunRow[] };
    expect(rows.runs.map((r) => [r.served, r.metric, r.value])).toEqual([
      ['gbdt', 'auroc', 0.9226],
      ['repeat_affinity', 'map_at_k', 0.283],
      ['gnn', 'auroc', 0.82],
    ]);
  });

  it('says where it looked when there are no runs', () => {
    expect(formatRunsTable([], '/tmp/x/runs')).toBe('no runs in /tmp/x/runs');
  });
});
