/**
 * The simple heuristics every ranking run is measured against, on the same validation and test users and
 * anchors as the model, each with its free choice made on validation only:
 *
 * - `popularity`: the most interacted-with items in a window before the anchor (7, 30, 90 days, the task's
 *   label window, or all time: the best on validation);
 * - `repeat`: the user's own past items (train/ranking_baselines.ts);
 * - `affinity`: attribute-affinity popularity (train/ranking_affinity.ts) over the item table's categorical
 *   column (or its 0/1 flag columns taken together, e.g. genres) that scores best on validation, in
 *   popularity's window;
 * - `cooccurrence`: item-to-item co-occurrence from the user's recent items (train/ranking_baselines.ts);
 * - `repeat_affinity`: the blend w · repeat + (1 − w) · affinity, w chosen on validation.
 *
 * Seen items: `rank.exclude_seen: auto` excludes the items a user already interacted with from every list
 * (the model's too, see `SeenDecision`) when the training windows' label items were almost never seen
 * before; `true` / `false` force it.
 */
import { assertUnreachable, DataError } from '../core/errors.js';
import type { Graph } from '../graph/graph.js';
import type { RankingSpec } from '../model/context_gnn.js';
import { upperBound } from '../model/sampler.js';
import { rankingMetrics, type RankingMetrics } from '../task/metrics.js';
import type { Examples } from '../task/task_spec.js';
import { affinityShares, blend, flagAttribute, repeatShares, seenItems, singleValued, topOf, valueLists, type InteractionCsr, type ItemAttribute, type ValueLists } from './ranking_affinity.js';
import { cooccurrenceTopK, interactionCsr, RANKING_BASELINES, repeatTopK, type RankingBaseline } from './ranking_baselines.js';

export type ExcludeSeenSetting = 'auto' | boolean;

/** Whether lists skip the user's seen items, and why. */
export interface SeenDecision {
  setting: 'auto' | 'true' | 'false';
  exclude: boolean;
  /** share of the training examples' label items the user had interacted with before the anchor */
  repeat_rate: number;
  reason: string;
}

/** What each heuristic chose on validation (the run's `heuristics` in metrics.json and --json). */
export interface HeuristicsRecord {
  exclude_seen: SeenDecision;
  /** `window_seconds`: the chosen window in seconds, null for all time */
  popularity: { window: string; window_seconds: number | null; val_map_by_window: Record<string, number> };
  affinity: { column: string | null; val_map_by_column: Record<string, number> };
  repeat_affinity: { repeat_weight: number; val_map_by_weight: Record<string, number> };
}

export interface HeuristicsResult {
  baselines: Record<RankingBaseline, { val: RankingMetrics; test: RankingMetrics }>;
  /** the heuristic with the best validation MAP@k */
  best_baseline: RankingBaseline;
  record: HeuristicsRecord;
  /** each heuristic's top-k of every validation and test example (n × k, example order), for per-user intervals */
  lists: Record<RankingBaseline, { val: Int32Array; test: Int32Array }>;
}

const DAY = 86_400;
/**
 * Below this share of label items already seen, a seen item in a list is a wasted slot far more often
 * than a hit: on a ratings dataset (nobody rates a movie twice) 15% of the model's slots were such items.
 */
const REPEAT_RATE_FLOOR = 0.01;
/** training examples the repeat rate is measured on (an even stride through them) */
const RATE_EXAMPLES = 20_000;
/** validation users the free choices are made on (an even stride); the reported metrics use every user */
const CHOICE_USERS = 20_000;
/** extra list depth that survives dropping the user's seen items */
export const SEEN_MARGIN = 100;
const BLEND_WEIGHTS = [0.25, 0.5, 0.75] as const;

