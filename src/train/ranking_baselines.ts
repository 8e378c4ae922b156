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
import { reverseCsr } from '../graph/csr.js';
import type { Graph } from '../graph/graph.js';
import { upperBound } from '../model/sampler.js';
import { topK, type RankingSpec } from '../model/context_gnn.js';
import type { InteractionCsr } from './ranking_affinity.js';

/** every heuristic a ranking run reports (train/ranking_heuristics.ts makes their choices on validation) */
export const RANKING_BASELINES = ['popularity', 'repeat', 'affinity', 'cooccurrence', 'repeat_affinity'] as const;
export type RankingBaseline = (typeof RANKING_BASELINES)[number];

/** distinct recent items per user that define co-occurrence */
const BASKET = 10;
/** partners kept per item (the usual item-kNN truncation; keeps scoring O(basket × neighbours)) */
const NEIGHBOURS = 50;

type Csr = InteractionCsr;

/** The interaction table's CSR by user, each row's item and time (the graph's own arrays, no copy). */
export function interactionCsr(graph: Graph, rs: RankingSpec): InteractionCsr {
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
  const g = interactionCsr(graph, rs);
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

/**
 * Item-kNN over co-occurrence counts at the anchor (see the file comment). The counts are never held as
 * pairs: every user's basket goes into a CSR, items get the list of the baskets holding them (`reverseCsr`),
 * and each item's partners are counted in one dense pass over its baskets, keeping its NEIGHBOURS most
 * frequent (ties: lower item first). A Map of pairs passed V8's 2^24 entries at `large` (1.37M baskets).
 * The work is Σ basket² ≈ 100 per user. `scoresOut` ([users × k]) receives each listed item's summed count.
 */
export function cooccurrenceTopK(graph: Graph, rs: RankingSpec, users: Int32Array, anchor: number, k: number, scoresOut?: Float32Array): Int32Array {
  const g = interactionCsr(graph, rs);
  const nItems = graph.tables[rs.item_table]!.rows;
  const nUsers = g.userPtr.length - 1;
  // Baskets (CSR over users) and, per item, the baskets that hold it.
  const basketPtr = new Int32Array(nUsers + 1);
  let basketItems = new Int32Array(Math.max(16, Math.min(nUsers * BASKET, 1 << 20)));
  for (let u = 0; u < nUsers; u++) {
    const items = recentItems(g, u, anchor);
    const at = basketPtr[u]!;
    if (at + items.length > basketItems.length) {
      const grown = new Int32Array(Math.max(basketItems.length * 2, at + items.length));
      grown.set(basketItems);
      basketItems = grown;
    }
    for (let a = 0; a < items.length; a++) basketItems[at + a] = items[a]!;
    basketPtr[u + 1] = at + items.length;
  }
  // Per item, the basket entries holding it (graph/csr.ts's counting sort), and each entry's user.
  const entries = basketPtr[nUsers]!;
  const holders = reverseCsr(basketItems.subarray(0, entries), nItems);
  const userOf = new Int32Array(entries);
  for (let u = 0; u < nUsers; u++) userOf.fill(u, basketPtr[u]!, basketPtr[u + 1]!);
  // Per item, its NEIGHBOURS most frequent partners (CSR).
  const partnerPtr = new Int32Array(nItems + 1);
  const partnerItem: number[] = [];
  const partnerN: number[] = [];
  const count = new Int32Array(nItems);
  const seen: number[] = [];
  for (let i = 0; i < nItems; i++) {
    for (let h = holders.indptr[i]!; h < holders.indptr[i + 1]!; h++) {
      const u = userOf[holders.indices[h]!]!;
      for (let b = basketPtr[u]!; b < basketPtr[u + 1]!; b++) {
        const j = basketItems[b]!;
        if (j === i) continue;
        if (count[j] === 0) seen.push(j);
        count[j]!++;
      }
    }
    seen.sort((a, b) => count[b]! - count[a]! || a - b);
    for (let t = 0; t < Math.min(NEIGHBOURS, seen.length); t++) {
      partnerItem.push(seen[t]!);
      partnerN.push(count[seen[t]!]!);
    }
    partnerPtr[i + 1] = partnerItem.length;
    for (const j of seen) count[j] = 0;
    seen.length = 0;
  }
  const out = new Int32Array(users.length * k).fill(-1);
  const score = new Float32Array(nItems);
  const touched: number[] = [];
  const ids = new Int32Array(k);
  const vals = new Float32Array(k);
  for (let u = 0; u < users.length; u++) {
    for (const j of recentItems(g, users[u]!, anchor)) {
      for (let p = partnerPtr[j]!; p < partnerPtr[j + 1]!; p++) {
        const item = partnerItem[p]!;
        if (score[item] === 0) touched.push(item);
        score[item]! += partnerN[p]!;
      }
    }
    if (touched.length > 0) {
      const cand = Float32Array.from(touched, (i) => score[i]!);
      topK(cand, 1, cand.length, k, ids, vals);
      for (let j = 0; j < k; j++) {
        out[u * k + j] = ids[j]! >= 0 ? touched[ids[j]!]! : -1;
        if (scoresOut) scoresOut[u * k + j] = ids[j]! >= 0 ? vals[j]! : Number.NaN;
      }
    }
    for (const i of touched) score[i] = 0;
    touched.length = 0;
  }
  return out;
}
