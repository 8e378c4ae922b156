/**
 * The re-ranker's features for each (user, candidate item) at an anchor, read only from interactions at
 * or before the anchor (the interaction CSR is time-sorted per user; the popularity counts cover
 * (anchor − window, anchor]), so nothing a label window holds can leak in:
 *
 * - item: interactions in the last 7, 30, 90 days and all time, and the trends (last 7 days + 1) / (the 7
 *   before + 1) and (last 7 days + 1) / (a week of the last 30 days + 1);
 * - user × item: how often the user interacted with the item, its share of the user's history, days since
 *   the last time, the mean gap between the user's interactions with it and how overdue the next one is
 *   (days since the last ÷ that gap): the repeat heuristic's signal, and its rhythm;
 * - user: interactions, distinct items, days since the last, interactions in the last 30 days, the share
 *   of interactions that repeat an earlier item;
 * - affinity, per item attribute (categorical column or flag group): the share of the user's history
 *   whose item has the candidate's value(s) (ranking_affinity.ts's P(v | u), summed over the item's values),
 *   the same share with each interaction weighted by its recency (half-life AFFINITY_HALF_LIFE), the item's
 *   share of its value's interactions in the last 30 days, and the product of the two: the affinity
 *   heuristic's score computed for every column, not only the one chosen on validation;
 * - per candidate source (each heuristic, the deep model): the candidate's rank and score in its list
 *   (missing when that source did not list it; the trees route missing values on their own).
 */
import { historyRange, type InteractionCsr, type ItemAttribute } from './ranking_affinity.js';
import type { Candidates } from './rerank_candidates.js';

const DAY = 86_400;
/** recency half-life of the decayed attribute shares: a month keeps a season's taste, drops last year's */
const AFFINITY_HALF_LIFE = 30 * DAY;
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
    'item_pop_trend_30d',
    'user_item_count',
    'user_item_share',
    'user_item_days_since',
    'user_item_mean_gap_days',
    'user_item_overdue',
    'user_events',
    'user_distinct_items',
    'user_days_since_last',
    'user_events_30d',
    'user_repeat_share',
    ...columns.flatMap((c) => [`affinity_${c.name}`, `affinity_decayed_${c.name}`, `value_item_share_${c.name}`, `affinity_pop_${c.name}`]),
    ...sources.flatMap((s) => [`${s}_rank`, `${s}_score`]),
  ];
}

/** One user's history up to the anchor, as the features read it. */
interface UserHistory {
  events: number;
  recent: number;
  lastTime: number;
  repeats: number;
  count: Map<number, number>;
  first: Map<number, number>;
  last: Map<number, number>;
  /** per attribute: value → interactions (an item's values share one) */
  shares: Map<number, number>[];
  /** per attribute: value → recency-weighted interactions */
  decayed: Map<number, number>[];
  decayTotal: number;
}

function readHistory(inp: FeatureInputs, user: number, h: UserHistory): void {
  const { g, columns, anchor } = inp;
  const [start, end] = historyRange(g, user, anchor);
  h.count.clear();
  h.first.clear();
  h.last.clear();
  for (const s of h.shares) s.clear();
  for (const s of h.decayed) s.clear();
  h.events = h.recent = h.repeats = h.decayTotal = 0;
  h.lastTime = Number.NaN;
  for (let p = start; p < end; p++) {
    const row = g.userIdx[p]!;
    const item = g.itemOf[row]!;
    if (item < 0) continue;
    const t = g.time[row]!;
    const w = Math.pow(0.5, (anchor - t) / AFFINITY_HALF_LIFE);
    h.events++;
    h.decayTotal += w;
    if (t > anchor - 30 * DAY) h.recent++;
    h.lastTime = t;
    const c = h.count.get(item) ?? 0;
    if (c > 0) h.repeats++;
    else h.first.set(item, t);
    h.count.set(item, c + 1);
    h.last.set(item, t);
    columns.forEach((a, col) => {
      const lo = a.ptr[item]!;
      const hi = a.ptr[item + 1]!;
      const shares = h.shares[col]!;
      const decayed = h.decayed[col]!;
      for (let q = lo; q < hi; q++) {
        const v = a.values[q]!;
        shares.set(v, (shares.get(v) ?? 0) + 1 / (hi - lo));
        decayed.set(v, (decayed.get(v) ?? 0) + w / (hi - lo));
      }
    });
  }
}