/** Share of the label items of (a stride through) `ex` that their user had already interacted with before the anchor. */
export function repeatRate(g: InteractionCsr, ex: Examples, maxExamples = RATE_EXAMPLES): number {
  const labels = ex.label_items;
  if (!labels) return 0;
  const n = ex.nodes.length;
  const stride = Math.max(1, Math.ceil(n / maxExamples));
  let seen = 0;
  let total = 0;
  for (let e = 0; e < n; e += stride) {
    const before = seenItems(g, ex.nodes[e]!, ex.anchors[e]!);
    for (let j = labels.offsets[e]!; j < labels.offsets[e + 1]!; j++) {
      total++;
      if (before.has(labels.items[j]!)) seen++;
    }
  }
  return total === 0 ? 0 : seen / total;
}

export function decideExcludeSeen(setting: ExcludeSeenSetting, rate: number): SeenDecision {
  const pct = `${(rate * 100).toFixed(2)}%`;
  if (setting === true) return { setting: 'true', exclude: true, repeat_rate: rate, reason: `rank.exclude_seen: true (label items already seen in training windows: ${pct})` };
  if (setting === false) return { setting: 'false', exclude: false, repeat_rate: rate, reason: `rank.exclude_seen: false (label items already seen in training windows: ${pct})` };
  return rate < REPEAT_RATE_FLOOR
    ? { setting: 'auto', exclude: true, repeat_rate: rate, reason: `only ${pct} of the training windows' label items were seen before by their user (< ${REPEAT_RATE_FLOOR * 100}%): seen items are excluded` }
    : { setting: 'auto', exclude: false, repeat_rate: rate, reason: `${pct} of the training windows' label items were seen before by their user: seen items stay candidates` };
}

/** The run's seen-items decision from its setting and the training examples' repeat rate. */
export function seenDecision(graph: Graph, rs: RankingSpec, train: Examples, setting: ExcludeSeenSetting): SeenDecision {
  return decideExcludeSeen(setting, repeatRate(interactionCsr(graph, rs), train));
}

/** Windows popularity may count over, by name (seconds; Infinity: all time). */
export function popularityWindows(taskWindow: number): [string, number][] {
  const out: [string, number][] = [
    ['7d', 7 * DAY],
    ['30d', 30 * DAY],
    ['90d', 90 * DAY],
    ['all', Number.POSITIVE_INFINITY],
  ];
  if (!out.some(([, w]) => w === taskWindow)) out.unshift([`${+(taskWindow / DAY).toFixed(2)}d`, taskWindow]);
  return out;
}

/** Interactions per item in (anchor − window, anchor]. */
export function windowCounts(graph: Graph, rs: RankingSpec, anchor: number, window: number): Float32Array {
  const ie = graph.edges.find((e) => e.name === rs.item_edge)!;
  const time = graph.tables[rs.fact_table]!.time!;
  const n = graph.tables[rs.item_table]!.rows;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const lo = ie.indptr![i]!;
    const end = upperBound(ie.indices!, time, lo, ie.indptr![i + 1]!, anchor);
    out[i] = end - upperBound(ie.indices!, time, lo, end, anchor - window);
  }
  return out;
}

/** Items by count, most first (ties: lower id), at most `depth`, only those counted at least once. */
export function rankedByCount(counts: Float32Array, depth: number): Int32Array {
  const ids: number[] = [];
  for (let i = 0; i < counts.length; i++) if (counts[i]! > 0) ids.push(i);
  ids.sort((a, b) => counts[b]! - counts[a]! || a - b);
  return Int32Array.from(ids.slice(0, depth));
}

type Params = { name: RankingBaseline; window?: number; column?: number; weight?: number };

/** Users of `ex` grouped by anchor, as example indices (every `stride`-th). */
export function byAnchor(ex: Examples, stride = 1): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (let i = 0; i < ex.anchors.length; i += stride) {
    const a = ex.anchors[i]!;
    let list = m.get(a);
    if (!list) m.set(a, (list = []));
    list.push(i);
  }
  return m;
}

