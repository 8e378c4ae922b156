/**
 * The re-ranker's pure parts: the candidate union of several top-N lists, the features of (user, item) at an
 * anchor (worked out by hand, and unchanged by anything after the anchor), the choice between the model, the
 * re-ranker and the best heuristic, the top-k by the ranker's score, and the bootstrap interval of MAP@k.
 *
 * Interactions (time in days, anchor = day 10; items 0..3, one attribute: items 0, 1 → value 0; 2, 3 → value 1):
 *   user 0: d1 item 0, d4 item 0, d8 item 2      user 1: d9 item 3
 */
import { describe, expect, it } from 'vitest';
import { GbdtModel } from '../../src/model/gbdt/index.js';
import { singleValued, type InteractionCsr } from '../../src/train/ranking_affinity.js';
import { mapInterval, rerankTopK, splitValidation } from '../../src/train/rerank.js';
import { subset, subsetLists } from '../../src/train/ranking_intervals.js';
import { candidateUnion, type SourceLists } from '../../src/train/rerank_candidates.js';
import { featureNames, rerankFeatures } from '../../src/train/rerank_features.js';
import type { Examples } from '../../src/task/task_spec.js';

const DAY = 86_400;
const ANCHOR = 10 * DAY;
const attr = singleValued('colour', Int32Array.from([0, 0, 1, 1]));

/** An interaction CSR from (user, item, day) rows, time-sorted per user. */
function csr(rows: [number, number, number][], users = 2): InteractionCsr {
  const sorted = rows.map((r, i) => ({ u: r[0], item: r[1], t: r[2] * DAY, i })).sort((a, b) => a.u - b.u || a.t - b.t);
  const userPtr = new Int32Array(users + 1);
  for (const r of sorted) userPtr[r.u + 1]!++;
  for (let u = 0; u < users; u++) userPtr[u + 1]! += userPtr[u]!;
  return {
    userPtr,
    userIdx: Int32Array.from(sorted, (r) => r.i),
    itemOf: Int32Array.from(rows, (r) => r[1]),
    time: Float64Array.from(rows, (r) => r[2] * DAY),
  };
}

/** Interactions per item in (anchor − w, anchor]: the rule the graph's windowCounts implements. */
function countsOf(g: InteractionCsr, items: number, anchor: number) {
  return (w: number): Float32Array => {
    const c = new Float32Array(items);
    for (let r = 0; r < g.itemOf.length; r++) if (g.time[r]! <= anchor && g.time[r]! > anchor - w) c[g.itemOf[r]!]!++;
    return c;
  };
}

const BASE: [number, number, number][] = [
  [0, 0, 1],
  [0, 0, 4],
  [0, 2, 8],
  [1, 3, 9],
];

const src = (name: string, width: number, lists: number[][]): SourceLists => ({
  name,
  width,
  ids: Int32Array.from(lists.flatMap((l) => [...l, ...Array(width - l.length).fill(-1)])),
  scores: Float32Array.from(lists.flatMap((l) => [...l.map((i) => 10 - i), ...Array(width - l.length).fill(Number.NaN)])),
});

describe('candidate union', () => {
  const a = src('a', 3, [[5, 6, 7], [1]]);
  const b = src('b', 2, [[6, 8], []]);

  it('takes the sources rank by rank, once per item, and keeps each source\'s rank and score', () => {
    const c = candidateUnion([a, b], 2, 10);
    expect(c.sources).toEqual(['a', 'b']);
    expect([...c.ptr]).toEqual([0, 4, 5]);
    // rank 0: a's 5, b's 6; rank 1: a's 6 (already in), b's 8; rank 2: a's 7
    expect([...c.items]).toEqual([5, 6, 8, 7, 1]);
    // item 6: rank 1 in a, rank 0 in b
    expect([...c.ranks.subarray(2, 4)]).toEqual([1, 0]);
    expect([...c.scores.subarray(2, 4)]).toEqual([4, 4]);
    // item 8 is not in a
    expect(c.ranks[4]).toBe(-1);
    expect(c.scores[4]).toBeNaN();
  });
  it('stops at the cap with every source\'s best first, and skips excluded items', () => {
    expect([...candidateUnion([a, b], 2, 2).items]).toEqual([5, 6, 1]);
    const c = candidateUnion([a, b], 2, 10, (j) => (j === 0 ? new Set([6]) : null));
    expect([...c.items]).toEqual([5, 8, 7, 1]);
  });
});

