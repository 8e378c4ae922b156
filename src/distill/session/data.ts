/**
 * The session recommender's inputs for each (user, anchor) example, with the temporal rules of
 * docs/architecture.md: the session is the user's last N fact rows strictly before t − real_time_offset
 * (the entity hop path `<user>.<pk>-><fact>.<user fk>`, read from the time-sorted reverse CSR), and the user
 * and item embeddings are the base runs' (for a ranking run's items: e_i, GNN part + learned vector) as of the snapshot a daily job would have published:
 * a = grid(t − min_embedding_offset), usable when a ≥ t − max_embedding_offset.
 */
import { DataError } from '../../core/errors.js';
import { info } from '../../core/log.js';
import { embedExact, tableDepth } from '../../embed/layerwise.js';
import type { Graph } from '../../graph/graph.js';
import type { DeepModel } from '../../model/deep_model.js';
import type { SessionBatch } from '../../model/student/session_model.js';
import type { SessionSpec } from '../../model/student/session_spec.js';
import type { HopPath } from '../../task/task_spec.js';
import type { RankingTarget } from '../../task/ranking_target.js';
import { entityRtiElements, gridAnchor } from '../data.js';
import { fkParents } from './examples.js';
import { tableVectorsAt } from './teacher.js';

const DAY = 86400;

/** The user's own fact rows as an entity hop path (`customers.customer_id->transactions.customer_id`). */
export function sessionHopPath(target: RankingTarget, maxLength: number): HopPath {
  return {
    text: `${target.user_table}.${target.user_key}->${target.fact_table}.${target.user_column}`,
    fact_table: target.user_table,
    fact_column: target.user_key,
    parent_table: target.user_table,
    parent_key: target.user_key,
    child_table: target.fact_table,
    child_column: target.user_column,
    max_length: maxLength,
  };
}

/** Every example's session inputs (as a SessionBatch of all examples; elements most recent first) and its snapshot. */
export interface SessionData extends SessionBatch {
  /** snapshot index per example, and per snapshot its anchor and the item table B [items × item.dim] */
  snapshot: Int32Array;
  snapshots: { anchor: number; items: Float32Array }[];
}

/** Session element lists (fact nodes, −1 none) → item rows, masks and Δ per example. */
export function sessionElements(graph: Graph, target: RankingTarget, maxLength: number, users: Int32Array, anchors: Float64Array, offset: number): { elements: Int32Array; items: Int32Array; mask: Float32Array; delta: Float32Array } {
  const elements = entityRtiElements(graph, sessionHopPath(target, maxLength), users, anchors, offset);
  const itemFk = fkParents(graph, target.fact_table, target.item_column);
  const time = graph.table(target.fact_table).time!;
  const nItems = graph.table(target.item_table).rows;
  const items = new Int32Array(elements.length).fill(nItems);
  const mask = new Float32Array(elements.length);
  const delta = new Float32Array(elements.length);
  const N = maxLength;
  for (let s = 0; s < elements.length; s++) {
    const el = elements[s]!;
    if (el < 0) continue;
    const it = itemFk[el]!;
    items[s] = it < 0 ? nItems : it;
    mask[s] = 1;
    delta[s] = Math.max(0, Math.fround((anchors[Math.floor(s / N)]! - time[el]!) / DAY));
  }
  return { elements, items, mask, delta };
}

export interface EmbeddingProviders {
  user: DeepModel;
  item: DeepModel;
  userCap: number;
  itemCap: number;
}