/** The item attributes affinity may use: categorical columns with 2+ values that are not keys, and the 0/1 flag columns together. */
export function itemAttributes(graph: Graph, rs: RankingSpec): ItemAttribute[] {
  const items = graph.tables[rs.item_table]!;
  const flags = flagAttribute(items.numeric.map((c) => ({ name: c.meta.name, values: c.values })));
  return [...items.categorical.filter((c) => c.meta.vocab.length >= 2 && c.meta.vocab.length < items.rows).map((c) => singleValued(c.meta.name, c.codes)), ...(flags ? [flags] : [])];
}

/**
 * One heuristic's settings as training chose them on validation (`heuristics` in metrics.json):
 * `window` in seconds (Infinity: all time), `column` an index into `itemAttributes`, `weight` the blend's
 * repeat weight.
 */
export type HeuristicParams = Params;

/**
 * Every heuristic's top-k lists, with scores, for users at one anchor: what training evaluates and what
 * `predict` serves when the run chose a heuristic, one implementation for both. Scores are the
 * heuristic's own: popularity the window's interaction count, repeat the item's share of the user's
 * history, affinity and the blend P(i | u), co-occurrence the summed co-occurrence counts; an item filled
 * in from popularity after the user's own scores ran out scores 0.
 */
export class HeuristicLists {
  readonly g: InteractionCsr;
  readonly columns: ItemAttribute[];
  private readonly depth: number;
  private readonly counts = new Map<string, Float32Array>();
  private readonly lists = new Map<string, ValueLists>();

  /** `listLength`: the longest list `rank` will be asked for (default the task's k; the re-ranker's candidates ask for more) */
  constructor(
    readonly graph: Graph,
    readonly rs: RankingSpec,
    readonly excludeSeen: boolean,
    listLength = rs.top_k,
  ) {
    this.g = interactionCsr(graph, rs);
    this.columns = itemAttributes(graph, rs);
    this.depth = listLength + (excludeSeen ? SEEN_MARGIN : listLength);
  }

  countsAt(anchor: number, window: number): Float32Array {
    const key = `${anchor}/${window}`;
    let c = this.counts.get(key);
    if (!c) this.counts.set(key, (c = windowCounts(this.graph, this.rs, anchor, window)));
    return c;
  }

  private listsAt(anchor: number, window: number, column: number): ValueLists {
    const key = `${anchor}/${window}/${column}`;
    let l = this.lists.get(key);
    if (!l) this.lists.set(key, (l = valueLists(this.columns[column]!, this.countsAt(anchor, window), this.depth)));
    return l;
  }

