/**
 * The deep ranking model of ranking tasks (the distilled session model is the "recommender"): a
 * ContextGNN-style model (Yuan et al., "ContextGNN: Beyond Two-Tower Recommendation Systems", ICLR 2025)
 * on the temporal sampler. For a user u at anchor t and an
 * item i:
 *
 *   h_u    = GNN(tree rooted at u, neighbours with time ≤ t)                 the user side, [C]
 *   e_i(t) = GNN(tree rooted at i, neighbours with time ≤ t) + v_i            the item side, [C]:
 *            the item's own neighbourhood (its recent buyers and what else they bought) plus a learned
 *            per-item vector v_i (zero for items the run never saw: the cold-start path is the GNN part)
 *   pop_i  = log(1 + purchases of i in (t − window, t])                      the item's current demand
 *   two_tower(u, i) = h_u · e_i + w_pop · pop_i
 *   pair(u, i)      = MLP([log(1 + n_ui), log(1 + days since u last bought i), pop_i, n_ui / |H_u|])   for i ∈ H_u(t)
 *   score(u, i)     = two_tower(u, i) + σ(w_g · h_u + b_g) · pair(u, i) · [i ∈ H_u(t)]
 *
 * H_u(t) is the user's own subgraph: the items of the user's last `history` interactions before t (the
 * first hop of the training tree with `last` sampling, widened to at least MIN_HISTORY interactions so
 * that a habit shows in the counts), with n_ui the number of those interactions with i.
 * As in ContextGNN, items in the user's subgraph get a pair-wise score from what the user did with them, all
 * others the two-tower score, and a learned per-user gate fuses the two (a user who re-buys leans on
 * the pair score, an explorer on the two-tower one).
 *
 * The GNN weights are the deep model's (one `HeteroGnn` whose layout covers both trees), so `gnnctl embed
 * --table <users>` gives h_u and `--table <items>` gives the GNN part of e_i. Everything here works on
 * plain typed arrays plus a few fat TF.js ops per batch (docs/architecture.md, Compute).
 */
import { tf } from '../core/tf.js';
import type { Graph, EdgeType } from '../graph/graph.js';
import { ArtifactError } from '../core/errors.js';
import { Rng } from '../core/rng.js';
import type { ParamStore } from './params.js';
import { upperBound } from './sampler.js';
import { CatalogueTopK } from '../compute/catalogue_top_k.js';
import { rankingSoftmax } from '../compute/fused.js';

/** What a ranking run adds to the model spec (`ModelSpec.ranking`). */
export interface RankingSpec {
  /** the items' table (the one the listed foreign key points to) */
  item_table: string;
  /** items with a learned vector: node ids [0, item_count) of the training graph */
  item_count: number;
  /** the interactions' table and its edges: user → interactions (rev), interaction → item (fk), item → interactions (rev) */
  fact_table: string;
  user_edge: string;
  item_fk_edge: string;
  item_edge: string;
  /** interactions before the anchor that give a user's candidate items (H_u) */
  history: number;
  /** seconds: the popularity window (the task's label window) */
  window: number;
  /** the k of RANK TOP k */
  top_k: number;
  /** hidden units of the pair-wise MLP */
  pair_hidden: number;
  /** inputs of the pair-wise MLP (PAIR_FEATURES when the run was trained): a run with others is refused */
  pair_features: number;
}

export const PAIR_FEATURES = 4;
/** interactions H_u covers at least: on the synthetic data 10 (a first-hop fanout) missed a third of re-buys that 50 saw */
export const MIN_HISTORY = 50;

/** Finds the edges of a ranking task's interaction table in the graph. */
export function rankingEdges(graph: Pick<Graph, 'edges'>, user: string, fact: string, itemColumn: string): { user_edge: string; item_fk_edge: string; item_edge: string; item_table: string } {
  const find = (p: (e: EdgeType) => boolean, what: string): EdgeType => {
    const e = graph.edges.find(p);
    if (!e) throw new Error(`ranking: the graph has no ${what} edge`);
    return e;
  };
  const itemFk = find((e) => e.kind === 'fk' && e.src === fact && e.meta.column === itemColumn, `${fact}.${itemColumn}`);
  const userEdge = find((e) => e.kind === 'rev' && e.src === user && e.dst === fact, `${user}<-${fact}`);
  const itemEdge = find((e) => e.kind === 'rev' && e.src === itemFk.dst && e.dst === fact && e.meta.column === itemColumn, `${itemFk.dst}<-${fact}.${itemColumn}`);
  return { user_edge: userEdge.name, item_fk_edge: itemFk.name, item_edge: itemEdge.name, item_table: itemFk.dst };
}

