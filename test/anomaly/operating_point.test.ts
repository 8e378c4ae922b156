/**
 * A detector's threshold is chosen on the earlier half of the incidents only and judged on the later half:
 * the test stretch's scores cannot move it.
 */
import { describe, expect, it } from 'vitest';
import { chooseOperatingPoint, splitTime } from '../../src/anomaly/operating_point.js';
import type { Incident } from '../../src/anomaly/source.js';

const inc = (start: number, end: number): Incident => ({ start, end, kind: 'cpu' });

/** 200 one-minute snapshots; incidents at minutes 20, 60 (validation) and 120, 160 (test), 5 minutes each. */
const incidents = [inc(20 * 60, 25 * 60), inc(60 * 60, 65 * 60), inc(120 * 60, 125 * 60), inc(160 * 60, 165 * 60)];
const ts = Array.from({ length: 200 }, (_, k) => k * 60);

describe('chooseOperatingPoint', () => {
  it('splits midway between the last validation incident and the first test one', () => {
    expect(splitTime(incidents)).toBe((65 * 60 + 120 * 60) / 2);
    expect(splitTime([incidents[0]!])).toBeNull();
  });

  it('picks the highest threshold that catches every validation incident and reports the test stretch at it', () => {
    // validation incidents peak at 5 and 3; a false alarm of 2 at minute 40; test incidents peak at 4 and 2.5
    const score = ts.map((t) => (t === 22 * 60 ? 5 : t === 61 * 60 ? 3 : t === 40 * 60 ? 2 : t === 121 * 60 ? 4 : t === 161 * 60 ? 2.5 : 0));
    const op = chooseOperatingPoint({ ts, score, alert: score.map(() => false) }, incidents, 0)!;
    expect(op.threshold).toBe(3);
    expect(op.rule).toBe('target_recall');
    expect(op.validation).toMatchObject({ incidents: 2, recall: 1, false_alarms: 0 });
    // the test incident peaking at 2.5 stays below the validation-chosen 3
    expect(op.test).toMatchObject({ incidents: 2, recall: 0.5, false_alarms: 0 });
    expect(op.all).toMatchObject({ incidents: 4, recall: 0.75 });
    // the test stretch's scores do not move the threshold
    const louder = score.map((x, k) => (ts[k]! >= op.split_ts ? x * 10 : x));
    expect(chooseOperatingPoint({ ts, score: louder, alert: score.map(() => false) }, incidents, 0)!.threshold).toBe(3);
  });

  it('falls back to the largest margin over chance when no threshold reaches the target recall', () => {
    // one validation incident never stands out: only alerting on every snapshot (threshold 0, recall at
    // chance) catches it; the largest margin over chance is at 5, catching the other alone
    const score = ts.map((t) => (t === 22 * 60 ? 5 : t < 60 * 60 && t % 600 === 0 ? 1 : 0));
    const op = chooseOperatingPoint({ ts, score, alert: score.map(() => false) }, incidents, 0)!;
    expect(op.rule).toBe('recall_over_chance');
    expect(op.threshold).toBe(5);
    expect(op.validation.recall).toBe(0.5);
  });
});