  /**
   * [users × k] item ids (−1 where a list runs out) and scores (NaN there) of heuristic `p` at `anchor`;
   * `k` defaults to the task's (at most the constructor's `listLength`).
   */
  rank(p: Params, users: Int32Array, anchor: number, k = this.rs.top_k): { ids: Int32Array; scores: Float32Array } {
    const { graph, rs, g } = this;
    const ids = new Int32Array(users.length * k).fill(-1);
    const scores = new Float32Array(users.length * k).fill(Number.NaN);
    const counts = p.window !== undefined ? this.countsAt(anchor, p.window) : null;
    const fill = counts ? rankedByCount(counts, this.depth) : new Int32Array(0);
    const exclude = (u: number): Set<number> | null => (this.excludeSeen ? seenItems(g, u, anchor) : null);
    if (p.name === 'repeat') {
      // With seen items excluded, the repeat rule has nothing left to list.
      if (this.excludeSeen) return { ids, scores };
      ids.set(repeatTopK(graph, rs, users, anchor, k));
      users.forEach((u, j) => {
        const share = repeatShares(g, u, anchor);
        for (let r = 0; r < k && ids[j * k + r]! >= 0; r++) scores[j * k + r] = share.get(ids[j * k + r]!)!;
      });
    } else if (p.name === 'cooccurrence') {
      const wide = this.excludeSeen ? k + SEEN_MARGIN : k;
      const sums = new Float32Array(users.length * wide).fill(Number.NaN);
      const lists = cooccurrenceTopK(graph, rs, users, anchor, wide, sums);
      users.forEach((u, j) => {
        // Ranked by the co-occurrence list's own order; reported with its summed counts.
        const order = new Map<number, number>();
        const sum = new Map<number, number>();
        for (let r = 0; r < wide; r++) {
          if (lists[j * wide + r]! < 0) continue;
          order.set(lists[j * wide + r]!, wide - r);
          sum.set(lists[j * wide + r]!, sums[j * wide + r]!);
        }
        const out = scores.subarray(j * k, (j + 1) * k);
        ids.set(topOf(order, k, exclude(u), new Int32Array(0), out), j * k);
        for (let r = 0; r < k && ids[j * k + r]! >= 0; r++) out[r] = sum.get(ids[j * k + r]!)!;
      });
    } else {
      const vl = p.column !== undefined ? this.listsAt(anchor, p.window!, p.column) : null;
      const attr = p.column !== undefined ? this.columns[p.column]! : null;
      const fillScore = p.name === 'popularity' && counts ? (i: number) => counts[i]! : undefined;
      users.forEach((u, j) => {
        const aff = vl && attr ? affinityShares(g, attr, vl, u, anchor) : new Map<number, number>();
        const own = p.name === 'repeat_affinity' ? blend(repeatShares(g, u, anchor), aff, p.weight!) : aff;
        ids.set(topOf(own, k, exclude(u), fill, scores.subarray(j * k, (j + 1) * k), fillScore), j * k);
      });
    }
    return { ids, scores };
  }
}