/**
 * Users' own subgraphs H_u(t): per user, the distinct items of the last `history` interactions with time
 * ≤ its anchor, with the pair features of each (CSR over users).
 */
export interface Histories {
  offsets: Int32Array;
  items: Int32Array;
  /** [items.length × PAIR_FEATURES] */
  features: Float32Array;
}

/** Reads H_u(t) from the graph's time-sorted CSR; nothing after the anchor is read. */
export function userHistories(graph: Graph, rs: RankingSpec, users: Int32Array, anchors: ArrayLike<number>, pop: (anchor: number) => Float32Array): Histories {
  const edges = new Map(graph.edges.map((e) => [e.name, e]));
  const ue = edges.get(rs.user_edge)!;
  const fk = edges.get(rs.item_fk_edge)!;
  const factTime = graph.tables[rs.fact_table]!.time!;
  const offsets = new Int32Array(users.length + 1);
  const items: number[] = [];
  const feats: number[] = [];
  const count = new Map<number, number>();
  const last = new Map<number, number>();
  for (let u = 0; u < users.length; u++) {
    offsets[u] = items.length;
    const anchor = anchors[u]!;
    const p = pop(anchor);
    const start = ue.indptr![users[u]!]!;
    const end = upperBound(ue.indices!, factTime, start, ue.indptr![users[u]! + 1]!, anchor);
    count.clear();
    last.clear();
    const first = Math.max(start, end - rs.history);
    for (let j = end - 1; j >= first; j--) {
      const row = ue.indices![j]!;
      const item = fk.parent![row]!;
      if (item < 0) continue;
      count.set(item, (count.get(item) ?? 0) + 1);
      if (!last.has(item)) last.set(item, factTime[row]!);
    }
    for (const [item, n] of count) {
      items.push(item);
      feats.push(Math.log1p(n), Math.log1p(Math.max(0, anchor - last.get(item)!) / 86400), p[item] ?? 0, n / (end - first));
    }
  }
  offsets[users.length] = items.length;
  return { offsets, items: Int32Array.from(items), features: Float32Array.from(feats) };
}

/** pop_i at an anchor for every item: log(1 + interactions in (anchor − window, anchor]). */
export function itemPopularity(graph: Graph, rs: RankingSpec, anchor: number): Float32Array {
  const ie = graph.edges.find((e) => e.name === rs.item_edge)!;
  const factTime = graph.tables[rs.fact_table]!.time!;
  const n = graph.tables[rs.item_table]!.rows;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const lo = ie.indptr![i]!;
    const hi = ie.indptr![i + 1]!;
    const end = upperBound(ie.indices!, factTime, lo, hi, anchor);
    const begin = upperBound(ie.indices!, factTime, lo, end, anchor - rs.window);
    out[i] = Math.log1p(end - begin);
  }
  return out;
}

/** Memoizes `itemPopularity` per anchor (training revisits a handful of anchors). */
export function popularityCache(graph: Graph, rs: RankingSpec): (anchor: number) => Float32Array {
  const cache = new Map<number, Float32Array>();
  return (anchor) => {
    let p = cache.get(anchor);
    if (!p) cache.set(anchor, (p = itemPopularity(graph, rs, anchor)));
    return p;
  };
}

/**
 * The recommender's own weights (the GNN's live in `HeteroGnn`): per-item vectors, the popularity weight,
 * the pair-wise MLP and the fusion gate. Names start with `rank/`.
 */
export class RankingHead {
  readonly itemVectors: tf.Variable;
  readonly popWeight: tf.Variable;
  readonly pair1w: tf.Variable;
  readonly pair1b: tf.Variable;
  readonly pair2w: tf.Variable;
  readonly pair2b: tf.Variable;
  readonly gatew: tf.Variable;
  readonly gateb: tf.Variable;

