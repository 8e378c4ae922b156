/**
 * Attribute-affinity popularity, the heuristic a recommender most often loses to on retail data ("popular
 * items of the kinds you buy"): for one categorical column of the item table (type, group, colour …),
 *
 *   score_u(i) = P(v_i | u) · P(i | v_i)
 *
 * where P(v | u) is the share of the user's interactions before the anchor whose item has value v, and
 * P(i | v) is item i's share of the window's interactions among items with value v. A multi-valued
 * attribute (genre flags: a film is Drama and Romance) sums over the item's values, each interaction
 * spreading its weight over its item's values: score_u(i) = Σ_{v ∈ values(i)} P(v | u) · P(i | v). The scores of one user
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

/** An item attribute: each item's values (CSR over items); one value per item for a categorical column. */
export interface ItemAttribute {
  name: string;
  ptr: Int32Array;
  values: Int32Array;
}

/** A categorical column's codes as an attribute (one value per item). */
export function singleValued(name: string, codes: Int32Array): ItemAttribute {
  return { name, ptr: Int32Array.from({ length: codes.length + 1 }, (_, i) => i), values: codes };
}

/**
 * Per value of one item attribute, its items by window count (most first, ties: lower id), at most `depth`
 * each, and each value's total count; items never interacted with in the window are left out.
 */
export interface ValueLists {
  ptr: Int32Array;
  items: Int32Array;
  /** P(i | v) of each listed item */
  share: Float32Array;
}

export function valueLists(attr: ItemAttribute, counts: Float32Array, depth: number): ValueLists {
  let values = 0;
  for (const c of attr.values) values = Math.max(values, c + 1);
  const byValue: number[][] = Array.from({ length: values }, () => []);
  const total = new Float64Array(values);
  for (let i = 0; i + 1 < attr.ptr.length; i++) {
    const c = counts[i]!;
    if (c <= 0) continue;
    for (let p = attr.ptr[i]!; p < attr.ptr[i + 1]!; p++) {
      const v = attr.values[p]!;
      if (v < 0) continue;
      byValue[v]!.push(i);
      total[v]! += c;
    }
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
export function affinityShares(g: InteractionCsr, attr: ItemAttribute, lists: ValueLists, user: number, anchor: number): Map<number, number> {
  const [start, end] = historyRange(g, user, anchor);
  const perValue = new Map<number, number>();
  let n = 0;
  for (let j = start; j < end; j++) {
    const item = g.itemOf[g.userIdx[j]!]!;
    if (item < 0) continue;
    const lo = attr.ptr[item]!;
    const hi = attr.ptr[item + 1]!;
    if (hi === lo) continue;
    for (let p = lo; p < hi; p++) perValue.set(attr.values[p]!, (perValue.get(attr.values[p]!) ?? 0) + 1 / (hi - lo));
    n++;
  }
  const out = new Map<number, number>();
  for (const [v, c] of perValue) {
    if (v < 0 || v + 1 >= lists.ptr.length) continue;
    for (let p = lists.ptr[v]!; p < lists.ptr[v + 1]!; p++) out.set(lists.items[p]!, (out.get(lists.items[p]!) ?? 0) + (c / n) * lists.share[p]!);
  }
  return out;
}

/**
 * The item table's 0/1 numeric columns (genre flags) as one multi-valued attribute, or null with fewer
 * than two such columns: a flag alone splits the catalogue in two, too coarse to say what a user likes.
 */
export function flagAttribute(columns: { name: string; values: Float32Array }[]): ItemAttribute | null {
  const flags = columns.filter((c) => {
    const seen = new Set<number>();
    for (const x of c.values) {
      if (!Number.isNaN(x)) seen.add(x);
      if (seen.size > 2) return false;
    }
    return seen.size === 2;
  });
  if (flags.length < 2) return null;
  const n = flags[0]!.values.length;
  const on = flags.map((c) => Math.max(...new Set(c.values)));
  const ptr = new Int32Array(n + 1);
  const values: number[] = [];
  for (let i = 0; i < n; i++) {
    flags.forEach((c, f) => {
      if (c.values[i] === on[f]) values.push(f);
    });
    ptr[i + 1] = values.length;
  }
  return { name: `flags(${flags.map((c) => c.name).join(',')})`, ptr, values: Int32Array.from(values) };
}

/**
 * The k best of `scores` (ties: lower item first), skipping `exclude`, then filled from `fill` (a global
 * list, best first) so a user with a thin history still gets k items; −1 where both run out. With
 * `scoresOut` (length k), each listed item's score goes there: its value in `scores`, `fillScore(i)` for
 * a filled item (0 without it: the user's own scores gave it nothing), NaN where the list runs out.
 */
export function topOf(scores: Map<number, number>, k: number, exclude: Set<number> | null, fill: Int32Array, scoresOut?: Float32Array, fillScore?: (i: number) => number): Int32Array {
  const ranked = [...scores.entries()].filter(([i, s]) => s > 0 && !exclude?.has(i)).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const out = new Int32Array(k).fill(-1);
  scoresOut?.fill(Number.NaN);
  const taken = new Set<number>();
  let at = 0;
  for (const [i, s] of ranked) {
    if (at === k) break;
    if (scoresOut) scoresOut[at] = s;
    out[at++] = i;
    taken.add(i);
  }
  for (let f = 0; f < fill.length && at < k; f++) {
    const i = fill[f]!;
    if (i < 0 || taken.has(i) || exclude?.has(i)) continue;
    if (scoresOut) scoresOut[at] = fillScore ? fillScore(i) : 0;
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

/** The first k of a ranked list that are not in `seen` (−1 where the list runs out). */
export function unseen(list: Int32Array, seen: Set<number>, k: number): Int32Array {
  const out = new Int32Array(k).fill(-1);
  let at = 0;
  for (let r = 0; r < list.length && at < k; r++) if (list[r]! >= 0 && !seen.has(list[r]!)) out[at++] = list[r]!;
  return out;
}