/** Computes every heuristic on val and test, making each free choice on (a stride through) validation. */
export function rankingHeuristics(graph: Graph, rs: RankingSpec, data: { val: Examples; test: Examples }, seen: SeenDecision): HeuristicsResult {
  const k = rs.top_k;
  const h = new HeuristicLists(graph, rs, seen.exclude);
  const columns = h.columns;

  const ranked = (p: Params, ex: Examples, stride: number): { labels: Examples['label_items'] & object; ids: Int32Array; rows: number[] } => {
    const groups = byAnchor(ex, stride);
    const rows = [...groups.values()].flat();
    const ids = new Int32Array(rows.length * k).fill(-1);
    let at = 0;
    for (const [anchor, idx] of groups) {
      ids.set(h.rank(p, Int32Array.from(idx, (i) => ex.nodes[i]!), anchor).ids, at * k);
      at += idx.length;
    }
    const lo: number[] = [0];
    const flat: number[] = [];
    for (const e of rows) {
      for (let j = ex.label_items!.offsets[e]!; j < ex.label_items!.offsets[e + 1]!; j++) flat.push(ex.label_items!.items[j]!);
      lo.push(flat.length);
    }
    return { labels: { offsets: Int32Array.from(lo), items: Int32Array.from(flat) }, ids, rows };
  };
  /** every example's list in example order */
  const inOrder = (p: Params, ex: Examples): Int32Array => {
    const r = ranked(p, ex, 1);
    const out = new Int32Array(ex.nodes.length * k).fill(-1);
    r.rows.forEach((e, j) => out.set(r.ids.subarray(j * k, (j + 1) * k), e * k));
    return out;
  };
  const metrics = (p: Params, ex: Examples, stride = 1): RankingMetrics => {
    const r = ranked(p, ex, stride);
    return rankingMetrics(r.labels, r.ids, k);
  };
  const choiceStride = Math.max(1, Math.ceil(data.val.nodes.length / CHOICE_USERS));
  const choose = <T>(options: T[], params: (o: T) => Params, label: (o: T) => string): { best: T; scores: Record<string, number> } => {
    const scores: Record<string, number> = {};
    let best: T = options[0] as T;
    let bestScore = -1;
    for (const o of options) {
      const s = metrics(params(o), data.val, choiceStride).map_at_k;
      scores[label(o)] = round(s);
      if (s > bestScore) {
        best = o;
        bestScore = s;
      }
    }
    return { best, scores };
  };

  const windows = popularityWindows(rs.window);
  const pop = choose(windows, ([, w]) => ({ name: 'popularity', window: w }), ([n]) => n);
  const window = pop.best[1];
  const columnChoice = columns.length > 0 ? choose(columns.map((_, i) => i), (c) => ({ name: 'affinity', window, column: c }), (c) => columns[c]!.name) : null;
  const column = columnChoice?.best;
  const weight = choose([...BLEND_WEIGHTS], (w) => ({ name: 'repeat_affinity', window, column, weight: w }), (w) => String(w));
  const chosen: Record<RankingBaseline, Params> = {
    popularity: { name: 'popularity', window },
    repeat: { name: 'repeat' },
    affinity: { name: 'affinity', window, column },
    cooccurrence: { name: 'cooccurrence' },
    repeat_affinity: { name: 'repeat_affinity', window, column, weight: weight.best },
  };
  const baselines = {} as HeuristicsResult['baselines'];
  const lists = {} as HeuristicsResult['lists'];
  for (const name of RANKING_BASELINES) {
    lists[name] = { val: inOrder(chosen[name], data.val), test: inOrder(chosen[name], data.test) };
    baselines[name] = { val: rankingMetrics(data.val.label_items!, lists[name].val, k), test: rankingMetrics(data.test.label_items!, lists[name].test, k) };
  }
  const best_baseline = RANKING_BASELINES.reduce((a, b) => (baselines[b].val.map_at_k > baselines[a].val.map_at_k ? b : a));
  return {
    baselines,
    best_baseline,
    lists,
    record: {
      exclude_seen: seen,
      popularity: { window: pop.best[0], window_seconds: Number.isFinite(pop.best[1]) ? pop.best[1] : null, val_map_by_window: pop.scores },
      affinity: { column: column === undefined ? null : columns[column]!.name, val_map_by_column: columnChoice?.scores ?? {} },
      repeat_affinity: { repeat_weight: weight.best, val_map_by_weight: weight.scores },
    },
  };
}

/**
 * The settings heuristic `name` was chosen with, from the run's record, for `HeuristicLists.rank` over
 * today's graph; a DataError when the recorded affinity column is no longer an item attribute.
 */
export function recordedParams(record: HeuristicsRecord, name: RankingBaseline, columns: ItemAttribute[], rs: RankingSpec): Params {
  const named = popularityWindows(rs.window).find(([n]) => n === record.popularity.window)?.[1];
  const window = record.popularity.window_seconds ?? named ?? Number.POSITIVE_INFINITY;
  const columnName = record.affinity.column;
  const column = columnName === null ? undefined : columns.findIndex((c) => c.name === columnName);
  if (column === -1 && (name === 'affinity' || name === 'repeat_affinity')) {
    throw new DataError(`the run's ${name} heuristic uses the item column ${columnName}, which ${rs.item_table} no longer has as a categorical attribute`, {
      where: `${rs.item_table}.${columnName}`,
      hint: 'retrain on today\'s data, or serve the deep model (gnnctl predict --serve-model)',
    });
  }
  const col = column === -1 ? undefined : column;
  switch (name) {
    case 'popularity':
      return { name, window };
    case 'repeat':
    case 'cooccurrence':
      return { name };
    case 'affinity':
      return { name, window, column: col };
    case 'repeat_affinity':
      return { name, window, column: col, weight: record.repeat_affinity.repeat_weight };
    default:
      return assertUnreachable(name);
  }
}

export type { ServedChoice } from './ranking_choice.js';

function round(x: number): number {
  return Math.round(x * 1e5) / 1e5;
}