describe('re-ranker features', () => {
  const names = featureNames([attr], ['pop']);
  const at = (rows: [number, number, number][], users: number[], items: number[][]) => {
    const g = csr(rows);
    const cand = candidateUnion([src('pop', Math.max(...items.map((l) => l.length)), items)], users.length, 10);
    const cols = rerankFeatures({ g, columns: [attr], anchor: ANCHOR, countsAt: countsOf(g, 4, ANCHOR) }, Int32Array.from(users), cand);
    return { cand, get: (name: string, row: number) => cols[names.indexOf(name)]![row]! };
  };

  it('are worked out from the history before the anchor', () => {
    // user 0's candidates: item 0 (bought twice, last on day 4), item 3 (never)
    const f = at(BASE, [0], [[0, 3]]);
    expect(f.get('item_pop_7d', 0)).toBe(1); // day 4 is in (3, 10]
    expect(f.get('item_pop_all', 0)).toBe(2);
    expect(f.get('item_pop_trend_7d', 0)).toBe(1); // (1 + 1) / (1 + 1): day 1 is in the 7 days before (3, 10]
    expect(f.get('user_item_count', 0)).toBe(2);
    expect(f.get('user_item_share', 0)).toBeCloseTo(2 / 3);
    expect(f.get('user_item_days_since', 0)).toBe(6);
    expect(f.get('user_item_days_since', 1)).toBeNaN();
    expect(f.get('user_events', 1)).toBe(3);
    expect(f.get('user_distinct_items', 1)).toBe(2);
    expect(f.get('user_days_since_last', 1)).toBe(2);
    // item 3 has colour 1, the colour of one of user 0's three purchases
    expect(f.get('affinity_colour', 1)).toBeCloseTo(1 / 3);
    expect(f.get('affinity_colour', 0)).toBeCloseTo(2 / 3);
    expect(f.get('pop_rank', 1)).toBe(1);
    expect(f.get('pop_score', 1)).toBe(7);
  });

  it('hold the repeat rhythm, the recency-weighted taste and the item\'s share of its value', () => {
    // user 0's candidates: item 0 (days 1 and 4: a 3-day gap, 6 days since), item 3 (colour 1, bought by user 1 on day 9)
    const f = at(BASE, [0], [[0, 3]]);
    expect(f.get('user_item_mean_gap_days', 0)).toBe(3);
    expect(f.get('user_item_mean_gap_days', 1)).toBeNaN();
    expect(f.get('user_item_overdue', 0)).toBeCloseTo(6 / 4);
    expect(f.get('user_repeat_share', 0)).toBeCloseTo(1 / 3);
    // colour 0 bought on days 1 and 4, colour 1 on day 8 (half-life 30 days)
    const w = (d: number) => 0.5 ** ((10 - d) / 30);
    expect(f.get('affinity_decayed_colour', 0)).toBeCloseTo((w(1) + w(4)) / (w(1) + w(4) + w(8)), 5);
    expect(f.get('affinity_decayed_colour', 1)).toBeCloseTo(w(8) / (w(1) + w(4) + w(8)), 5);
    // last 30 days: colour 0 has items 0 (2 interactions) and 1 (none); colour 1 has item 2 (1) and item 3 (1)
    expect(f.get('value_item_share_colour', 0)).toBe(1);
    expect(f.get('value_item_share_colour', 1)).toBeCloseTo(0.5);
    expect(f.get('affinity_pop_colour', 1)).toBeCloseTo(0.5 * f.get('affinity_decayed_colour', 1), 5);
    // 7-day count 1 against a week of the 30-day count 2
    expect(f.get('item_pop_trend_30d', 0)).toBeCloseTo(2 / (2 * 7 / 30 + 1), 5);
  });

  it('do not change when interactions after the anchor are added, and do when one before it moves', () => {
    const before = at(BASE, [0, 1], [[0, 2, 3], [3, 1]]);
    const later: [number, number, number][] = [...BASE, [0, 3, 10.5], [1, 1, 11], [0, 0, 12], [1, 3, 10 + 1e-6]];
    const after = at(later, [0, 1], [[0, 2, 3], [3, 1]]);
    let changed = 0;
    for (const name of names) {
      for (let r = 0; r < before.cand.items.length; r++) {
        expect(Object.is(after.get(name, r), before.get(name, r)) || after.get(name, r) === before.get(name, r), `${name} row ${r}`).toBe(true);
      }
    }
    // the same check can fail: user 1's purchase moved from day 9 to day 2 changes their recency
    const moved = at([...BASE.slice(0, 3), [1, 3, 2]], [0, 1], [[0, 2, 3], [3, 1]]);
    for (const name of names) for (let r = 0; r < before.cand.items.length; r++) if (!Object.is(moved.get(name, r), before.get(name, r))) changed++;
    expect(changed).toBeGreaterThan(0);
  });
});

