import { describe, expect, it } from 'vitest';
import type { TaskSpec } from '../../src/config/load.js';
import { modelSchema, taskSchema } from '../../src/config/schema.js';
import { DataError } from '../../src/core/errors.js';
import { alignedEnd, parseTime, taskSplit, valAnchorStride } from '../../src/task/split.js';
import { parseQuery } from '../../src/task/pql.js';

const DAY = 86400;
const t = (iso: string): number => Date.parse(iso) / 1000;

function task(query: string, split: Record<string, unknown> = {}): TaskSpec {
  return { name: 'x', query: parseQuery(query), split: taskSchema.shape.split.parse(split), model: modelSchema.parse({}) };
}

const CHURN = 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id';
const FRAUD = 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id';
// newest row 2020-01-27 18:00, oldest 2020-01-01 09:00 (the retail fixture's span)
const RANGE = { min: t('2020-01-01T09:00:00Z'), max: t('2020-01-27T18:00:00Z') };

describe('default anchors: test = newest − window, val = test − window, train steps back from val', () => {
  it('entity task with a 7-day window: the newest time is rounded up to midnight first', () => {
    const s = taskSplit(task(CHURN), RANGE);
    expect(s.window).toBe(7 * DAY);
    expect(s.testAnchor).toBe(t('2020-01-21T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-14T00:00:00Z'));
    // 2020-01-07 fits; 2019-12-31 precedes the oldest row and is dropped
    expect(s.trainAnchors).toEqual([t('2020-01-07T00:00:00Z')]);
  });

  it('train_anchors caps the number of train anchors, oldest first', () => {
    const s = taskSplit(task('PREDICT COUNT(transactions.*, 0, 2, days) FOR EACH customers.customer_id', { train_anchors: 3 }), RANGE);
    expect(s.testAnchor).toBe(t('2020-01-26T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-24T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-18T00:00:00Z'), t('2020-01-20T00:00:00Z'), t('2020-01-22T00:00:00Z')]);
  });

  it('a window that is not whole days does not round the newest time', () => {
    const s = taskSplit(task('PREDICT COUNT(transactions.*, 0, 36, hours) FOR EACH customers.customer_id'), RANGE);
    expect(s.window).toBe(36 * 3600);
    expect(s.testAnchor).toBe(RANGE.max - 36 * 3600);
    expect(s.valAnchor).toBe(RANGE.max - 72 * 3600);
  });

  it('split.window overrides the anchor spacing', () => {
    const s = taskSplit(task(CHURN, { window: '2 days', train_anchors: 2 }), RANGE);
    expect(s.window).toBe(2 * DAY);
    expect(s.testAnchor).toBe(t('2020-01-26T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-24T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-20T00:00:00Z'), t('2020-01-22T00:00:00Z')]);
  });

  it('fact tasks split at 7-day boundaries and have no train anchors', () => {
    const s = taskSplit(task(FRAUD), RANGE);
    expect(s).toEqual({ window: 7 * DAY, trainAnchors: [], valAnchor: t('2020-01-14T00:00:00Z'), valAnchors: [t('2020-01-14T00:00:00Z')], testAnchor: t('2020-01-21T00:00:00Z') });
  });

  it('explicit test_anchor / val_anchor (ISO dates, times, offsets) win over the defaults', () => {
    const s = taskSplit(task(CHURN, { test_anchor: '2020-01-20', val_anchor: '2020-01-13T00:00:00+00:00' }), RANGE);
    expect(s.testAnchor).toBe(t('2020-01-20T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-13T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-06T00:00:00Z')]);
    // only test_anchor: val steps back one window from it
    expect(taskSplit(task(CHURN, { test_anchor: '2020-01-20 12:00:00' }), RANGE).valAnchor).toBe(t('2020-01-13T12:00:00Z'));
  });
});

describe('anchors that cannot work are refused', () => {
  const cases: { name: string; query: string; split: Record<string, unknown>; message: RegExp }[] = [
    { name: 'val anchor not before test anchor', query: CHURN, split: { test_anchor: '2020-01-20', val_anchor: '2020-01-20' }, message: /val anchor 2020-01-20T00:00:00Z is not before the test anchor/ },
    { name: 'data span shorter than the windows', query: 'PREDICT COUNT(transactions.*, 0, 14, days) FOR EACH customers.customer_id', split: {}, message: /too short for a 14-day window/ },
    { name: 'no train anchor fits', query: CHURN, split: { val_anchor: '2020-01-05', test_anchor: '2020-01-20' }, message: /no training anchor fits in the data before the val anchor 2020-01-05T00:00:00Z/ },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(() => taskSplit(task(c.query, c.split), RANGE)).toThrow(DataError);
      expect(() => taskSplit(task(c.query, c.split), RANGE)).toThrow(c.message);
    });
  }
});

