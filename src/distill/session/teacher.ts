/**
 * The deep recommender (a ranking run of the same task) as the session recommender's teacher: its full
 * catalogue scores for each (user, anchor) example, computed as `predict` computes them (h_u and e_i at the
 * anchor itself, popularity, the pair-wise scores of the user's own history; `model/context_gnn.ts`), so the
 * student can be pulled towards the teacher's whole ranking, not only the handful of label items.
 *
 * Distillation target per example: (1 − λ) · uniform(labels) + λ · softmax(teacher scores), λ = kd_weight.
 */
import { tf } from '../../core/tf.js';
import { embedExact } from '../../embed/layerwise.js';
import type { Graph } from '../../graph/graph.js';
import type { DeepModel } from '../../model/deep_model.js';
import { pairCells, popularityCache, userHistories, type Histories } from '../../model/context_gnn.js';
import type { RankingExamples } from './examples.js';

/**
 * Every row of `table` at `anchor` as the base run represents it: the GNN embedding, plus the learned
 * per-item vector when the run is a recommender and `table` is its item table (its e_i).
 */
export function tableVectorsAt(model: DeepModel, table: string, depth: number, nodes: Int32Array, anchor: number, cap: number): Float32Array {
  const gnn = embedExact(model, table, depth, nodes, anchor, cap);
  if (!model.ranking || model.spec.ranking!.item_table !== table) return gnn;
  const e = tf.tidy(() => model.ranking!.itemEmbeddings(tf.tensor2d(gnn, [nodes.length, model.spec.channels]), nodes));
  const out = e.dataSync() as Float32Array;
  e.dispose();
  return out;
}

export class RankingTeacher {
  private readonly users: Float32Array;
  private readonly items = new Map<number, tf.Tensor2D>();
  private readonly pop: (anchor: number) => Float32Array;
  private readonly histories: Histories;
  private readonly C: number;

  constructor(private readonly model: DeepModel, graph: Graph, ex: RankingExamples, nItems: number, cap: number) {
    const rs = model.spec.ranking!;
    this.C = model.spec.channels;
    this.users = new Float32Array(ex.users.length * this.C);
    const byAnchor = new Map<number, number[]>();
    ex.anchors.forEach((t, e) => {
      let l = byAnchor.get(t);
      if (!l) byAnchor.set(t, (l = []));
      l.push(e);
    });
    const all = Int32Array.from({ length: nItems }, (_, i) => i);
    const userTable = model.spec.root;
    for (const [t, rows] of byAnchor) {
      const unique = Int32Array.from(new Set(rows.map((e) => ex.users[e]!))).sort();
      const h = embedExact(model, userTable, 0, unique, t, cap);
      const at = new Map<number, number>();
      unique.forEach((u, k) => at.set(u, k));
      for (const e of rows) {
        const k = at.get(ex.users[e]!)!;
        this.users.set(h.subarray(k * this.C, (k + 1) * this.C), e * this.C);
      }
      this.items.set(t, tf.tensor2d(tableVectorsAt(model, rs.item_table, 0, all, t, cap), [nItems, this.C]));
    }
    this.pop = popularityCache(graph, rs);
    this.histories = userHistories(graph, rs, ex.users, ex.anchors, this.pop);
  }

  /** Teacher scores [rows, items] for examples `rows` (all at the same anchor `t`). Call inside `tf.tidy`. */
  scores(rows: ArrayLike<number>, t: number): tf.Tensor2D {
    const E = this.items.get(t)!;
    const M = E.shape[0];
    const u = new Float32Array(rows.length * this.C);
    for (let r = 0; r < rows.length; r++) u.set(this.users.subarray(rows[r]! * this.C, (rows[r]! + 1) * this.C), r * this.C);
    return this.model.ranking!.scores(tf.tensor2d(u, [rows.length, this.C]), E, this.pop(t), pairCells(this.histories, rows, M, (i) => (i < M ? i : -1)));
  }

  dispose(): void {
    for (const t of this.items.values()) t.dispose();
  }
}
