/**
 * The ranking heuristics' pure parts on a hand-built interaction CSR:
 *
 *   items 0..5, one categorical column (codes): 0,1,2 → value 2 ("shoes"); 3,4,5 → value 3 ("hats")
 *   user 0: t=1 item 0, t=2 item 1, t=3 item 3      user 1: t=1 item 4, t=5 item 4
 *   user 2: nothing
 */
import { describe, expect, it } from 'vitest';
import { affinityShares, blend, flagAttribute, repeatShares, seenItems, singleValued, topOf, unseen, valueLists, type InteractionCsr } from '../../src/train/ranking_affinity.js';
import { decideExcludeSeen, popularityWindows, rankedByCount, repeatRate } from '../../src/train/ranking_heuristics.js';
import { dropSeen } from '../../src/predict/top_k.js';
import type { Examples } from '../../src/task/task_spec.js';

// rows: 0..2 user 0, 3..4 user 1
const g: InteractionCsr = {
  userPtr: Int32Array.from([0, 3, 5, 5]),
  userIdx: Int32Array.from([0, 1, 2, 3, 4]),
  itemOf: Int32Array.from([0, 1, 3, 4, 4]),
  time: Float64Array.from([1, 2, 3, 1, 5]),
};
const codes = Int32Array.from([2, 2, 2, 3, 3, 3]);
const attr = singleValued('section', codes);
// window counts: item 2 the most bought shoe, item 5 the most bought hat
const counts = Float32Array.from([1, 2, 5, 0, 1, 3]);

describe('seen items and repeat shares', () => {
  it('counts only interactions at or before the anchor', () => {
    expect([...seenItems(g, 0, 2)].sort()).toEqual([0, 1]);
    expect([...seenItems(g, 1, 4)]).toEqual([4]);
    expect(seenItems(g, 2, 10).size).toBe(0);
  });
  it('gives each past item its share of the history', () => {
    expect(Object.fromEntries(repeatShares(g, 1, 10))).toEqual({ 4: 1 });
    const s = repeatShares(g, 0, 10);
    expect(s.get(0)).toBeCloseTo(1 / 3);
    expect(s.get(3)).toBeCloseTo(1 / 3);
  });
});

describe('attribute affinity', () => {
  const lists = valueLists(attr, counts, 10);
  it('lists each value\'s items by window count with their share within the value', () => {
    expect([...lists.items.subarray(lists.ptr[2]!, lists.ptr[3]!)]).toEqual([2, 1, 0]);
    expect([...lists.share.subarray(lists.ptr[2]!, lists.ptr[3]!)].map((x) => +x.toFixed(4))).toEqual([0.625, 0.25, 0.125]);
    // item 3 was never bought in the window: not listed
    expect([...lists.items.subarray(lists.ptr[3]!, lists.ptr[4]!)]).toEqual([5, 4]);
  });
  it('scores P(value | user) · P(item | value)', () => {
    // user 0: 2/3 shoes, 1/3 hats
    const s = affinityShares(g, attr, lists, 0, 10);
    expect(s.get(2)).toBeCloseTo((2 / 3) * 0.625);
    expect(s.get(5)).toBeCloseTo((1 / 3) * 0.75);
    // the scores of one user sum to 1 over the listed items
    expect([...s.values()].reduce((a, b) => a + b, 0)).toBeCloseTo(1);
    expect(affinityShares(g, attr, lists, 2, 10).size).toBe(0);
  });
  it('cuts each value\'s list at the depth', () => {
    const short = valueLists(attr, counts, 1);
    expect([...short.items]).toEqual([2, 5]);
  });
});

describe('multi-valued attributes (flag columns)', () => {
  // genre flags: A on items 0, 1; B on items 1, 2; a constant column and a 3-valued one are no flags
  const cols = [
    { name: 'A', values: Float32Array.from([1, 1, 0, 0, 0, 0]) },
    { name: 'B', values: Float32Array.from([0, 1, 1, 0, 0, 0]) },
    { name: 'all', values: Float32Array.from([1, 1, 1, 1, 1, 1]) },
    { name: 'year', values: Float32Array.from([1990, 1991, 1992, 1990, 1991, 1992]) },
  ];
  const flags = flagAttribute(cols)!;
  it('takes the 0/1 columns together, each item with the flags it has on', () => {
    expect(flags.name).toBe('flags(A,B)');
    expect([...flags.ptr]).toEqual([0, 1, 3, 4, 4, 4, 4]);
    expect([...flags.values]).toEqual([0, 0, 1, 1]);
    expect(flagAttribute(cols.slice(0, 1))).toBeNull();
  });
  it('spreads an interaction over its item\'s values and sums an item\'s values', () => {
    const lists = valueLists(flags, counts, 10);
    // user 0 bought 0 (A), 1 (A, B), 3 (no flag): P(A) = 1.5 / 2, P(B) = 0.5 / 2
    // P(1 | A) = 2 / 3, P(1 | B) = 2 / 7
    const s = affinityShares(g, flags, lists, 0, 10);
    expect(s.get(1)).toBeCloseTo(0.75 * (2 / 3) + 0.25 * (2 / 7));
    expect(s.get(2)).toBeCloseTo(0.25 * (5 / 7));
  });
});