describe('time helpers', () => {
  it('parseTime reads dates and timestamps as UTC unless an offset is given', () => {
    expect(parseTime('2020-09-15', 'x')).toBe(t('2020-09-15T00:00:00Z'));
    expect(parseTime('2020-09-15 06:30:00', 'x')).toBe(t('2020-09-15T06:30:00Z'));
    expect(parseTime('2020-09-15T06:30:00+02:00', 'x')).toBe(t('2020-09-15T04:30:00Z'));
  });

  it('alignedEnd rounds up to midnight for whole-day windows only', () => {
    expect(alignedEnd(t('2020-01-27T18:00:00Z'), DAY)).toBe(t('2020-01-28T00:00:00Z'));
    expect(alignedEnd(t('2020-01-28T00:00:00Z'), 7 * DAY)).toBe(t('2020-01-28T00:00:00Z'));
    expect(alignedEnd(t('2020-01-27T18:00:00Z'), 3600)).toBe(t('2020-01-27T18:00:00Z'));
  });
});

describe('anchor times', () => {
  it('the config schema refuses an anchor that is not a time, before any split is computed', () => {
    expect(() => task(CHURN, { test_anchor: 'next tuesday' })).toThrow(/not a time/);
  });

  it('parseTime names where a bad time came from', () => {
    expect(() => parseTime('next tuesday', '--anchor-time')).toThrow(DataError);
    expect(() => parseTime('next tuesday', '--anchor-time')).toThrow(/not a time: "next tuesday"/);
  });

  it('an anchor with an offset is the same instant in UTC', () => {
    const a = taskSplit(task(CHURN, { test_anchor: '2020-01-20T02:00:00+02:00' }), RANGE);
    const b = taskSplit(task(CHURN, { test_anchor: '2020-01-20T00:00:00Z' }), RANGE);
    expect(a.testAnchor).toBe(b.testAnchor);
  });
});

describe('several validation anchors (small validation sets)', () => {
  // A 14-day churn window over a long span: test 14 days before the newest midnight.
  const LONG = { min: t('2019-01-01T00:00:00Z'), max: t('2020-03-31T12:00:00Z') };
  const CHURN14 = 'PREDICT COUNT(transactions.*, 0, 14, days) = 0 FOR EACH customers.customer_id';

  it('steps back from the val anchor in whole days; the newest is val_anchor; test does not move', () => {
    const one = taskSplit(task(CHURN14), LONG);
    const four = taskSplit(task(CHURN14), LONG, { valAnchorCount: 4 });
    expect(four.testAnchor).toBe(one.testAnchor);
    expect(four.valAnchor).toBe(one.valAnchor);
    expect(four.valAnchors).toEqual([one.valAnchor - 9 * DAY, one.valAnchor - 6 * DAY, one.valAnchor - 3 * DAY, one.valAnchor]);
    expect(one.valAnchors).toEqual([one.valAnchor]);
    for (const a of four.valAnchors) expect(a % DAY).toBe(0);
  });

  it('no validation label window reaches the test period, no training label window reaches a validation one', () => {
    const s = taskSplit(task(CHURN14), LONG, { valAnchorCount: 4 });
    for (const a of s.valAnchors) expect(a + s.window).toBeLessThanOrEqual(s.testAnchor);
    const newestTrain = s.trainAnchors[s.trainAnchors.length - 1]!;
    expect(newestTrain + s.window).toBeLessThanOrEqual(s.valAnchors[0]!);
    expect(s.trainAnchors).toHaveLength(10);
    // the training anchors keep their spacing, one window apart
    for (let i = 1; i < s.trainAnchors.length; i++) expect(s.trainAnchors[i]! - s.trainAnchors[i - 1]!).toBe(s.window);
  });

  it('the stride: window / count, whole days for day windows, the exact fraction otherwise', () => {
    expect(valAnchorStride(14 * DAY, 4)).toBe(3 * DAY);
    expect(valAnchorStride(7 * DAY, 14)).toBe(DAY);
    expect(valAnchorStride(36 * 3600, 4)).toBe(9 * 3600);
    expect(valAnchorStride(14 * DAY, 1)).toBe(14 * DAY);
  });

  it('fact-row tasks keep one val boundary', () => {
    const s = taskSplit(task(FRAUD), RANGE, { valAnchorCount: 4 });
    expect(s.valAnchors).toEqual([s.valAnchor]);
  });

  it('when the extra anchors leave no room for training, the error says to use fewer val_anchors', () => {
    const short = { min: t('2020-01-01T00:00:00Z'), max: t('2020-02-20T00:00:00Z') };
    expect(() => taskSplit(task(CHURN14, { train_anchors: 1 }), short)).not.toThrow();
    let err: unknown = null;
    try {
      taskSplit(task(CHURN14, { train_anchors: 1 }), short, { valAnchorCount: 14 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataError);
    expect((err as DataError).hint).toMatch(/fewer val_anchors/);
  });
});
