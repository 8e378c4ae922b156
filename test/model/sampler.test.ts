import { describe, expect, it } from 'vitest';
import type { Graph } from '../../src/graph/graph.js';
import { buildPlan } from '../../src/model/plan.js';
import { TemporalSampler, upperBound, type SamplingMethod } from '../../src/model/sampler.js';
import { Rng } from '../../src/core/rng.js';
import { countingArray, handGraph, FK_EDGE, REV_EDGE } from '../helpers/hand_graph.js';

/** users 0..2: user 0 owns `big` events, user 1 owns `small` events spread among them, user 2 owns none. */
function superNodeGraph(big: number, small: number) {
  const n = big + small;
  const owner = new Int32Array(n);
  const stride = Math.floor(n / small);
  for (let k = 0; k < small; k++) owner[k * stride + 7] = 1;
  const time = Float64Array.from({ length: n }, (_, i) => 1000 + i);
  return handGraph(owner, time, 3);
}

/** Reads of the CSR indices and of event times while sampling one seed (the work the sampler does). */
function samplingReads(method: SamplingMethod, user: number, anchor: number, fanout: number, g = superNodeGraph(100_000, 20)) {
  const counter = { reads: 0 };
  const rev = { ...g.rev, indices: countingArray(g.rev.indices!, counter) };
  const graph = { ...g.graph, edges: [g.fk, rev], tables: { ...g.graph.tables, events: { ...g.graph.tables.events!, time: countingArray(g.time, counter) } } } as unknown as Graph;
  const plan = buildPlan(graph, 'users', [fanout]);
  const draws = { n: 0 };
  const rng = new Rng(7);
  const int = rng.int.bind(rng);
  rng.int = (k: number) => {
    draws.n++;
    return int(k);
  };
  const sampled = new TemporalSampler(graph, plan, method).sample(Int32Array.of(user), Float64Array.of(anchor), rng);
  return { reads: counter.reads, draws: draws.n, sampled };
}

describe('sampling cost is O(fanout + log degree), whatever the degree', () => {
  const cases = (['last', 'uniform'] as const).flatMap((method) => [
    { method, visible: 'all neighbours' as const },
    { method, visible: 'half the neighbours' as const },
  ]);
  it.each(cases)('$method, $visible visible: a 100k-degree node costs what a 20-degree node costs, up to the binary search', ({ method, visible }) => {
    const g = superNodeGraph(100_000, 20);
    // half visible: the 20-degree node still has 10 neighbours before the anchor, more than the fanout
    const anchor = visible === 'all neighbours' ? 1e12 : 1000 + 50_010;
    const fanout = 8;
    const superNode = samplingReads(method, 0, anchor, fanout, g);
    const small = samplingReads(method, 1, anchor, fanout, g);
    expect(superNode.sampled.slots[1]!.valid.reduce((a, b) => a + b, 0)).toBe(fanout);
    expect(small.sampled.slots[1]!.valid.reduce((a, b) => a + b, 0)).toBe(fanout);
    // Binary search: two reads (index, time) per halving. Picking: `fanout` reads for `last`; Floyd's
    // algorithm checks each draw against the ones before it, ≤ fanout·(fanout + 1)/2 + fanout reads.
    const search = (degree: number): number => 2 * Math.ceil(Math.log2(degree + 1));
    const pick = method === 'last' ? fanout : (fanout * (fanout + 1)) / 2 + fanout;
    expect(superNode.reads).toBeLessThanOrEqual(search(100_000) + pick);
    expect(small.reads).toBeLessThanOrEqual(search(20) + pick);
    // what the 5000× larger degree adds: the longer binary search, nothing else (Floyd's check count varies
    // with the draws, hence its slack)
    expect(superNode.reads - small.reads).toBeLessThanOrEqual(search(100_000) - 2 * Math.floor(Math.log2(20)) + (pick - fanout));
    // random draws: exactly one per sampled neighbour, never one per edge
    expect(superNode.draws).toBe(method === 'uniform' ? fanout : 0);
    expect(small.draws).toBe(superNode.draws);
  });

  it('a node without neighbours costs nothing and samples nothing', () => {
    const r = samplingReads('uniform', 2, 1e12, 10);
    expect(r.reads).toBe(0);
    expect(Array.from(r.sampled.slots[1]!.valid)).toEqual(new Array(10).fill(0));
  });
});

