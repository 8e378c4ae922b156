import { describe, expect, it } from 'vitest';
import type { TaskSpec } from '../../src/config/load.js';
import { modelSchema, taskSchema } from '../../src/config/schema.js';
import { DataError } from '../../src/core/errors.js';
import { alignedEnd, AUTO_TEST_ANCHORS, parseTime, taskSplit, targetTimeRange } from '../../src/task/split.js';
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
    const s = taskSplit(task('PREDICT COUNT(transactions.*, 0, 2, days) FOR EACH customers.customer_id', { train_anchors: 3, test_anchors: 1 }), RANGE);
    expect(s.testAnchor).toBe(t('2020-01-26T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-24T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-18T00:00:00Z'), t('2020-01-20T00:00:00Z'), t('2020-01-22T00:00:00Z')]);
  });

  it('a window that is not whole days does not round the newest time', () => {
    const s = taskSplit(task('PREDICT COUNT(transactions.*, 0, 36, hours) FOR EACH customers.customer_id', { test_anchors: 1 }), RANGE);
    expect(s.window).toBe(36 * 3600);
    expect(s.testAnchor).toBe(RANGE.max - 36 * 3600);
    expect(s.valAnchor).toBe(RANGE.max - 72 * 3600);
  });

  it('split.window overrides the anchor spacing', () => {
    const s = taskSplit(task(CHURN, { window: '2 days', train_anchors: 2, test_anchors: 1 }), RANGE);
    expect(s.window).toBe(2 * DAY);
    expect(s.testAnchor).toBe(t('2020-01-26T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-24T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-20T00:00:00Z'), t('2020-01-22T00:00:00Z')]);
  });

  it('fact tasks split at 7-day boundaries and have no train anchors', () => {
    const s = taskSplit(task(FRAUD), RANGE);
    expect(s).toEqual({
      window: 7 * DAY,
      table: 'transactions',
      dataEnd: RANGE.max,
      trainAnchors: [],
      trainFrom: null,
      valAnchor: t('2020-01-14T00:00:00Z'),
      valAnchors: [t('2020-01-14T00:00:00Z')],
      testAnchor: t('2020-01-21T00:00:00Z'),
      testAnchors: [t('2020-01-21T00:00:00Z')],
    });
  });

  it('explicit test_anchor / val_anchor (ISO dates, times, offsets) win over the defaults', () => {
    const s = taskSplit(task(CHURN, { test_anchor: '2020-01-20', val_anchor: '2020-01-13T00:00:00+00:00' }), RANGE);
    expect(s.testAnchor).toBe(t('2020-01-20T00:00:00Z'));
    expect(s.valAnchor).toBe(t('2020-01-13T00:00:00Z'));
    expect(s.trainAnchors).toEqual([t('2020-01-06T00:00:00Z')]);
    // only test_anchor: val steps back one window from it
    expect(taskSplit(task(CHURN, { test_anchor: '2020-01-20 12:00:00' }), RANGE).valAnchor).toBe(t('2020-01-13T12:00:00Z'));
    // the RelBench names are the same settings
    const r = taskSplit(task(CHURN, { test_timestamp: '2020-01-20', val_timestamp: '2020-01-13' }), RANGE);
    expect([r.testAnchor, r.valAnchor]).toEqual([t('2020-01-20T00:00:00Z'), t('2020-01-13T00:00:00Z')]);
  });
});

