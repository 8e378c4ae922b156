/**
 * The baselines every ranking run reports (as RelBench does for rel-hm's user-item-purchase), each a top-k
 * list per user at an anchor, read from the graph's time-sorted CSR (nothing after the anchor):
 *
 * - `popularity`: the k items with the most interactions in (anchor − window, anchor], for everyone;
 * - `repeat`: the user's own past items, most often bought first, then most recent (a list shorter than
 *   k when the user bought fewer items; the rest are misses);
 * - `cooccurrence`: item-to-item co-occurrence (item-kNN): two items co-occur when one user bought both
 *   among their last BASKET distinct items before the anchor; a user's score for item i is the sum over
 *   their own last BASKET items j of count(j, i), over each j's NEIGHBOURS most frequent partners.
 */
import type { Graph } from '../graph/graph.js';
import { upperBound } from '../model/sampler.js';
import { topK, type RankingSpec } from '../model/recommender.js';

export const RANKING_BASELINES = ['popularity', 'repeat', 'cooccurrence'] as const;
export type RankingBaseline = (typeof RANKING_BASELINES)[number];

/** distinct recent items per user that define co-occurrence */
const BASKET = 10;
/** partners kept per item (the usual item-kNN truncation; keeps scoring O(basket × neighbours)) */
const NEIGHBOURS = 50;

interface Csr {
  userPtr: Int32Array;
  userIdx: Int32Array;
  itemOf: Int32Array;
  time: Float64Array;
}

function csr(graph: Graph, rs: RankingSpec): Csr {
  const ue = graph.edges.find((e) => e.name === rs.user_edge)!;
  const fk = graph.edges.find((e) => e.name === rs.item_fk_edge)!;
  return { userPtr: ue.indptr!, userIdx: ue.indices!, itemOf: fk.parent!, time: graph.tables[rs.fact_table]!.time! };
}

/** The k most popular items in (anchor − window, anchor]. */
export function popularityTopK(pop: Float32Array, k: number): Int32Array {
  const ids = new Int32Array(k);
  topK(pop, 1, pop.length, k, ids, new Float32Array(k));
  // An item nobody bought in the window is no recommendation.
  for (let j = 0; j < k; j++) if (ids[j]! >= 0 && pop[ids[j]!]! <= 0) ids[j] = -1;
  return ids;
}

/** The same list for every user. */
export function repeatList(list: Int32Array, users: number): Int32Array {
  const out = new Int32Array(users * list.length);
  for (let u = 0; u < users; u++) out.set(list, u * list.length);
  return out;
}

/** Each user's own past items (all before the anchor), by count, then recency. */
export function repeatTopK(graph: Graph, rs: RankingSpec, users: Int32Array, anchor: number, k: number): Int32Array {
  const g = csr(graph, rs);
  const out = new Int32Array(users.length * k).fill(-1);
  const count = new Map<number, number>();
  const last = new Map<number, number>();
  for (let u = 0; u < users.length; u++) {
    const start = g.userPtr[users[u]!]!;
    const end = upperBound(g.userIdx, g.time, start, g.userPtr[users[u]! + 1]!, anchor);
    count.clear();
    last.clear();
    for (let j = end - 1; j >= start; j--) {
      const item = g.itemOf[g.userIdx[j]!]!;
      if (item < 0) continue;
      count.set(item, (count.get(item) ?? 0) + 1);
      if (!last.has(item)) last.set(item, end - j);
    }
    const ranked = [...count.keys()].sort((a, b) => count.get(b)! - count.get(a)! || last.get(a)! - last.get(b)! || a - b);
    for (let j = 0; j < Math.min(k, ranked.length); j++) out[u * k + j] = ranked[j]!;
  }
  return out;
}

/** A user's last BASKET distinct items before the anchor, most recent first. */
function recentItems(g: Csr, user: number, anchor: number): number[] {
  const start = g.userPtr[user]!;
  const end = upperBound(g.userIdx, g.time, start, g.userPtr[user + 1]!, anchor);
  const out: number[] = [];
  for (let j = end - 1; j >= start && out.length < BASKET; j--) {
    const item = g.itemOf[g.userIdx[j]!]!;
    if (item >= 0 && !out.includes(item)) out.push(item);
  }
  return out;
}

/** Item-kNN over co-occurrence counts at the anchor (see the file comment). */
export function cooccurrenceTopK(graph: Graph, rs: RankingSpec, users: Int32Array, anchor: number, k: number): Int32Array {
  const g = csr(graph, rs);
  const nItems = graph.tables[rs.item_table]!.rows;
  const nUsers = g.userPtr.length - 1;
  // Pair counts keyed i·N + j (both directions), over every user's recent basket.
  const pairs = new Map<number, number>();
  for (let u = 0; u < nUsers; u++) {
    const items = recentItems(g, u, anchor);
    for (let a = 0; a < items.length; a++) {
      for (let b = 0; b < items.length; b++) {
        if (a === b) continue;
        const key = items[a]! * nItems + items[b]!;
        pairs.set(key, (pairs.get(key) ?? 0) + 1);
      }
    }
  }
  // Per item, its NEIGHBOURS most frequent partners.
  const partners: { item: number; n: number }[][] = Array.from({ length: nItems }, () => []);
  for (const [key, n] of pairs) partners[Math.floor(key / nItems)]!.push({ item: key % nItems, n });
  for (let i = 0; i < nItems; i++) {
    const p = partners[i]!;
    if (p.length > NEIGHBOURS) partners[i] = p.sort((a, b) => b.n - a.n || a.item - b.item).slice(0, NEIGHBOURS);
  }
  const out = new Int32Array(users.length * k).fill(-1);
  const score = new Float32Array(nItems);
  const touched: number[] = [];
  const ids = new Int32Array(k);
  const vals = new Float32Array(k);
  for (let u = 0; u < users.length; u++) {
    for (const j of recentItems(g, users[u]!, anchor)) {
      for (const { item, n } of partners[j]!) {
        if (score[item] === 0) touched.push(item);
        score[item] += n;
      }
    }
    if (touched.length > 0) {
      const cand = Float32Array.from(touched, (i) => score[i]!);
      topK(cand, 1, cand.length, k, ids, vals);
      for (let j = 0; j < k; j++) out[u * k + j] = ids[j]! >= 0 ? touched[ids[j]!]! : -1;
    }
    for (const i of touched) score[i] = 0;
    touched.length = 0;
  }
  return out;
}
