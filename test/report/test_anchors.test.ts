/**
 * The report's test-anchors section: the pooled test metric with its 95% interval, the lift judged by its
 * interval, and one row per test anchor, read from a run's metrics.json; absent for a run without them.
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

describe('test anchors and intervals in the report', () => {
  it('a run without intervals has no such section', () => {
    expect(renderReport(dir, { now: NOW }).sections).not.toContain('test-anchors');
  });

  it('shows the interval, the judged lift and each anchor\'s row', () => {
    const m = trainBinaryMetrics();
    const withIntervals = {
      ...m,
      intervals: { test: { auroc: [0.71, 0.79] }, baseline_test: { auroc: [0.6, 0.7] }, lift: [0.02, 0.11], lift_judgement: 'better', resamples_seed: 1234 },
      test_by_anchor: [
        { anchor: '2020-09-01T00:00:00Z', n: 120, metrics: { auroc: 0.74 } },
        { anchor: '2020-09-08T00:00:00Z', n: 131, metrics: { auroc: null } },
      ],
      empty_anchors: { train: [], val: [], test: ['2020-09-15T00:00:00Z'] },
    };
    writeFileSync(join(dir, 'metrics.json'), JSON.stringify(withIntervals));
    const r = renderReport(dir, { now: NOW });
    expect(r.sections).toContain('test-anchors');
    expect(r.sections.indexOf('test-anchors')).toBe(r.sections.indexOf('headline') + 1);
    expect(checkWellFormed(r.html)).toEqual([]);
    const text = textOf(elementById(r.html, 'test-anchors')!);
    expect(text).toContain('95% interval 0.7100 … 0.7900');
    expect(text).toContain('95% interval 0.02 … 0.11: better');
    expect(text).toMatch(/better/);
    expect(text).toContain('1 test anchor(s) had no target row');
    expect(text).toContain('2020-09-08T00:00:00Z');
    expect(text).toContain('—');
  });
});