  constructor(params: ParamStore, readonly rs: RankingSpec, readonly channels: number) {
    if (rs.pair_features !== PAIR_FEATURES) {
      throw new ArtifactError(`the ranking run's pair-wise scores read ${rs.pair_features} features per (user, item); this gnnctl computes ${PAIR_FEATURES}`, { hint: 'retrain the ranking task with this gnnctl (gnnctl train --task …)' });
    }
    // Small initial item vectors: at the start the GNN part decides, the ID part learns what it misses.
    this.itemVectors = params.normal('rank/item_vectors', [Math.max(1, rs.item_count), channels], 0.01);
    this.popWeight = params.ones('rank/pop_weight', [1]);
    this.pair1w = params.glorot('rank/pair/w1', [PAIR_FEATURES, rs.pair_hidden]);
    this.pair1b = params.zeros('rank/pair/b1', [rs.pair_hidden]);
    this.pair2w = params.glorot('rank/pair/w2', [rs.pair_hidden, 1]);
    this.pair2b = params.zeros('rank/pair/b2', [1]);
    this.gatew = params.zeros('rank/gate/w', [channels, 1]);
    this.gateb = params.zeros('rank/gate/b', [1]);
  }

  /** e_i = GNN part + v_i (v_i = 0 for items beyond the training catalogue). Call inside `tidy`. */
  itemEmbeddings(gnn: tf.Tensor2D, items: Int32Array): tf.Tensor2D {
    const known = this.rs.item_count;
    if (items.every((i) => i < known)) return gnn.add(tf.gather(this.itemVectors, tf.tensor1d(items, 'int32'))) as tf.Tensor2D;
    const idx = Int32Array.from(items, (i) => (i < known ? i : 0));
    const mask = tf.tensor2d(Float32Array.from(items, (i) => (i < known ? 1 : 0)), [items.length, 1]);
    return gnn.add(tf.gather(this.itemVectors, tf.tensor1d(idx, 'int32')).mul(mask)) as tf.Tensor2D;
  }

  /**
   * Scores of users × candidate items. `users` [B, C], `items` [M, C] (from `itemEmbeddings`), `pop` [M];
   * `cells` places each history entry of the B users that is among the M candidates: cell b·M + m → its
   * row in `features` (see `pairCells`). Call inside `tidy`. Returns [B, M].
   */
  scores(users: tf.Tensor2D, items: tf.Tensor2D, pop: Float32Array, pair: PairCells): tf.Tensor2D {
    const B = users.shape[0];
    const M = items.shape[0];
    let s = tf.matMul(users, items, false, true).add(tf.tensor2d(pop, [1, M]).mul(this.popWeight)) as tf.Tensor2D;
    if (pair.count > 0) {
      const p = this.pairScores(tf.tensor2d(pair.features, [pair.count, PAIR_FEATURES]));
      // Row 0 is the "not in H_u" value 0: one gather turns the sparse pair scores into the dense matrix.
      const dense = tf.gather(tf.concat([tf.zeros([1]), p]), tf.tensor1d(pair.cell, 'int32')).reshape([B, M]);
      s = s.add(dense.mul(this.gates(users))) as tf.Tensor2D;
    }
    return s;
  }

  /**
   * The training loss of `users` [B, C] against candidates `items` [M, C]: `scores` and the multi-positive
   * sampled softmax over them (`positives` [B·M] 0/1), fused into one op each way (fused.ts
   * `rankingSoftmax`; as standard ops they were a third of a training step). Call inside a gradient scope.
   */
  trainingLoss(users: tf.Tensor2D, items: tf.Tensor2D, pop: Float32Array, pair: PairCells, positives: Float32Array): tf.Scalar {
    const B = users.shape[0];
    const logits = tf.matMul(users, items, false, true) as tf.Tensor2D;
    // Without pair cells the gate is never read: zeros keep it (and the pair MLP) out of the gradient, as in `scores`.
    const values = pair.count > 0 ? this.pairScores(tf.tensor2d(pair.features, [pair.count, PAIR_FEATURES])) : (tf.zeros([0]) as tf.Tensor1D);
    const gate = pair.count > 0 ? this.gates(users) : (tf.zeros([B, 1]) as tf.Tensor2D);
    return rankingSoftmax(logits, this.popWeight, pop, values, pair.cell, gate, positives);
  }