describe('anchors that cannot work are refused', () => {
  const cases: { name: string; query: string; split: Record<string, unknown>; message: RegExp }[] = [
    { name: 'val anchor not before test anchor', query: CHURN, split: { test_anchor: '2020-01-20', val_anchor: '2020-01-20' }, message: /val timestamp 2020-01-20T00:00:00Z is not before the test timestamp/ },
    { name: 'data span shorter than the windows', query: 'PREDICT COUNT(transactions.*, 0, 14, days) FOR EACH customers.customer_id', split: {}, message: /too short for a 14-day window/ },
    { name: 'no train anchor fits', query: CHURN, split: { val_anchor: '2020-01-05', test_anchor: '2020-01-20' }, message: /no training anchor fits between the start of transactions .* and the val timestamp 2020-01-05T00:00:00Z \(transactions's last time is 2020-01-27T18:00:00Z\)/ },
    { name: 'train_from at or after the val timestamp', query: CHURN, split: { train_from: '2020-01-14' }, message: /no training anchor fits between train_from 2020-01-14T00:00:00Z and the val timestamp/ },
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

describe('RelBench protocol: many test anchors, one window apart, ending before the target data does', () => {
  // A 14-day churn window over fifteen months: 32 whole windows.
  const LONG = { min: t('2019-01-01T00:00:00Z'), max: t('2020-03-31T12:00:00Z') };
  const CHURN14 = 'PREDICT COUNT(transactions.*, 0, 14, days) = 0 FOR EACH customers.customer_id';
  const end = t('2020-04-01T00:00:00Z');

  it('default: 20 test anchors one window apart, the last window ending at the end of the data', () => {
    const s = taskSplit(task(CHURN14), LONG);
    expect(s.testAnchors).toHaveLength(AUTO_TEST_ANCHORS);
    expect(s.testAnchors[0]).toBe(s.testAnchor);
    for (let i = 1; i < s.testAnchors.length; i++) expect(s.testAnchors[i]! - s.testAnchors[i - 1]!).toBe(14 * DAY);
    expect(s.testAnchors[s.testAnchors.length - 1]! + s.window).toBe(end);
    expect(s.valAnchors).toEqual([s.testAnchor - 14 * DAY]);
    expect(s.trainAnchors).toHaveLength(10);
    expect(s.trainAnchors[9]! + s.window).toBe(s.valAnchors[0]!);
  });

  it('short data: "auto" leaves room for 4 validation anchors and a sixth of the windows (at least 3) for training', () => {
    // 3 whole 7-day windows in RANGE: one test, one val, one train
    const s = taskSplit(task(CHURN), RANGE);
    expect(s.testAnchors).toEqual([t('2020-01-21T00:00:00Z')]);
    // 210 days of 14-day windows (the bursty and ratings presets): 15 windows, 8 for test
    const s15 = taskSplit(task(CHURN14, { train_anchors: 'all' }), { min: t('1997-09-25T14:53:57Z'), max: t('1998-04-23T00:14:12Z') });
    expect(s15.testAnchors).toHaveLength(8);
    expect(s15.trainAnchors).toHaveLength(6);
    // the test period does not move with the validation count the trainer settles on
    expect(taskSplit(task(CHURN14), { min: t('1997-09-25T14:53:57Z'), max: t('1998-04-23T00:14:12Z') }, { valAnchorCount: 4 }).testAnchors).toEqual(s15.testAnchors);
  });

  it('test_timestamp + test_anchors: N steps forward, stopping when the next window would pass the data', () => {
    const s = taskSplit(task(CHURN14, { test_timestamp: '2020-01-01', val_timestamp: '2019-12-04', test_anchors: 40, val_anchors: 2 }), LONG);
    expect(s.testAnchors).toEqual([t('2020-01-01T00:00:00Z'), t('2020-01-15T00:00:00Z'), t('2020-01-29T00:00:00Z'), t('2020-02-12T00:00:00Z'), t('2020-02-26T00:00:00Z'), t('2020-03-11T00:00:00Z')]);
    expect(s.valAnchors).toEqual([t('2019-12-04T00:00:00Z'), t('2019-12-18T00:00:00Z')]);
    expect(s.valAnchor).toBe(t('2019-12-18T00:00:00Z'));
    for (const a of s.valAnchors) expect(a + s.window).toBeLessThanOrEqual(s.testAnchor);
  });

  it('val_anchors: N are one window apart and end by the test timestamp; more do not fit and are not made up', () => {
    const s = taskSplit(task(CHURN14, { test_timestamp: '2020-01-01', val_timestamp: '2019-12-04' }), LONG, { valAnchorCount: 4 });
    expect(s.valAnchors).toEqual([t('2019-12-04T00:00:00Z'), t('2019-12-18T00:00:00Z')]);
    // without a val timestamp, val_anchors windows are left before the test timestamp
    const d = taskSplit(task(CHURN14, { test_timestamp: '2020-01-01' }), LONG, { valAnchorCount: 4 });
    expect(d.valAnchors).toEqual([t('2019-11-06T00:00:00Z'), t('2019-11-20T00:00:00Z'), t('2019-12-04T00:00:00Z'), t('2019-12-18T00:00:00Z')]);
  });

  it('train_anchors: all goes back to the start of the data; train_from stops it earlier', () => {
    const all = taskSplit(task(CHURN14, { train_anchors: 'all' }), LONG);
    expect(all.trainAnchors[0]! - all.window).toBeLessThanOrEqual(LONG.min);
    expect(all.trainAnchors[0]!).toBeGreaterThan(LONG.min);
    const from = taskSplit(task(CHURN14, { train_anchors: 'all', train_from: '2019-03-01' }), LONG);
    expect(from.trainFrom).toBe(t('2019-03-01T00:00:00Z'));
    expect(from.trainAnchors[0]!).toBeGreaterThanOrEqual(t('2019-03-01T00:00:00Z'));
    expect(from.trainAnchors[0]! - from.window).toBeLessThan(t('2019-03-01T00:00:00Z'));
    expect(from.trainAnchors.length).toBeLessThan(all.trainAnchors.length);
  });

  it('fact tasks: train_from is recorded for the row filter, and must precede validation', () => {
    expect(taskSplit(task(FRAUD, { train_from: '2020-01-05' }), RANGE).trainFrom).toBe(t('2020-01-05T00:00:00Z'));
    expect(() => taskSplit(task(FRAUD, { train_from: '2020-01-20' }), RANGE)).toThrow(/train_from 2020-01-20T00:00:00Z is not before the val timestamp/);
  });
});

describe('the target table sets the end of the data', () => {
  // races are scheduled months past the last result (the F1 case in issue 32)
  const tables = {
    races: { time_range: [t('1950-05-13T00:00:00Z'), t('2022-11-20T00:00:00Z')] as [number, number] },
    results: { time_range: [t('1950-05-13T00:00:00Z'), t('2022-07-31T00:00:00Z')] as [number, number] },
    drivers: { time_range: null },
  };
  const DNF = task('PREDICT COUNT(results.*, 0, 30, days) > 0 FOR EACH drivers.driver_id', { test_anchors: 3 });

  it('the aggregated table, not the newest table, ends the data', () => {
    const r = targetTimeRange(DNF, tables);
    expect(r).toEqual({ min: tables.results.time_range[0], max: tables.results.time_range[1], table: 'results' });
    const s = taskSplit(DNF, r);
    expect(s.table).toBe('results');
    expect(s.testAnchors[s.testAnchors.length - 1]! + s.window).toBe(t('2022-07-31T00:00:00Z'));
  });

  it('a fact task reads its own table; a target table without times is an error naming it', () => {
    expect(targetTimeRange(task('PREDICT results.dnf = 1 FOR EACH results.result_id'), tables).table).toBe('results');
    expect(() => targetTimeRange(task('PREDICT COUNT(drivers.*, 0, 7, days) > 0 FOR EACH races.race_id'), tables)).toThrow(/target table drivers has no time column/);
  });
});
