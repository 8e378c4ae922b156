/**
 * The re-ranker's features for each (user, candidate item) at an anchor, read only from interactions at
 * or before the anchor (the interaction CSR is time-sorted per user; the popularity counts cover
 * (anchor − window, anchor]), so nothing a label window holds can leak in:
 *
 * - item: interactions in the last 7, 30, 90 days and all time, and the trend (last 7 days + 1) / (the 7
 *   before + 1);
 * - user × item: how often the user interacted with the item, its share of the user's history, days since
 *   the last time;
 * - user: interactions, distinct items, days since the last, interactions in the last 30 days;
 * - affinity, per item attribute (categorical column or flag group): the share of the user's history
 *   whose item has the candidate's value(s) (ranking_affinity.ts's P(v | u), summed over the item's values);
 * - per candidate source (each heuristic, the deep model): the candidate's rank and score in its list
 *   (missing when that source did not list it; the trees route missing values on their own).
 */
import { historyRange, type InteractionCsr, type ItemAttribute } from './ranking_affinity.js';
import type { Candidates } from './rerank_candidates.js';

const DAY = 86_400;
/** popularity windows the item features count over (seconds; Infinity: all time) */
const POP_WINDOWS: [string, number][] = [
  ['7d', 7 * DAY],
  ['30d', 30 * DAY],
  ['90d', 90 * DAY],
  ['all', Number.POSITIVE_INFINITY],
];

/** What the features of one anchor read. */
export interface FeatureInputs {
  g: InteractionCsr;
  columns: ItemAttribute[];
  anchor: number;
  /** interactions per item in (anchor − window, anchor] */
  countsAt: (window: number) => Float32Array;
}

/** The feature names, in column order, for these attributes and candidate sources. */
export function featureNames(columns: { name: string }[], sources: string[]): string[] {
  return [
    ...POP_WINDOWS.map(([n]) => `item_pop_${n}`),
    'item_pop_trend_7d',
    'user_item_count',
    'user_item_share',
    'user_item_days_since',
    'user_events',
    'user_distinct_items',
    'user_days_since_last',
    'user_events_30d',
    ...columns.map((c) => `affinity_${c.name}`),
    ...sources.flatMap((s) => [`${s}_rank`, `${s}_score`]),
  ];
}

/** Column-major features [features][candidate] of `cand` (its users are `users`, one row each) at `inp.anchor`. */
export function rerankFeatures(inp: FeatureInputs, users: Int32Array, cand: Candidates): Float32Array[] {
  const { g, columns, anchor } = inp;
  const S = cand.sources.length;
  const n = cand.items.length;
  const F = featureNames(columns, cand.sources).length;
  const out = Array.from({ length: F }, () => new Float32Array(n));
  const pops = POP_WINDOWS.map(([, w]) => inp.countsAt(w));
  const prev = inp.countsAt(14 * DAY);
  const count = new Map<number, number>();
  const last = new Map<number, number>();
  const shares = columns.map(() => new Map<number, number>());
  for (let j = 0; j < users.length; j++) {
    const [start, end] = historyRange(g, users[j]!, anchor);
    count.clear();
    last.clear();
    for (const s of shares) s.clear();
    let events = 0;
    let recent = 0;
    let lastTime = Number.NaN;
    for (let p = start; p < end; p++) {
      const row = g.userIdx[p]!;
      const item = g.itemOf[row]!;
      if (item < 0) continue;
      const t = g.time[row]!;
      events++;
      if (t > anchor - 30 * DAY) recent++;
      lastTime = t;
      count.set(item, (count.get(item) ?? 0) + 1);
      last.set(item, t);
      columns.forEach((a, c) => {
        const lo = a.ptr[item]!;
        const hi = a.ptr[item + 1]!;
        for (let q = lo; q < hi; q++) shares[c]!.set(a.values[q]!, (shares[c]!.get(a.values[q]!) ?? 0) + 1 / (hi - lo));
      });
    }
    for (let i = cand.ptr[j]!; i < cand.ptr[j + 1]!; i++) {
      const item = cand.items[i]!;
      let f = 0;
      for (const pop of pops) out[f++]![i] = pop[item] ?? 0;
      const c7 = pops[0]![item] ?? 0;
      out[f++]![i] = (c7 + 1) / ((prev[item] ?? 0) - c7 + 1);
      const c = count.get(item) ?? 0;
      out[f++]![i] = c;
      out[f++]![i] = events > 0 ? c / events : 0;
      out[f++]![i] = last.has(item) ? (anchor - last.get(item)!) / DAY : Number.NaN;
      out[f++]![i] = events;
      out[f++]![i] = count.size;
      out[f++]![i] = events > 0 ? (anchor - lastTime) / DAY : Number.NaN;
      out[f++]![i] = recent;
      columns.forEach((a, col) => {
        let s = 0;
        for (let q = a.ptr[item]!; q < a.ptr[item + 1]!; q++) s += shares[col]!.get(a.values[q]!) ?? 0;
        out[f++]![i] = events > 0 ? s / events : 0;
      });
      for (let si = 0; si < S; si++) {
        const r = cand.ranks[i * S + si]!;
        out[f++]![i] = r < 0 ? Number.NaN : r;
        out[f++]![i] = r < 0 ? Number.NaN : cand.scores[i * S + si]!;
      }
    }
  }
  return out;
}
