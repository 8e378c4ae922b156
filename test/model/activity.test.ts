/**
 * Activity inputs of the task's entity (features.ts): past-window counts, recency, tenure and monetary
 * sums from the time-sorted CSR, what the no-graph baseline reads, at any anchor and leak-free.
 */
import { describe, expect, it } from 'vitest';
import { activityDim, featureSpecFromGraph, numericDim, TableFeatures } from '../../src/model/features.js';
import { handGraph, REV_EDGE } from '../helpers/hand_graph.js';

const DAY = 86400;
// user 0: a first event on day 0, then a burst of 20 events on day 100 (same second), then 5 on day 200;
// user 1: nothing. Each event has an amount 2.
const times = [0, ...new Array(20).fill(100 * DAY), ...new Array(5).fill(200 * DAY)];
const g = handGraph(new Int32Array(times.length), Float64Array.from(times), 2);
const amount = new Float32Array(times.length).fill(2);
g.graph.tables.events!.numeric = [{ meta: { name: 'amount', mean: 2, std: 0.5 }, values: amount }] as never;

describe('activity inputs', () => {
  const spec = featureSpecFromGraph(g.graph, [], 'users');

  it('only the entity table gets them: one per reverse edge to a timed table, with its numeric columns', () => {
    expect(spec.tables.users!.activity).toEqual([{ edge: REV_EDGE, sums: [{ name: 'amount', std: 0.5 }] }]);
    expect(spec.tables.events!.activity).toBeUndefined();
    expect(featureSpecFromGraph(g.graph, []).tables.users!.activity).toBeUndefined();
    // 3 window counts, all, recency, tenure, no-rows flag, 2 windowed sums of the one column
    expect(activityDim(spec.tables.users!)).toBe(9);
    expect(numericDim(spec.tables.users!)).toBe(9);
  });

  it('a target column is never summed', () => {
    const s = featureSpecFromGraph(g.graph, [{ table: 'events', column: 'amount', reason: 'target' }], 'users');
    expect(s.tables.users!.activity).toEqual([{ edge: REV_EDGE, sums: [] }]);
  });

  it('counts, recency, tenure and sums at an anchor see only rows with time ≤ anchor, beyond any fanout', () => {
    const f = new TableFeatures(g.graph.tables.users!, spec.tables.users!, g.graph);
    expect(f.timeDependent).toBe(true);
    const anchors = [100 * DAY + 3600, 150 * DAY, 99 * DAY, 100 * DAY + 3600];
    const num = new Float32Array(4 * 9);
    f.gather(Int32Array.of(0, 0, 0, 1), (i) => anchors[i]!, null, num, new Int32Array(0));
    const row = (i: number) => Array.from(num.subarray(i * 9, (i + 1) * 9));
    const log = (x: number) => Math.fround(Math.log1p(x));
    const age = (days: number) => Math.fround(Math.log1p(days) / 5);
    const sum = (n: number) => Math.fround(Math.log1p((2 * n) / 0.5));
    // an hour after the burst: 20 in the last 7/30/90 days, 21 in all; the first event 100 days ago
    expect(row(0)).toEqual([log(20), log(20), log(20), log(21), age(1 / 24), age(100 + 1 / 24), 0, sum(20), sum(20)]);
    // 50 days later: only the 90-day window still holds the burst
    expect(row(1)).toEqual([0, 0, log(20), log(21), age(50), age(150), 0, 0, sum(20)]);
    // before the burst: the burst (and the later rows) are invisible
    expect(row(2)).toEqual([0, 0, 0, log(1), age(99), age(99), 0, 0, 0]);
    // a user with no rows: zeros and the flag
    expect(row(3)).toEqual([0, 0, 0, 0, 0, 0, 1, 0, 0]);
  });

  it('a graph without the edge reads as no rows (schema drift), with the same width', () => {
    const f = new TableFeatures(g.graph.tables.users!, { ...spec.tables.users!, activity: [{ edge: 'users<-gone.user_id', sums: [{ name: 'x', std: 1 }] }] }, g.graph);
    const num = new Float32Array(9);
    f.gather(Int32Array.of(0), () => 150 * DAY, null, num, new Int32Array(0));
    expect(Array.from(num)).toEqual([0, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});