  /** pair(u, i) for rows of pair features [P, PAIR_FEATURES] → [P]. Call inside `tidy`. */
  pairScores(features: tf.Tensor2D): tf.Tensor1D {
    return tf.relu(features.matMul(this.pair1w).add(this.pair1b)).matMul(this.pair2w).add(this.pair2b).reshape([-1]) as tf.Tensor1D;
  }

  /** The fusion gate σ(w_g · h_u + b_g) per user: [B, C] → [B, 1]. Call inside `tidy`. */
  gates(users: tf.Tensor2D): tf.Tensor2D {
    return tf.sigmoid(users.matMul(this.gatew).add(this.gateb)) as tf.Tensor2D;
  }
}

/** The pair-wise part's inputs for B users × M candidates: per cell, 0 (no pair score) or 1 + feature row. */
export interface PairCells {
  cell: Int32Array;
  features: Float32Array;
  count: number;
}

/** Places users' histories on a B × M candidate grid (`column` maps an item to its candidate column, or −1). */
export function pairCells(h: Histories, userRows: ArrayLike<number>, M: number, column: (item: number) => number): PairCells {
  const B = userRows.length;
  const cell = new Int32Array(B * M);
  const feats: number[] = [];
  let count = 0;
  for (let b = 0; b < B; b++) {
    const u = userRows[b]!;
    for (let j = h.offsets[u]!; j < h.offsets[u + 1]!; j++) {
      const m = column(h.items[j]!);
      if (m < 0) continue;
      count++;
      cell[b * M + m] = count;
      for (let f = 0; f < PAIR_FEATURES; f++) feats.push(h.features[j * PAIR_FEATURES + f]!);
    }
  }
  return { cell, features: Float32Array.from(feats), count };
}

/**
 * Top k of each row of a [rows × n] score matrix, best first (ties: lower index first). A partial
 * selection per row over the typed array: O(n + k log k) per row, no full sort.
 */
export function topK(scores: Float32Array, rows: number, n: number, k: number, outIdx: Int32Array, outScore: Float32Array, outOffset = 0): void {
  const kk = Math.min(k, n);
  const heapIdx = new Int32Array(kk);
  const heapVal = new Float32Array(kk);
  for (let r = 0; r < rows; r++) {
    const base = r * n;
    // A min-heap of the best kk seen so far (root = the worst of them).
    let size = 0;
    for (let i = 0; i < n; i++) {
      const x = scores[base + i]!;
      // NaN ranks last. Once the heap is full only a strictly greater value enters: indices rise along the
      // scan, so an equal value comes later and loses the tie. This one comparison is the whole cost for
      // almost every element.
      const v = x !== x ? -Infinity : x;
      if (size === kk && !(v > heapVal[0]!)) continue;
      if (size < kk) {
        let j = size++;
        while (j > 0) {
          const p = (j - 1) >> 1;
          if (worse(heapVal[p]!, heapIdx[p]!, v, i)) break;
          heapVal[j] = heapVal[p]!;
          heapIdx[j] = heapIdx[p]!;
          j = p;
        }
        heapVal[j] = v;
        heapIdx[j] = i;
      } else if (worse(heapVal[0]!, heapIdx[0]!, v, i)) {
        let j = 0;
        for (;;) {
          const l = 2 * j + 1;
          if (l >= kk) break;
          const c = l + 1 < kk && worse(heapVal[l + 1]!, heapIdx[l + 1]!, heapVal[l]!, heapIdx[l]!) ? l + 1 : l;
          if (!worse(heapVal[c]!, heapIdx[c]!, v, i)) break;
          heapVal[j] = heapVal[c]!;
          heapIdx[j] = heapIdx[c]!;
          j = c;
        }
        heapVal[j] = v;
        heapIdx[j] = i;
      }
    }
    const order = Array.from({ length: size }, (_, j) => j).sort((a, b) => (worse(heapVal[a]!, heapIdx[a]!, heapVal[b]!, heapIdx[b]!) ? 1 : -1));
    const o = outOffset + r * k;
    for (let j = 0; j < k; j++) {
      if (j < size) {
        outIdx[o + j] = heapIdx[order[j]!]!;
        outScore[o + j] = scores[base + heapIdx[order[j]!]!]!;
      } else {
        outIdx[o + j] = -1;
        outScore[o + j] = Number.NaN;
      }
    }
  }
}