/** Checks that each base model represents its table (above the input layer of its training tree). */
export function checkProviders(p: EmbeddingProviders, target: RankingTarget, runs: { user: string; item: string }): { userDepth: number; itemDepth: number } {
  const userDepth = tableDepth(p.user, target.user_table);
  const itemDepth = tableDepth(p.item, target.item_table);
  if (userDepth === null) throw new DataError(`the user base run ${runs.user} has no representation of ${target.user_table}`, { where: 'session_recommender.user_base', hint: `use a task FOR EACH ${target.user_table}.${target.user_key} (e.g. churn)` });
  if (itemDepth === null) throw new DataError(`the item base run ${runs.item} has no representation of ${target.item_table}`, { where: 'session_recommender.item_base', hint: `use a task FOR EACH ${target.item_table}.${target.item_key} (e.g. item_sales), or a deeper model` });
  return { userDepth, itemDepth };
}

export function sessionData(
  graph: Graph,
  target: RankingTarget,
  spec: SessionSpec,
  providers: EmbeddingProviders,
  users: Int32Array,
  anchors: Float64Array,
  o: { realTimeOffset: number; minOffset: number; maxOffset: number; cadence: number },
  { userDepth, itemDepth }: { userDepth: number; itemDepth: number },
): SessionData {
  const n = users.length;
  const session = sessionElements(graph, target, spec.session.max_length, users, anchors, o.realTimeOffset);
  const du = spec.user.dim;
  const user = new Float32Array(n * du);
  const userMissing = new Float32Array(n).fill(1);
  const snapshot = new Int32Array(n).fill(-1);
  const byAnchor = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const a = gridAnchor(anchors[i]! - o.minOffset, o.cadence);
    if (a < anchors[i]! - o.maxOffset) throw new DataError(`no embedding snapshot within max_embedding_offset of the anchor`, { where: 'session_recommender', hint: 'embedding_cadence must be at most max_embedding_offset − min_embedding_offset' });
    let l = byAnchor.get(a);
    if (!l) byAnchor.set(a, (l = []));
    l.push(i);
  }
  const allItems = Int32Array.from({ length: spec.items }, (_, i) => i);
  const snapshots: { anchor: number; items: Float32Array }[] = [];
  for (const a of [...byAnchor.keys()].sort((x, y) => x - y)) {
    const rows = byAnchor.get(a)!;
    const unique = Int32Array.from(new Set(rows.map((i) => users[i]!))).sort();
    const emb = embedExact(providers.user, target.user_table, userDepth, unique, a, providers.userCap);
    const rowOf = new Map<number, number>();
    unique.forEach((v, k) => rowOf.set(v, k));
    for (const i of rows) {
      const k = rowOf.get(users[i]!)!;
      user.set(emb.subarray(k * du, (k + 1) * du), i * du);
      userMissing[i] = 0;
      snapshot[i] = snapshots.length;
    }
    snapshots.push({ anchor: a, items: tableVectorsAt(providers.item, target.item_table, itemDepth, allItems, a, providers.itemCap) });
  }
  info(`recommender: ${snapshots.length} embedding snapshots of ${target.user_table} and ${target.item_table} for ${n} examples`);
  return { n, user, userMissing, items: session.items, mask: session.mask, delta: session.delta, snapshot, snapshots };
}

/** The model's batch for rows `rows` of the data (all rows must share one snapshot). */
export function sessionBatch(spec: SessionSpec, d: SessionData, rows: ArrayLike<number>): SessionBatch {
  const m = rows.length;
  const N = spec.session.max_length;
  const du = spec.user.dim;
  const b: SessionBatch = { n: m, user: new Float32Array(m * du), userMissing: new Float32Array(m), items: new Int32Array(m * N), mask: new Float32Array(m * N), delta: new Float32Array(m * N) };
  for (let k = 0; k < m; k++) {
    const r = rows[k]!;
    b.user.set(d.user.subarray(r * du, (r + 1) * du), k * du);
    b.userMissing[k] = d.userMissing[r]!;
    b.items.set(d.items.subarray(r * N, (r + 1) * N), k * N);
    b.mask.set(d.mask.subarray(r * N, (r + 1) * N), k * N);
    b.delta.set(d.delta.subarray(r * N, (r + 1) * N), k * N);
  }
  return b;
}
