/**
 * Threshold and detection-quality arithmetic on hand-made series whose every count can be checked by eye.
 */
import { describe, expect, it } from 'vitest';
import { auroc, chanceRecall, evaluate, evaluatePerService, falseAlarmsAtRecall } from '../../src/anomaly/evaluate.js';
import { quantile, SlidingThreshold } from '../../src/anomaly/threshold.js';

describe('SlidingThreshold', () => {
  it('τ is the quantile of the window, which slides over every judged score (alerting ones at τ)', () => {
    expect(quantile([1, 2, 3, 4, 5], 0.5)).toBe(3);
    expect(quantile([1, 2, 3, 4, 5], 0.75)).toBe(4);
    expect(quantile([], 0.99)).toBe(Number.POSITIVE_INFINITY);
    const t = new SlidingThreshold(0.5, 3, [1, 2, 3]);
    expect(t.judge(10)).toEqual({ threshold: 2, alert: true });
    expect(t.history).toEqual([2, 3, 2]);
    expect(t.judge(1)).toEqual({ threshold: 2, alert: false });
    expect(t.history).toEqual([3, 2, 1]);
  });
});

describe('evaluate', () => {
  const ts = Array.from({ length: 20 }, (_, k) => k * 60);
  const incidents = [
    { start: 300, end: 480, kind: 'retry_storm' }, // snapshots 5..7
    { start: 900, end: 960, kind: 'dependency_drift' }, // snapshot 15
  ];
  const alert = ts.map((_, k) => [2, 6, 7, 8, 12, 13].includes(k));
  it('counts episodes, false alarms, recall, precision and delay per kind', () => {
    const q = evaluate({ ts, score: alert.map(Number), alert }, incidents, 60, 0.5);
    expect(q.alerts).toBe(6);
    expect(q.episodes).toBe(3); // {2}, {6,7,8}, {12,13}
    expect(q.false_alarms).toBe(2);
    expect(q.false_alarms_per_day).toBe(4);
    expect(q.precision).toBeCloseTo(1 / 3);
    expect(q.recall).toBe(0.5);
    expect(q.by_kind.retry_storm).toEqual({ incidents: 1, detected: 1, recall: 1, mean_delay_seconds: 60 });
    expect(q.by_kind.dependency_drift!.detected).toBe(0);
  });

  it('per-service rules page per service', () => {
    const by = new Map([
      ['a', new Set([2, 3, 6])],
      ['b', new Set([2, 15])],
    ]);
    const q = evaluatePerService(ts, by, incidents, 60, 1);
    expect(q.episodes).toBe(4); // a: {2,3}, {6}; b: {2}, {15}
    expect(q.false_alarms).toBe(2);
    expect(q.recall).toBe(1);
  });

  it('finds the highest fixed threshold reaching a recall, and its false alarms', () => {
    const score = ts.map((_, k) => (k === 6 ? 5 : k === 15 ? 3 : k === 10 ? 4 : k === 11 ? 2 : 1));
    expect(falseAlarmsAtRecall({ ts, score, alert: [] }, incidents, 60, 0.5)).toEqual({ threshold: 5, false_alarms: 0, recall: 0.5 });
    expect(falseAlarmsAtRecall({ ts, score, alert: [] }, incidents, 60, 1)).toEqual({ threshold: 3, false_alarms: 1, recall: 1 });
  });
});

describe('chance level and AUROC', () => {
  it('AUROC counts score pairs in the right order, ties as half', () => {
    expect(auroc([0.1, 0.4, 0.35, 0.8], [false, false, true, true])).toBeCloseTo(0.75);
    expect(auroc([1, 1, 1], [true, false, false])).toBe(0.5);
    expect(auroc([1, 2], [true, true])).toBeNull();
  });

  it('alerts that hit every incident lose that recall once shifted away from it', () => {
    const ts = Array.from({ length: 100 }, (_, k) => k * 60);
    const incidents = [
      { start: 600, end: 720, kind: 'a' },
      { start: 3000, end: 3120, kind: 'b' },
    ];
    const alert = ts.map((t) => incidents.some((i) => t >= i.start && t < i.end));
    const q = evaluate({ ts, score: alert.map(Number), alert }, incidents, 0, 1);
    expect(q.recall).toBe(1);
    expect(q.auroc).toBe(1);
    // 4 alerting snapshots of 100 shifted by 20 offsets: each shift lands on an incident's 2 snapshots rarely
    expect(q.chance_recall).toBeLessThan(0.2);
    expect(chanceRecall({ ts, score: [], alert: ts.map(() => true) }, incidents, 0)).toBe(1);
  });
});
