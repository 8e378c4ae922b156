/**
 * `threshold: {false_alarms_per_day: N}` becomes the quantile that lets N of a normal day's snapshots alert.
 */
import { describe, expect, it } from 'vitest';
import { anomalySchema } from '../../src/config/anomaly_schema.js';
import { withAlertBudget } from '../../src/anomaly/fit.js';
import type { Snapshot } from '../../src/anomaly/source.js';

const snaps = (step: number): Snapshot[] => Array.from({ length: 10 }, (_, k) => ({ ts: k * step, services: [], features: new Float32Array(0), src: new Int32Array(0), dst: new Int32Array(0), rate: new Float32Array(0), edgeFeatures: new Float32Array(0) }));

describe('alert budget', () => {
  it('2 alerts a day at 1-minute snapshots: q = 1 − 2/1440; at 5 minutes: 1 − 2/288', () => {
    const a = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, threshold: { false_alarms_per_day: 2 } });
    expect(withAlertBudget(a, snaps(60)).threshold_quantile).toBeCloseTo(1 - 2 / 1440, 9);
    expect(withAlertBudget(a, snaps(300)).threshold_quantile).toBeCloseTo(1 - 2 / 288, 9);
  });

  it('no budget: the configured quantile', () => {
    const a = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, threshold_quantile: 0.95 });
    expect(withAlertBudget(a, snaps(60)).threshold_quantile).toBe(0.95);
  });

  it('spans without snapshot_seconds, or both calls and spans, are config errors', () => {
    expect(anomalySchema.safeParse({ metrics: { path: 'm.csv' }, spans: { path: 's.parquet' } }).success).toBe(false);
    expect(anomalySchema.safeParse({ metrics: { path: 'm.csv' }, spans: { path: 's.parquet' }, snapshot_seconds: 60 }).success).toBe(true);
    expect(anomalySchema.safeParse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, spans: { path: 's.parquet' }, snapshot_seconds: 60 }).success).toBe(false);
  });
});
