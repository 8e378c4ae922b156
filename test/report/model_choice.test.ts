/**
 * The report's model-choice section (`model.kind`): each candidate's validation and test figures with
 * their 95% intervals, the kept one tagged with the run's reason, a skipped candidate with why; absent for
 * a run without the block.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport } from '../../src/report/index.js';
import { runsFixture, trainBinaryMetrics, writeTrainBinaryRun, type RunsFixture } from './runs.js';
import { checkWellFormed, elementById, textOf } from './wellformed.js';

const NOW = new Date('2020-10-01T00:00:00Z');
let fx: RunsFixture;
let dir: string;
beforeAll(() => {
  fx = runsFixture();
  dir = writeTrainBinaryRun(fx.artifacts);
});
afterAll(() => fx.cleanup());

describe('model choice in the report', () => {
  it('a run without model_choice has no such section', () => {
    expect(renderReport(dir, { now: NOW }).sections).not.toContain('model-choice');
  });

  it('lists the three candidates with intervals, tags the kept one and gives the reason', () => {
    const m = {
      ...trainBinaryMetrics(),
      model_choice: {
        setting: 'auto',
        best: 'gnn',
        val_lift_vs_best: { gbdt: [-0.01, 0.02] },
        tree_features: { own: 5, aggregates: 73, candidates: 90, seconds: 12.5 },
        candidates: {
          gnn: { status: 'trained', val: { auroc: 0.8476 }, test: { auroc: 0.8214 }, val_intervals: { auroc: [0.8286, 0.8671] }, test_intervals: { auroc: [0.8159, 0.8258] }, seconds: 87.3 },
          gbdt: { status: 'trained', val: { auroc: 0.8471 }, test: { auroc: 0.8202 }, val_intervals: { auroc: [0.82, 0.866] }, test_intervals: { auroc: [0.815, 0.825] }, seconds: 10.9, trees: 64, features: 78 },
          hybrid: { status: 'skipped', reason: 'interrupted' },
        },
      },
      chosen: 'gbdt',
      chosen_reason: 'the trees (own columns + aggregates) (val auroc 0.8471) tie with the best, the GNN (val auroc 0.8476)',
    };
    writeFileSync(join(dir, 'metrics.json'), JSON.stringify(m));
    const r = renderReport(dir, { now: NOW });
    expect(r.sections).toContain('model-choice');
    expect(checkWellFormed(r.html)).toEqual([]);
    const section = elementById(r.html, 'model-choice')!;
    const text = textOf(section);
    expect(text).toContain('0.8214 [0.8159 … 0.8258]');
    expect(text).toContain('64 trees on 78 inputs');
    expect(text).toContain('skipped: interrupted');
    expect(text).toContain('73 of 90 relational aggregates');
    expect(text).toMatch(/Kept: Trees \(own columns \+ aggregates\) — the trees .* tie with the best/);
    expect(section).toMatch(/data-candidate="gbdt" data-status="trained" class="best"/);
    expect(section).toMatch(/data-candidate="gnn"[^>]*>.*best on val/);
  });
});