describe('top k by the ranker and the interval of MAP@k', () => {
  it('orders each user\'s candidates by the trees\' score', () => {
    // relevance grows with the feature: the ranker learns to put larger values first
    const x = Array.from({ length: 400 }, (_, i) => (i * 7919) % 400);
    const gbdt = GbdtModel.fit({ train: { rows: 400, columns: [x] }, y: x.map((v) => (v >= 380 ? 2 : v >= 150 ? 1 : 0)), groups: Int32Array.from({ length: 20 }, () => 20) }, { loss: 'lambdarank', max_iter: 20, min_samples_leaf: 5 });
    const cand = { sources: [], ptr: Int32Array.from([0, 3, 4]), items: Int32Array.from([7, 8, 9, 4]), ranks: new Int32Array(0), scores: new Float32Array(0) };
    const top = rerankTopK(gbdt, cand, [Float32Array.from([1, 399, 200, 5])], 2, 2);
    expect([...top.ids]).toEqual([8, 9, 4, -1]);
    expect(top.scores[0]!).toBeGreaterThan(top.scores[1]!);
    expect(top.scores[3]).toBeNaN();
  });
  it('brackets the mean AP and collapses when every user scores the same', () => {
    const ex = (n: number): Examples => ({ nodes: new Int32Array(n), anchors: new Float64Array(n), labels: new Float32Array(n).fill(1), label_items: { offsets: Int32Array.from({ length: n + 1 }, (_, i) => i), items: new Int32Array(n).fill(3) } });
    const hitHalf = Int32Array.from({ length: 100 }, (_, e) => (e % 2 === 0 ? 3 : 5));
    const [lo, hi] = mapInterval(ex(100), hitHalf, 1, 0);
    expect(lo).toBeLessThan(0.5);
    expect(hi).toBeGreaterThan(0.5);
    expect(hi - lo).toBeLessThan(0.3);
    expect(mapInterval(ex(50), new Int32Array(50).fill(3), 1, 0)).toEqual([1, 1]);
  });
});

describe('the validation split of the re-ranker', () => {
  const ex = (anchors: number[], users: number): Examples => {
    const n = anchors.length * users;
    return {
      nodes: Int32Array.from({ length: n }, (_, e) => e % users),
      anchors: Float64Array.from({ length: n }, (_, e) => anchors[Math.floor(e / users)]!),
      labels: new Float32Array(n).fill(1),
      label_items: { offsets: Int32Array.from({ length: n + 1 }, (_, i) => i), items: Int32Array.from({ length: n }, (_, e) => e) },
    };
  };
  const check = (s: ReturnType<typeof splitValidation>, n: number) => {
    const all = [...s.fit, ...s.stop, ...s.judge].sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: n }, (_, i) => i));
  };

  it('judges on the later anchors, fitting and stopping on the earlier ones', () => {
    const v = ex([1, 2, 3, 4], 400);
    const s = splitValidation(v);
    check(s, 1600);
    expect(s.by).toBe('anchor');
    expect(new Set(s.judge.map((e) => v.anchors[e]))).toEqual(new Set([3, 4]));
    expect(new Set([...s.fit, ...s.stop].map((e) => v.anchors[e]))).toEqual(new Set([1, 2]));
    // a quarter of the earlier users stop the boosting (by a hash of their id)
    expect(s.stop.length / 800).toBeGreaterThan(0.15);
    expect(s.stop.length / 800).toBeLessThan(0.35);
  });
  it('shares one anchor out by user: half judge, the rest fit and stop, no user in two parts', () => {
    const v = ex([7], 2000);
    const s = splitValidation(v);
    check(s, 2000);
    expect(s.by).toBe('user');
    expect(s.judge.length / 2000).toBeGreaterThan(0.4);
    expect(s.judge.length / 2000).toBeLessThan(0.6);
    expect(s.fit.length).toBeGreaterThan(s.stop.length);
    const judged = new Set(s.judge.map((e) => v.nodes[e]));
    for (const e of [...s.fit, ...s.stop]) expect(judged.has(v.nodes[e]!)).toBe(false);
  });
  it('subsets examples and lists in the order given', () => {
    const v = ex([1], 5);
    const sub = subset(v, [3, 1]);
    expect([...sub.nodes]).toEqual([3, 1]);
    expect([...sub.label_items!.offsets]).toEqual([0, 1, 2]);
    expect([...sub.label_items!.items]).toEqual([3, 1]);
    expect([...subsetLists(Int32Array.from([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]), [3, 1], 2)]).toEqual([3, 3, 1, 1]);
  });
});