describe('top lists', () => {
  it('ranks by score, skips excluded items, then fills from the global list', () => {
    const scores = new Map([[2, 0.4], [1, 0.2], [5, 0.25]]);
    expect([...topOf(scores, 4, null, Int32Array.from([2, 5, 4]))]).toEqual([2, 5, 1, 4]);
    expect([...topOf(scores, 4, new Set([2, 4]), Int32Array.from([2, 5, 4, 0]))]).toEqual([5, 1, 0, -1]);
  });
  it('blends two distributions', () => {
    const b = blend(new Map([[1, 1]]), new Map([[1, 0.5], [2, 0.5]]), 0.25);
    expect(b.get(1)).toBeCloseTo(0.25 + 0.375);
    expect(b.get(2)).toBeCloseTo(0.375);
  });
  it('ranks by count, dropping items never counted', () => {
    expect([...rankedByCount(counts, 10)]).toEqual([2, 5, 1, 0, 4]);
    expect([...rankedByCount(counts, 2)]).toEqual([2, 5]);
  });
  it('drops seen items from the model\'s wide list', () => {
    expect([...unseen(Int32Array.from([3, 0, 4, 1, -1]), new Set([0, 1]), 3)]).toEqual([3, 4, -1]);
  });
  it('predict keeps each user\'s first k unseen items with their own scores', () => {
    // two users, wide lists of 4, k = 2; user 7 has seen item 3, user 8 items 5 and 6
    const r = { ids: Int32Array.from([3, 1, 2, 0, 5, 6, -1, -1]), scores: Float32Array.from([9, 8, 7, 6, 5, 4, Number.NaN, Number.NaN]) };
    const seen = new Map([[7, new Set([3])], [8, new Set([5, 6])]]);
    const out = dropSeen(r, Int32Array.from([7, 8]), (u) => seen.get(u)!, 4, 2);
    expect([...out.ids]).toEqual([1, 2, -1, -1]);
    expect([...out.scores.subarray(0, 2)]).toEqual([8, 7]);
    expect(Number.isNaN(out.scores[2]!)).toBe(true);
  });
});

describe('seen-items decision', () => {
  const ex = (nodes: number[], anchors: number[], labels: number[][]): Examples => {
    const offsets = [0];
    for (const l of labels) offsets.push(offsets.at(-1)! + l.length);
    return { nodes: Int32Array.from(nodes), anchors: Float64Array.from(anchors), labels: Float32Array.from(labels.map((l) => l.length)), label_items: { offsets: Int32Array.from(offsets), items: Int32Array.from(labels.flat()) } };
  };
  it('measures the share of label items already seen before the anchor', () => {
    // user 0 at 3: buys 0 again (seen) and 5 (new); user 1 at 2: buys 4 (seen at t=1)
    expect(repeatRate(g, ex([0, 1], [3, 2], [[0, 5], [4]]))).toBeCloseTo(2 / 3);
    // user 1 at 0.5 has no history yet
    expect(repeatRate(g, ex([1], [0.5], [[4]]))).toBe(0);
  });
  it('excludes seen items under auto only when repeats are rare', () => {
    expect(decideExcludeSeen('auto', 0).exclude).toBe(true);
    expect(decideExcludeSeen('auto', 0.2).exclude).toBe(false);
    expect(decideExcludeSeen(false, 0).exclude).toBe(false);
    expect(decideExcludeSeen(true, 0.5)).toMatchObject({ setting: 'true', exclude: true });
  });
});

describe('windows and the served choice', () => {
  it('offers the task window beside 7/30/90 days and all time', () => {
    expect(popularityWindows(7 * 86400).map(([n]) => n)).toEqual(['7d', '30d', '90d', 'all']);
    expect(popularityWindows(14 * 86400).map(([n]) => n)).toEqual(['14d', '7d', '30d', '90d', 'all']);
  });
});
