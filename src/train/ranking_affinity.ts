/**
 * Attribute-affinity popularity, the heuristic a recommender most often loses to on retail data ("popular
 * items of the kinds you buy"): for one categorical column of the item table (type, group, colour …),
 *
 *   score_u(i) = P(v_i | u) · P(i | v_i)
 *
 * where P(v | u) is the share of the user's interactions before the anchor whose item has value v, and
 * P(i | v) is item i's share of the window's interactions among items with value v. The scores of one user
 * sum to 1 over the catalogue, so they mix with the repeat shares P(i | u) (`repeatShares`) as a blend:
 * w · P_repeat(i | u) + (1 − w) · P_affinity(i | u).
 *
 * Everything here is pure over arrays (the interaction CSR, the item codes, the window's counts), so it is
 * tested without a graph.
 */
import { upperBound } from '../model/sampler.js';

/** The interactions of every user in time order (the graph's CSR of the interaction table). */
export interface InteractionCsr {
  /** per user, the range of its interactions in `userIdx` */
  userPtr: Int32Array;
  /** interaction row ids, time-sorted within each user */
  userIdx: Int32Array;
  /** per interaction row, its item (−1: none) */
  itemOf: Int32Array;
  /** per interaction row, its time (epoch seconds) */
  time: Float64Array;
}

/** The [start, end) range of a user's interactions at or before the anchor. */
export function historyRange(g: InteractionCsr, user: number, anchor: number): [number, number] {
  const start = g.userPtr[user]!;
  return [start, upperBound(g.userIdx, g.time, start, g.userPtr[user + 1]!, anchor)];
}

/** Items the user interacted with at or before the anchor. */
export function seenItems(g: InteractionCsr, user: number, anchor: number): Set<number> {
  const [start, end] = historyRange(g, user, anchor);
  const out = new Set<number>();
  for (let j = start; j < end; j++) {
    const item = g.itemOf[g.userIdx[j]!]!;
    if (item >= 0) out.add(item);
  }
  return out;
}

/** P(i | u) of the repeat rule: each past item's share of the user's interactions before the anchor. */
export function repeatShares(g: InteractionCsr, user: number, anchor: number): Map<number, number> {
  const [start, end] = historyRange(g, user, anchor);
  const out = new Map<number, number>();
  let n = 0;
  for (let j = start; j < end; j++) {
    const item = g.itemOf[g.userIdx[j]!]!;
    if (item < 0) continue;
    out.set(item, (out.get(item) ?? 0) + 1);
    n++;
  }
  for (const [item, c] of out) out.set(item, c / n);
  return out;
}

/**
 * Per value of one item column, its items by window count (most first, ties: lower id), at most `depth`
 * each, and each value's total count; items never interacted with in the window are left out.
 */
export interface ValueLists {
  ptr: Int32Array;
  items: Int32Array;
  /** P(i | v) of each listed item */
  share: Float32Array;
}

export function valueLists(codes: Int32Array, counts: Float32Array, depth: number): ValueLists {
  let values = 0;
  for (const c of codes) values = Math.max(values, c + 1);
  const byValue: number[][] = Array.from({ length: values }, () => []);
  const total = new Float64Array(values);
  for (let i = 0; i < codes.length; i++) {
    const v = codes[i]!;
    const c = counts[i]!;
    if (v < 0 || c <= 0) continue;
    byValue[v]!.push(i);
    total[v]! += c;
  }
  const ptr = new Int32Array(values + 1);
  const items: number[] = [];
  const share: number[] = [];
  for (let v = 0; v < values; v++) {
    const list = byValue[v]!.sort((a, b) => counts[b]! - counts[a]! || a - b).slice(0, depth);
    for (const i of list) {
      items.push(i);
      share.push(counts[i]! / total[v]!);
    }
    ptr[v + 1] = items.length;
  }
  return { ptr, items: Int32Array.from(items), share: Float32Array.from(share) };
}

/** P(i | u) of attribute affinity over the items `lists` hold (see the file comment). */
export function affinityShares(g: InteractionCsr, codes: Int32Array, lists: ValueLists, user: number, anchor: number): Map<number, number> {
  const [start, end] = historyRange(g, user, anchor);
  const perValue = new Map<number, number>();
  let n = 0;
  for (let j = start; j < end; j++) {
    const item = g.itemOf[g.userIdx[j]!]!;
    if (item < 0) continue;
    const v = codes[item]!;
    perValue.set(v, (perValue.get(v) ?? 0) + 1);
    n++;
  }
  const out = new Map<number, number>();
  for (const [v, c] of perValue) {
    if (v < 0 || v + 1 >= lists.ptr.length) continue;
    for (let p = lists.ptr[v]!; p < lists.ptr[v + 1]!; p++) out.set(lists.items[p]!, (c / n) * lists.share[p]!);
  }
  return out;
}

/**
 * The k best of `scores` (ties: lower item first), skipping `exclude`, then filled from `fill` (a global
 * list, best first) so a user with a thin history still gets k items; −1 where both run out.
 */
export function topOf(scores: Map<number, number>, k: number, exclude: Set<number> | null, fill: Int32Array): Int32Array {
  const ranked = [...scores.entries()].filter(([i, s]) => s > 0 && !exclude?.has(i)).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const out = new Int32Array(k).fill(-1);
  const taken = new Set<number>();
  let at = 0;
  for (const [i] of ranked) {
    if (at === k) break;
    out[at++] = i;
    taken.add(i);
  }
  for (let f = 0; f < fill.length && at < k; f++) {
    const i = fill[f]!;
    if (i < 0 || taken.has(i) || exclude?.has(i)) continue;
    out[at++] = i;
    taken.add(i);
  }
  return out;
}

/** w · a + (1 − w) · b over the union of both maps' items. */
export function blend(a: Map<number, number>, b: Map<number, number>, w: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const [i, s] of a) out.set(i, w * s);
  for (const [i, s] of b) out.set(i, (out.get(i) ?? 0) + (1 - w) * s);
  return out;
}