describe('temporal neighbour sampling', () => {
  // user 0: events 0, 2, 4, 6, 8 at times 10, 30, 50, 70, 90; user 1: events 1, 3, 5, 7, 9 at 20, 40, …
  const owner = Int32Array.from({ length: 10 }, (_, i) => i % 2);
  const time = Float64Array.from({ length: 10 }, (_, i) => 10 * (i + 1));
  const g = handGraph(owner, time, 2);

  it('last: the most recent neighbours with time ≤ anchor, most recent first; missing positions invalid', () => {
    const plan = buildPlan(g.graph, 'users', [3]);
    const s = new TemporalSampler(g.graph, plan, 'last').sample(Int32Array.of(0, 1, 0, 1), Float64Array.of(100, 55, 30, 5), null);
    expect(Array.from(s.slots[0]!.nodes)).toEqual([0, 1, 0, 1]);
    expect(Array.from(s.slots[1]!.nodes)).toEqual([8, 6, 4, /* anchor 55 */ 3, 1, 0, /* anchor 30: time 30 counts */ 2, 0, 0, /* anchor 5 */ 0, 0, 0]);
    expect(Array.from(s.slots[1]!.valid)).toEqual([1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0]);
  });

  it('uniform: distinct neighbours, never after the anchor, each equally likely', () => {
    const n = 40;
    const owner2 = new Int32Array(n);
    const time2 = Float64Array.from({ length: n }, (_, i) => i);
    const g2 = handGraph(owner2, time2, 1);
    const plan = buildPlan(g2.graph, 'users', [3]);
    const sampler = new TemporalSampler(g2.graph, plan, 'uniform');
    const rng = new Rng(11);
    const counts = new Array<number>(n).fill(0);
    const draws = 10_000;
    let repeats = 0;
    for (let d = 0; d < draws; d++) {
      const s = sampler.sample(Int32Array.of(0), Float64Array.of(9.5), rng); // events 0..9 visible
      const picked = Array.from(s.slots[1]!.nodes);
      if (new Set(picked).size !== 3) repeats++;
      for (const p of picked) counts[p]!++;
    }
    expect(repeats).toBe(0);
    for (let i = 0; i < 10; i++) expect(counts[i]! / draws).toBeCloseTo(0.3, 1);
    expect(counts.slice(10).every((c) => c === 0)).toBe(true);
  });

  it('uniform: the same seed gives the same sample, another seed another one', () => {
    const n = 1000;
    const g2 = handGraph(new Int32Array(n), Float64Array.from({ length: n }, (_, i) => i), 1);
    const plan = buildPlan(g2.graph, 'users', [8]);
    const sampler = new TemporalSampler(g2.graph, plan, 'uniform');
    const take = (seed: number) => Array.from(sampler.sample(Int32Array.of(0, 0), Float64Array.of(1e9, 500), new Rng(seed)).slots[1]!.nodes);
    expect(take(1)).toEqual(take(1));
    expect(take(1)).not.toEqual(take(2));
  });

  it('two hops: a foreign-key hop has one neighbour, positions under an invalid parent stay invalid', () => {
    const plan = buildPlan(g.graph, 'users', [2, 4]);
    expect(plan.slots.map((s) => [s.type, s.edge, s.fanout, s.width])).toEqual([
      ['users', null, 1, 1],
      ['events', REV_EDGE, 2, 2],
      ['users', FK_EDGE, 1, 2],
    ]);
    const s = new TemporalSampler(g.graph, plan, 'last').sample(Int32Array.of(0, 1), Float64Array.of(35, 15), null);
    expect(Array.from(s.slots[1]!.nodes)).toEqual([2, 0, 0, 0]);
    expect(Array.from(s.slots[1]!.valid)).toEqual([1, 1, 0, 0]);
    expect(Array.from(s.slots[2]!.nodes)).toEqual([0, 0, 0, 0]);
    expect(Array.from(s.slots[2]!.valid)).toEqual([1, 1, 0, 0]);
  });

  it('a foreign-key parent with a time after the anchor is not sampled', () => {
    const g3 = handGraph(owner, time, 2, { userTime: Float64Array.of(0, 45) });
    const plan = buildPlan(g3.graph, 'events', [1]);
    const s = new TemporalSampler(g3.graph, plan, 'last').sample(Int32Array.of(0, 1, 3, 5), Float64Array.of(10, 20, 40, 60), null);
    // user 1 only exists from t = 45
    expect(Array.from(s.slots[1]!.valid)).toEqual([1, 0, 0, 1]);
  });

  it('upperBound finds the first neighbour after t, counting ties as visible', () => {
    const t = Float64Array.of(1, 2, 2, 2, 3);
    const idx = Int32Array.of(0, 1, 2, 3, 4);
    expect([0, 1, 2, 2.5, 3, 9].map((x) => upperBound(idx, t, 0, 5, x))).toEqual([0, 1, 4, 4, 5, 5]);
    expect(upperBound(idx, t, 2, 2, 9)).toBe(2);
  });
});