/** Whether (va, ia) ranks below (vb, ib): lower score, or equal score and higher index. */
function worse(va: number, ia: number, vb: number, ib: number): boolean {
  return va < vb || (va === vb && ia > ib);
}

/** A seeded sample of `count` distinct ids from [0, n) not already in `taken` (fewer if n runs out). */
export function sampleNegatives(n: number, count: number, taken: Set<number>, rng: Rng): number[] {
  const out: number[] = [];
  const want = Math.min(count, Math.max(0, n - taken.size));
  let guard = 0;
  while (out.length < want && guard++ < want * 20) {
    const i = rng.int(n);
    if (taken.has(i)) continue;
    taken.add(i);
    out.push(i);
  }
  return out;
}

/**
 * Exact top-k over the whole catalogue for users whose vectors are known: `users` [n × C] (h_u), `items`
 * [N × C] (e_i at the same anchor), `pop` [N], `histories` over the n users. The same formula as
 * `RankingHead.scores`, arranged for a catalogue: the two-tower part and the popularity term are one fused
 * matmul per chunk of users ([h_u, w_pop] · [e_i, pop_i]ᵀ on the tensor backend), the pair-wise part is
 * added only where it exists (the users' history cells, a few dozen per user, not a dense matrix), then a
 * partial top-k selection runs over the typed array. Returns item node ids (−1 past the catalogue's end)
 * and scores, k per user.
 */
export function rankCatalogue(head: RankingHead, users: Float32Array, items: Float32Array, pop: Float32Array, histories: Histories, k: number, chunk = 1024): { ids: Int32Array; scores: Float32Array } {
  const C = head.channels;
  const n = users.length / C;
  const N = items.length / C;
  const ids = new Int32Array(n * k);
  const scores = new Float32Array(n * k);
  if (n === 0) return { ids, scores };
  const E = tf.tidy(() => tf.concat([tf.tensor2d(items, [N, C]), tf.tensor2d(pop.subarray(0, N), [N, 1])], 1));
  try {
    for (let lo = 0; lo < n; lo += chunk) {
      const hi = Math.min(n, lo + chunk);
      const B = hi - lo;
      const hLo = histories.offsets[lo]!;
      const hHi = histories.offsets[hi]!;
      const [s, p, g] = tf.tidy(() => {
        const u = tf.tensor2d(users.subarray(lo * C, hi * C), [B, C]);
        const s = tf.matMul(tf.concat([u, head.popWeight.reshape([1, 1]).tile([B, 1])], 1), E, false, true);
        const p = hHi > hLo ? head.pairScores(tf.tensor2d(histories.features.subarray(hLo * PAIR_FEATURES, hHi * PAIR_FEATURES), [hHi - hLo, PAIR_FEATURES])) : tf.zeros([0]);
        return [s, p, head.gates(u)];
      });
      const values = s.dataSync() as Float32Array;
      const pair = p.dataSync() as Float32Array;
      const gate = g.dataSync() as Float32Array;
      tf.dispose([s, p, g]);
      for (let b = 0; b < B; b++) {
        for (let j = histories.offsets[lo + b]!; j < histories.offsets[lo + b + 1]!; j++) {
          const item = histories.items[j]!;
          if (item < N) values[b * N + item]! += gate[b]! * pair[j - hLo]!;
        }
      }
      topK(values, B, N, k, ids, scores, lo * k);
    }
  } finally {
    E.dispose();
  }
  return { ids, scores };
}

