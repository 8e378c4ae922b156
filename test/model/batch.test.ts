import { describe, expect, it } from 'vitest';
import { buildBatchArrays } from '../../src/model/batch.js';
import { TableFeatures, TIME_FEATURES, writeTimeFeatures } from '../../src/model/features.js';
import { buildPlan } from '../../src/model/plan.js';
import { TemporalSampler } from '../../src/model/sampler.js';
import { Rng } from '../../src/core/rng.js';
import { handGraph } from '../helpers/hand_graph.js';

// user 0: events 0, 2, 4, 6, 8 at times 10, 30, 50, 70, 90; user 1: events 1, 3, 5, 7, 9 at 20, 40, …
const owner = Int32Array.from({ length: 10 }, (_, i) => i % 2);
const time = Float64Array.from({ length: 10 }, (_, i) => 10 * (i + 1));
const g = handGraph(owner, time, 2);
const features = {
  users: new TableFeatures(g.graph.tables.users!, { numeric: [], categorical: [], timestamps: [], has_time: false }),
  events: new TableFeatures(g.graph.tables.events!, { numeric: [], categorical: [], timestamps: [], has_time: true }),
};

describe('buildBatchArrays: dense model inputs from a sampled batch', () => {
  // seeds: user 0 at 100, user 1 at 55, user 0 again at 30; users → 3 events → their user
  const plan = buildPlan(g.graph, 'users', [3, 2]);
  const sampled = new TemporalSampler(g.graph, plan, 'last').sample(Int32Array.of(0, 1, 0), Float64Array.of(100, 55, 30), null);
  const b = buildBatchArrays(plan, sampled, features);

  it('encodes each timeless node once, time-dependent nodes once per (node, seed)', () => {
    // users have no time: user 0 appears at 3 seeds and under 5 events, still one row
    expect(b.types.users!.rows).toBe(2);
    // events: seed 0 → 8, 6, 4; seed 1 → 3, 1; seed 2 → 2, 0
    expect(b.types.events!.rows).toBe(7);
    expect(b.types.events!.num).toHaveLength(7 * TIME_FEATURES);
    const expected = new Float32Array(7 * TIME_FEATURES);
    const rows: [number, number][] = [[8, 100], [6, 100], [4, 100], [3, 55], [1, 55], [2, 30], [0, 30]];
    rows.forEach(([e, anchor], r) => writeTimeFeatures(expected, r * TIME_FEATURES, anchor, time[e]!));
    expect(Array.from(b.types.events!.num)).toEqual(Array.from(expected));
  });

  it('every batch numbers its rows afresh: the node → row index keeps nothing from the batch before', () => {
    const again = buildBatchArrays(plan, sampled, features);
    expect(again.positions.map((p) => Array.from(p))).toEqual(b.positions.map((p) => Array.from(p)));
    expect(again.types.events!.rows).toBe(7);
    // user 1 at 55 alone: its events 3 and 1 are rows 0 and 1, user 1 is row 0 (not rows of the batches above)
    const one = buildBatchArrays(plan, new TemporalSampler(g.graph, plan, 'last').sample(Int32Array.of(1), Float64Array.of(55), null), features);
    expect(one.types.users!.rows).toBe(1);
    expect(one.positions.map((p) => Array.from(p))).toEqual([[0], [0, 1], [0, 0]]);
  });

  it('keeps only valid positions and points each at its encoded row', () => {
    expect(b.positions.map((p) => Array.from(p))).toEqual([
      [0, 1, 0],
      [0, 1, 2, 3, 4, 5, 6],
      [0, 0, 0, 1, 1, 0, 0],
    ]);
  });

  it('child index, mean weights, masks and log degrees per parent row; padding has weight 0', () => {
    expect(Array.from(b.childIndex[1]!)).toEqual([0, 1, 2, 3, 4, 0, 5, 6, 0]);
    expect(Array.from(b.masks[1]!)).toEqual([1, 1, 1, 1, 1, 0, 1, 1, 0]);
    expect(Array.from(b.weights[1]!)).toEqual([1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 0, 0.5, 0.5, 0].map(Math.fround));
    // degrees count every event before the anchor, not only the 3 sampled: user 0 at 100 has 5
    expect(Array.from(b.degrees[1]!)).toEqual([Math.log(6), Math.log(3), Math.log(3)].map(Math.fround));
    // each event's user: fanout 1, always found
    expect(Array.from(b.childIndex[2]!)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(Array.from(b.weights[2]!)).toEqual(new Array(7).fill(1));
    expect(b.childIndex[0]).toBeNull();
  });

  it.each(['last', 'uniform'] as const)('%s: the degree input is the count of all neighbours before the anchor, beyond the fanout', (method) => {
    // one user with a burst of 30 events at the same second, and 10 more after the anchor
    const burst = handGraph(new Int32Array(40), Float64Array.from({ length: 40 }, (_, i) => (i < 30 ? 500 : 900 + i)), 1);
    const f = {
      users: new TableFeatures(burst.graph.tables.users!, { numeric: [], categorical: [], timestamps: [], has_time: false }),
      events: new TableFeatures(burst.graph.tables.events!, { numeric: [], categorical: [], timestamps: [], has_time: true }),
    };
    const p = buildPlan(burst.graph, 'users', [4]);
    const s = new TemporalSampler(burst.graph, p, method).sample(Int32Array.of(0, 0, 0), Float64Array.of(600, 499, 1e9), new Rng(3));
    expect(s.slots[1]!.valid.reduce((a, v) => a + v, 0)).toBe(8);
    expect(Array.from(s.slots[1]!.visible!)).toEqual([30, 0, 40]);
    // log(1 + 30), not log(1 + 4): the sampled count would be the fanout for every active user
    expect(Array.from(buildBatchArrays(p, s, f).degrees[1]!)).toEqual([Math.log(31), 0, Math.log(41)].map(Math.fround));
    // a run made before (spec without `degree`) keeps reading the sampled count it was trained on
    expect(Array.from(buildBatchArrays(p, s, f, 'sampled').degrees[1]!)).toEqual([Math.log(5), 0, Math.log(5)].map(Math.fround));
  });

  it('a seed with no neighbour before its anchor gets an all-padding block and degree 0', () => {
    const s = new TemporalSampler(g.graph, plan, 'last').sample(Int32Array.of(1), Float64Array.of(5), null);
    const e = buildBatchArrays(plan, s, features);
    expect(e.types.events!.rows).toBe(0);
    expect(Array.from(e.masks[1]!)).toEqual([0, 0, 0]);
    expect(Array.from(e.degrees[1]!)).toEqual([0]);
    expect(e.positions[2]).toHaveLength(0);
  });
});
