/**
 * Ranking examples of a session recommender, from the graph's arrays: at each anchor t, every user with at
 * least one item in the target window (t + start, t + end] is an example, and its positives are the distinct
 * items of that window (the label definition of `task/ranking_target.ts`). The fact table's nodes are in
 * time order, so each window is one binary-searched range.
 */
import { isoSeconds } from '../../core/duration.js';
import { DataError } from '../../core/errors.js';
import { Rng } from '../../core/rng.js';
import type { Graph } from '../../graph/graph.js';
import { alignedEnd } from '../../task/split.js';
import type { RankingTarget } from '../../task/ranking_target.js';

export interface RankingExamples {
  /** user node per example */
  users: Int32Array;
  /** anchor (epoch seconds) per example */
  anchors: Float64Array;
  /** CSR over examples: positives of example e are items[ptr[e] .. ptr[e + 1]) (item node ids, ascending) */
  ptr: Int32Array;
  items: Int32Array;
  ranges: { train: [number, number]; val: [number, number]; test: [number, number] };
  split: { train: number[]; val: number; test: number; window: number };
}

export interface RankingAnchors {
  train: number[];
  val: number;
  test: number;
  window: number;
}

/** test = newest time − window (whole days when the window is), val = test − window, train stepping back. */
export function rankingAnchors(target: RankingTarget, timeRange: [number, number], trainAnchors: number): RankingAnchors {
  const window = target.end - target.start;
  const test = alignedEnd(timeRange[1], window) - window;
  const val = test - window;
  if (val <= timeRange[0]) throw new DataError(`the data span ${isoSeconds(timeRange[0])} … ${isoSeconds(timeRange[1])} is too short for a ${window / 86400}-day window`, { hint: 'use more data or a shorter window' });
  const train: number[] = [];
  for (let k = 1; k <= trainAnchors; k++) {
    const a = val - k * window;
    if (a <= timeRange[0]) break;
    train.unshift(a);
  }
  if (!train.length) throw new DataError(`no training anchor fits in the data before the val anchor ${isoSeconds(val)}`, { hint: 'use more data or a shorter window' });
  return { train, val, test, window };
}

/** The fk parent array of `table.column` (−1 where null). */
export function fkParents(graph: Graph, table: string, column: string): Int32Array {
  const e = graph.edges.find((x) => x.kind === 'fk' && x.src === table && x.meta.column === column);
  if (!e) throw new DataError(`the graph has no foreign key ${table}.${column}`, { hint: 'rebuild the graph (gnnctl graph build --force)' });
  return e.parent!;
}

/** First index in the ascending `time` with time > t. */
export function firstAfter(time: Float64Array, t: number): number {
  let lo = 0;
  let hi = time.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (time[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function rankingExamples(graph: Graph, target: RankingTarget, anchors: RankingAnchors, opts: { maxTrain?: number; seed: number }): RankingExamples {
  const time = graph.table(target.fact_table).time!;
  const userFk = fkParents(graph, target.fact_table, target.user_column);
  const itemFk = fkParents(graph, target.fact_table, target.item_column);
  const perAnchor = (t: number): { users: number[]; lists: number[][] } => {
    const lo = firstAfter(time, t + target.start);
    const hi = firstAfter(time, t + target.end);
    const byUser = new Map<number, Set<number>>();
    for (let v = lo; v < hi; v++) {
      const u = userFk[v]!;
      const i = itemFk[v]!;
      if (u < 0 || i < 0) continue;
      let s = byUser.get(u);
      if (!s) byUser.set(u, (s = new Set()));
      s.add(i);
    }
    const users = [...byUser.keys()].sort((a, b) => a - b);
    return { users, lists: users.map((u) => [...byUser.get(u)!].sort((a, b) => a - b)) };
  };
  const users: number[] = [];
  const times: number[] = [];
  const ptr: number[] = [0];
  const items: number[] = [];
  const push = (t: number, u: number, list: number[]): void => {
    users.push(u);
    times.push(t);
    items.push(...list);
    ptr.push(items.length);
  };
  const train: { t: number; u: number; list: number[] }[] = [];
  for (const t of anchors.train) {
    const p = perAnchor(t);
    p.users.forEach((u, i) => train.push({ t, u, list: p.lists[i]! }));
  }
  let kept = train;
  if (opts.maxTrain && train.length > opts.maxTrain) {
    const order = new Rng(opts.seed ^ 0x5e55).shuffle(Uint32Array.from(train.keys())).subarray(0, opts.maxTrain);
    kept = Array.from(order).sort((a, b) => a - b).map((i) => train[i]!);
  }
  for (const e of kept) push(e.t, e.u, e.list);
  const nTrain = users.length;
  const val = perAnchor(anchors.val);
  val.users.forEach((u, i) => push(anchors.val, u, val.lists[i]!));
  const test = perAnchor(anchors.test);
  test.users.forEach((u, i) => push(anchors.test, u, test.lists[i]!));
  const nVal = val.users.length;
  const ranges = { train: [0, nTrain] as [number, number], val: [nTrain, nTrain + nVal] as [number, number], test: [nTrain + nVal, users.length] as [number, number] };
  for (const [k, r] of Object.entries(ranges)) {
    if (r[1] <= r[0]) throw new DataError(`the ranking task has no ${k} examples (no user has an item in the window after the ${k} anchor)`, { hint: 'check the query window and the data span' });
  }
  return { users: Int32Array.from(users), anchors: Float64Array.from(times), ptr: Int32Array.from(ptr), items: Int32Array.from(items), ranges, split: { ...anchors } };
}
