/**
 * Top-k lists and their quality against the label lists (RelBench's definitions), and the two baselines
 * every recommender is compared with: global popularity in the window before the anchor, and the user's
 * own past items.
 *
 *   AP@k   = Σ_{i ≤ k} P@i · rel_i / min(|P|, k)
 *   recall@k = |top-k ∩ P| / |P|
 *   NDCG@k = Σ_{i ≤ k} rel_i / log₂(i + 1)  ÷  Σ_{i ≤ min(|P|, k)} 1 / log₂(i + 1)
 */
import type { Graph } from '../../graph/graph.js';
import { round } from '../../core/number.js';
import type { RankingTarget } from '../../task/ranking_target.js';
import { firstAfter, fkParents, type RankingExamples } from './examples.js';

export interface RankingMetrics {
  map: number;
  recall: number;
  ndcg: number;
  examples: number;
}

/** Indices of the k largest of `scores` (ties: lower index first), best first. −1 fills when fewer exist. */
export function topK(scores: Float32Array, k: number, out: Int32Array = new Int32Array(k), offset = 0, allowed?: (i: number) => boolean): Int32Array {
  const best = new Float64Array(k).fill(-Infinity);
  const idx = new Int32Array(k).fill(-1);
  for (let i = 0; i < scores.length; i++) {
    const s = scores[i]!;
    if (s <= best[k - 1]! || (allowed && !allowed(i))) continue;
    let j = k - 1;
    while (j > 0 && best[j - 1]! < s) {
      best[j] = best[j - 1]!;
      idx[j] = idx[j - 1]!;
      j--;
    }
    best[j] = s;
    idx[j] = i;
  }
  out.set(idx, offset);
  return out;
}

/** Metrics of top-k lists `lists` [rows × k] (item ids, −1 = empty) for examples `rows` of `ex`. */
export function rankingMetrics(ex: RankingExamples, rows: ArrayLike<number>, lists: Int32Array, k: number): RankingMetrics {
  let map = 0;
  let recall = 0;
  let ndcg = 0;
  const n = rows.length;
  for (let r = 0; r < n; r++) {
    const e = rows[r]!;
    const a = ex.ptr[e]!;
    const b = ex.ptr[e + 1]!;
    const pos = new Set<number>();
    for (let j = a; j < b; j++) pos.add(ex.items[j]!);
    let hits = 0;
    let ap = 0;
    let dcg = 0;
    for (let i = 0; i < k; i++) {
      const it = lists[r * k + i]!;
      if (it >= 0 && pos.has(it)) {
        hits++;
        ap += hits / (i + 1);
        dcg += 1 / Math.log2(i + 2);
      }
    }
    let idcg = 0;
    for (let i = 0; i < Math.min(pos.size, k); i++) idcg += 1 / Math.log2(i + 2);
    map += ap / Math.min(pos.size, k);
    recall += hits / pos.size;
    ndcg += dcg / idcg;
  }
  return { map: round(map / n, 5), recall: round(recall / n, 5), ndcg: round(ndcg / n, 5), examples: n };
}

/** Popularity: the k items with the most fact rows in (t − window, t], the same list for every user at t. */
export function popularityLists(graph: Graph, target: RankingTarget, ex: RankingExamples, rows: ArrayLike<number>, k: number, window: number): Int32Array {
  const time = graph.table(target.fact_table).time!;
  const itemFk = fkParents(graph, target.fact_table, target.item_column);
  const nItems = graph.table(target.item_table).rows;
  const cache = new Map<number, Int32Array>();
  const out = new Int32Array(rows.length * k);
  for (let r = 0; r < rows.length; r++) {
    const t = ex.anchors[rows[r]!]!;
    let list = cache.get(t);
    if (!list) {
      const counts = new Float32Array(nItems);
      for (let v = firstAfter(time, t - window), hi = firstAfter(time, t); v < hi; v++) if (itemFk[v]! >= 0) counts[itemFk[v]!]!++;
      cache.set(t, (list = topK(counts, k)));
    }
    out.set(list, r * k);
  }
  return out;
}

/** Repeat: the user's own past items (before t), most often bought first, then most recent. */
export function repeatLists(graph: Graph, target: RankingTarget, ex: RankingExamples, rows: ArrayLike<number>, k: number): Int32Array {
  const rev = graph.edges.find((e) => e.kind === 'rev' && e.src === target.user_table && e.dst === target.fact_table && e.meta.column === target.user_column)!;
  const time = graph.table(target.fact_table).time!;
  const itemFk = fkParents(graph, target.fact_table, target.item_column);
  const out = new Int32Array(rows.length * k).fill(-1);
  for (let r = 0; r < rows.length; r++) {
    const e = rows[r]!;
    const u = ex.users[e]!;
    const t = ex.anchors[e]!;
    const stats = new Map<number, { count: number; last: number }>();
    for (let j = rev.indptr![u]!; j < rev.indptr![u + 1]!; j++) {
      const v = rev.indices![j]!;
      if (time[v]! > t) break;
      const it = itemFk[v]!;
      if (it < 0) continue;
      const s = stats.get(it);
      if (s) {
        s.count++;
        s.last = time[v]!;
      } else stats.set(it, { count: 1, last: time[v]! });
    }
    const ranked = [...stats.entries()].sort((a, b) => b[1].count - a[1].count || b[1].last - a[1].last).slice(0, k);
    ranked.forEach(([it], i) => (out[r * k + i] = it));
  }
  return out;
}