/** Per attribute, each value's interactions in `pop` (an item's count split over its values). */
function valueTotals(columns: ItemAttribute[], pop: Float32Array): Map<number, number>[] {
  return columns.map((a) => {
    const m = new Map<number, number>();
    for (let item = 0; item + 1 < a.ptr.length; item++) {
      const lo = a.ptr[item]!;
      const hi = a.ptr[item + 1]!;
      for (let q = lo; q < hi; q++) m.set(a.values[q]!, (m.get(a.values[q]!) ?? 0) + (pop[item] ?? 0) / (hi - lo));
    }
    return m;
  });
}

/** Column-major features [features][candidate] of `cand` (its users are `users`, one row each) at `inp.anchor`. */
export function rerankFeatures(inp: FeatureInputs, users: Int32Array, cand: Candidates): Float32Array[] {
  const { columns, anchor } = inp;
  const S = cand.sources.length;
  const n = cand.items.length;
  const F = featureNames(columns, cand.sources).length;
  const out = Array.from({ length: F }, () => new Float32Array(n));
  const pops = POP_WINDOWS.map(([, w]) => inp.countsAt(w));
  const prev = inp.countsAt(14 * DAY);
  const pop30 = pops[1]!;
  const totals = valueTotals(columns, pop30);
  const h: UserHistory = { events: 0, recent: 0, lastTime: Number.NaN, repeats: 0, count: new Map(), first: new Map(), last: new Map(), shares: columns.map(() => new Map()), decayed: columns.map(() => new Map()), decayTotal: 0 };
  for (let j = 0; j < users.length; j++) {
    readHistory(inp, users[j]!, h);
    const { events } = h;
    for (let i = cand.ptr[j]!; i < cand.ptr[j + 1]!; i++) {
      const item = cand.items[i]!;
      let f = 0;
      for (const pop of pops) out[f++]![i] = pop[item] ?? 0;
      const c7 = pops[0]![item] ?? 0;
      out[f++]![i] = (c7 + 1) / ((prev[item] ?? 0) - c7 + 1);
      out[f++]![i] = (c7 + 1) / (((pop30[item] ?? 0) * 7) / 30 + 1);
      const c = h.count.get(item) ?? 0;
      out[f++]![i] = c;
      out[f++]![i] = events > 0 ? c / events : 0;
      const since = h.last.has(item) ? (anchor - h.last.get(item)!) / DAY : Number.NaN;
      out[f++]![i] = since;
      const gap = c >= 2 ? (h.last.get(item)! - h.first.get(item)!) / DAY / (c - 1) : Number.NaN;
      out[f++]![i] = gap;
      // A day added: same-day repeats (date-only data) have a zero gap.
      out[f++]![i] = since / (gap + 1);
      out[f++]![i] = events;
      out[f++]![i] = h.count.size;
      out[f++]![i] = events > 0 ? (anchor - h.lastTime) / DAY : Number.NaN;
      out[f++]![i] = h.recent;
      out[f++]![i] = events > 0 ? h.repeats / events : 0;
      columns.forEach((a, col) => {
        let s = 0;
        let d = 0;
        let within = 0;
        let product = 0;
        const lo = a.ptr[item]!;
        const hi = a.ptr[item + 1]!;
        for (let q = lo; q < hi; q++) {
          const v = a.values[q]!;
          const share = h.decayTotal > 0 ? (h.decayed[col]!.get(v) ?? 0) / h.decayTotal : 0;
          const total = totals[col]!.get(v) ?? 0;
          const w = total > 0 ? (pop30[item] ?? 0) / total : 0;
          s += h.shares[col]!.get(v) ?? 0;
          d += share;
          within += w / (hi - lo);
          product += share * w;
        }
        out[f++]![i] = events > 0 ? s / events : 0;
        out[f++]![i] = d;
        out[f++]![i] = within;
        out[f++]![i] = product;
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