/**
 * The catalogue side of `rankCatalogueOnnx`: [e_i, pop_i] for the first `n` items (`items` [≥ n × C], `pop`
 * [≥ n]) in an onnxruntime session returning the top min(k, n). No spin-waiting: on the shared 2-core
 * machine the pool threads' spinning cost 13% more CPU and 10% more wall time for 100,000 × 10,000 scores
 * (2.39 vs 2.77 CPU-s at load 13), and neither `predict` nor evaluation has other latency to hide.
 * The caller releases it.
 */
export async function catalogueKernel(items: Float32Array, pop: Float32Array, n: number, C: number, k: number): Promise<CatalogueTopK> {
  const catalogue = new Float32Array(n * (C + 1));
  for (let i = 0; i < n; i++) {
    catalogue.set(items.subarray(i * C, (i + 1) * C), i * (C + 1));
    catalogue[i * (C + 1) + C] = pop[i]!;
  }
  return CatalogueTopK.create(catalogue, C + 1, Math.min(k, n), { spinning: false });
}

/**
 * `rankCatalogue` on onnxruntime (`compute/catalogue_top_k.ts`): the same scores and the same selection
 * (ties: lower index first), with the fused matmul and the top-k on every core instead of tfjs-wasm plus a
 * JS scan. `kernel` holds [e_i, pop_i] for the N items (dim C + 1); the pair-wise part goes in as each
 * user's sparse additions gate_u · pair(u, i), in chunks of `chunk` users. (onnxruntime-node runs a session
 * on the calling thread plus its pool, so there is nothing to overlap with it here.) Returns item node ids
 * (−1 past the catalogue's end) and scores.
 */
export async function rankCatalogueOnnx(head: RankingHead, kernel: CatalogueTopK, users: Float32Array, histories: Histories, k: number, chunk = 2048): Promise<{ ids: Int32Array; scores: Float32Array }> {
  const C = head.channels;
  const n = users.length / C;
  const N = kernel.items;
  const kk = kernel.k;
  const ids = new Int32Array(n * k).fill(-1);
  const scores = new Float32Array(n * k).fill(Number.NaN);
  const w = (head.popWeight.dataSync() as Float32Array)[0]!;
  const prepare = (lo: number) => {
    const hi = Math.min(n, lo + chunk);
    const B = hi - lo;
    const q = new Float32Array(B * (C + 1));
    for (let b = 0; b < B; b++) {
      q.set(users.subarray((lo + b) * C, (lo + b + 1) * C), b * (C + 1));
      q[b * (C + 1) + C] = w;
    }
    const hLo = histories.offsets[lo]!;
    const hHi = histories.offsets[hi]!;
    let P = 1;
    for (let b = 0; b < B; b++) P = Math.max(P, histories.offsets[lo + b + 1]! - histories.offsets[lo + b]!);
    const index = new Int32Array(B * P);
    const value = new Float32Array(B * P);
    if (hHi > hLo) {
      const [p, g] = tf.tidy(() => [head.pairScores(tf.tensor2d(histories.features.subarray(hLo * PAIR_FEATURES, hHi * PAIR_FEATURES), [hHi - hLo, PAIR_FEATURES])), head.gates(tf.tensor2d(users.subarray(lo * C, hi * C), [B, C]))]);
      const pair = p!.dataSync() as Float32Array;
      const gate = g!.dataSync() as Float32Array;
      tf.dispose([p!, g!]);
      for (let b = 0; b < B; b++) {
        let s = b * P;
        for (let j = histories.offsets[lo + b]!; j < histories.offsets[lo + b + 1]!; j++) {
          const item = histories.items[j]!;
          if (item >= N) continue;
          index[s] = item;
          value[s++] = gate[b]! * pair[j - hLo]!;
        }
      }
    }
    return { B, q, index, value, P };
  };
  for (let lo = 0; lo < n; lo += chunk) {
    const cur = prepare(lo);
    const r = await kernel.run(cur.q, cur.B, cur.index, cur.value, cur.P);
    for (let b = 0; b < cur.B; b++) {
      ids.set(r.ids.subarray(b * kk, (b + 1) * kk), (lo + b) * k);
      scores.set(r.scores.subarray(b * kk, (b + 1) * kk), (lo + b) * k);
    }
  }
  return { ids, scores };
}
