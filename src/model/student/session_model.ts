/**
 * The session-aware distilled recommender in TF.js (formulas in `session_spec.ts`; the ONNX export in
 * `export/session_onnx.ts` mirrors `query` and `catalogue` op by op).
 *
 *   u = (missing ? f_u : U[key]) · W_u + b_u
 *   h_j = ReLU([B̃[item_j] ‖ log1p(Δ_j)/5 ‖ min(Δ_j, 60)/60 ‖ ctx_j] · W_e + b_e),   B̃ = [B; f_i] (row I: unknown item)
 *   ctx_j = [exp(−r_j) ‖ exp(−r_j/4) ‖ log1p(r_j)/log1p(N) ‖ log(c_j)/log1p(N)]   (element_context: recency rank, count)
 *   mean = Σ mask·h / max(1, Σ mask);  attn = Σ α·h, α = softmax([s ‖ −1e9]), s = h·w_a + c_a (−1e9 where masked)
 *   q = W₂ ReLU(W₁ [u ‖ missing ‖ mean ‖ attn ‖ log(1 + n)/log(1 + N)] + b₁) + b₂
 *   V = B · W_v + b_v + E;   scores = q · Vᵀ + β + r               [n, items]
 *   r_i = Σ_{j: item_j = i} mask_j · (h_j · w_r + c_r)   the session's pair-wise term (ContextGNN's idea: items
 *                                                       the user just touched get a learned, recency-aware score)
 */
import { tf } from '../../core/tf.js';
import { ParamStore } from '../params.js';
import { MASKED_SCORE } from './student.js';
import { sessionElementInputDim, sessionHeadInputDim, type SessionSpec } from './session_spec.js';

/** One batch of requests, as typed arrays (built by `distill/session/data.ts` from training examples, or by `session_features.ts` from raw requests). */
export interface SessionBatch {
  n: number;
  /** [n × user.dim] base embeddings of the users (zeros where missing) */
  user: Float32Array;
  /** [n] 1 where the user has no embedding (unknown key): the learned fallback is used */
  userMissing: Float32Array;
  /** [n × N] row of each session element's item in the catalogue, `items` for an unknown item; any value where masked */
  items: Int32Array;
  /** [n × N] 1 for a real element, 0 for padding */
  mask: Float32Array;
  /** [n × N] Δ = max(0, anchor − t) in days, float32 */
  delta: Float32Array;
}

/**
 * Each element's place in its session [n·N, 4] (formula in `session_spec.ts`): recency rank r_j = #{real k:
 * Δ_k < Δ_j} and count c_j = #{real k: i_k = i_j}, compared pairwise over the [N, N] grid (N ≤ 1024).
 */
export function elementContext(delta: tf.Tensor2D, items: tf.Tensor2D, mask: tf.Tensor2D, maxLength: number): tf.Tensor2D {
  const [n, N] = delta.shape;
  const other = mask.reshape([n, 1, N]);
  const rank = tf.less(delta.reshape([n, 1, N]), delta.reshape([n, N, 1])).toFloat().mul(other).sum(2).reshape([n * N, 1]);
  const count = tf.equal(items.reshape([n, 1, N]), items.reshape([n, N, 1])).toFloat().mul(other).sum(2).reshape([n * N, 1]);
  const logN = Math.log1p(maxLength);
  return tf.concat([tf.exp(rank.neg()), tf.exp(rank.div(-4)), tf.log1p(rank).div(logN), tf.log(tf.maximum(count, 1)).div(logN)], 1) as tf.Tensor2D;
}

export class SessionModel {
  readonly params: ParamStore;
  private dropoutSeed = 1;

  constructor(readonly spec: SessionSpec, seed: number, private readonly dropout = 0.1) {
    if (!spec.use_user && !spec.use_rti) throw new Error('a session recommender needs the user embedding, the session, or both');
    this.params = new ParamStore(seed);
    const p = this.params;
    const s = spec;
    p.zeros('user/fallback', [s.user.dim]);
    p.glorot('user/proj_w', [s.user.dim, s.user_dim]);
    p.zeros('user/proj_b', [s.user_dim]);
    p.zeros('item/fallback', [s.item.dim]);
    p.glorot('rti/w', [sessionElementInputDim(s), s.element_dim]);
    p.zeros('rti/b', [s.element_dim]);
    p.glorot('rti/att_w', [s.element_dim, 1]);
    p.zeros('rti/att_b', [1]);
    p.glorot('rti/pair_w', [s.element_dim, 1]);
    p.zeros('rti/pair_b', [1]);
    p.glorot('head/w0', [sessionHeadInputDim(s), s.hidden]);
    p.zeros('head/b0', [s.hidden]);
    p.glorot('head/w1', [s.hidden, s.dim]);
    p.zeros('head/b1', [s.dim]);
    p.glorot('item/proj_w', [s.item.dim, s.dim]);
    p.zeros('item/proj_b', [s.dim]);
    p.normal('item/vector', [s.items, s.dim], 0.01);
    p.zeros('item/bias', [s.items]);
  }

  /** The request's query vector q [n, dim] and the session's pair-wise scores [n, items] (null without the session). `itemBase` is B [items, item.dim]. Call inside `tf.tidy`. */
  query(b: SessionBatch, itemBase: tf.Tensor2D, training: boolean): { q: tf.Tensor2D; pair: tf.Tensor2D | null } {
    const s = this.spec;
    const p = (name: string): tf.Variable => this.params.get(name);
    const n = b.n;
    const parts: tf.Tensor2D[] = [];
    let pair: tf.Tensor2D | null = null;
    if (s.use_user) {
      const m = tf.tensor2d(b.userMissing, [n, 1]);
      const e = tf.tensor2d(b.user, [n, s.user.dim]).mul(tf.scalar(1).sub(m)).add(p('user/fallback').reshape([1, s.user.dim]).mul(m)) as tf.Tensor2D;
      parts.push(tf.matMul(e, p('user/proj_w')).add(p('user/proj_b')) as tf.Tensor2D, m);
    }
    if (s.use_rti) {
      const N = s.session.max_length;
      const table = tf.concat([itemBase, p('item/fallback').reshape([1, s.item.dim])], 0);
      const idx = tf.tensor1d(b.items, 'int32');
      const delta = tf.tensor2d(b.delta, [n * N, 1]);
      const mask = tf.tensor2d(b.mask, [n, N]);
      const cols: tf.Tensor2D[] = [tf.gather(table, idx) as tf.Tensor2D, tf.log1p(delta).div(5), tf.minimum(delta, 60).div(60)];
      if (s.element_context) cols.push(elementContext(delta.reshape([n, N]) as tf.Tensor2D, idx.reshape([n, N]) as tf.Tensor2D, mask, N));
      const x = tf.concat(cols, 1) as tf.Tensor2D;
      const h = tf.relu(tf.matMul(x, p('rti/w')).add(p('rti/b'))).reshape([n, N, s.element_dim]);
      const hm = h.mul(mask.reshape([n, N, 1]));
      const count = mask.sum(1, true);
      const mean = hm.sum(1).div(tf.maximum(count, 1)) as tf.Tensor2D;
      const score = tf.matMul(hm.reshape([n * N, s.element_dim]), p('rti/att_w')).add(p('rti/att_b')).reshape([n, N]);
      const masked = score.mul(mask).add(tf.scalar(1).sub(mask).mul(MASKED_SCORE));
      const alpha = tf.softmax(tf.concat([masked, tf.fill([n, 1], MASKED_SCORE)], 1)).slice([0, 0], [n, N]);
      const att = hm.mul(alpha.reshape([n, N, 1])).sum(1) as tf.Tensor2D;
      parts.push(mean, att, tf.log1p(count).div(Math.log1p(N)) as tf.Tensor2D);
      // Pair-wise term: each element's score added onto its item's column (row I collects unknown items).
      const I = s.items;
      const a = tf.matMul(h.reshape([n * N, s.element_dim]), p('rti/pair_w')).add(p('rti/pair_b')).reshape([n * N]).mul(mask.reshape([n * N]));
      const seg = tf.tensor1d(Int32Array.from(b.items, (it, k) => Math.floor(k / N) * (I + 1) + Math.min(it, I)), 'int32');
      pair = tf.unsortedSegmentSum(a, seg, n * (I + 1)).reshape([n, I + 1]).slice([0, 0], [n, I]) as tf.Tensor2D;
    }
    let x = tf.relu(tf.matMul(tf.concat(parts, 1), p('head/w0')).add(p('head/b0'))) as tf.Tensor2D;
    if (training && this.dropout > 0) x = tf.dropout(x, this.dropout, undefined, this.dropoutSeed++) as tf.Tensor2D;
    return { q: tf.matMul(x, p('head/w1')).add(p('head/b1')) as tf.Tensor2D, pair };
  }

  /** The catalogue side: V [items, dim] and β [items]. Call inside `tf.tidy`. */
  catalogue(itemBase: tf.Tensor2D): { vectors: tf.Tensor2D; bias: tf.Tensor1D } {
    const p = (name: string): tf.Variable => this.params.get(name);
    const vectors = tf.matMul(itemBase, p('item/proj_w')).add(p('item/proj_b')).add(p('item/vector')) as tf.Tensor2D;
    return { vectors, bias: p('item/bias') as tf.Tensor as tf.Tensor1D };
  }

  /** Scores over the whole catalogue [n, items]. Call inside `tf.tidy`. */
  scores(b: SessionBatch, itemBase: tf.Tensor2D, training: boolean): tf.Tensor2D {
    const { q, pair } = this.query(b, itemBase, training);
    const { vectors, bias } = this.catalogue(itemBase);
    const s = tf.matMul(q, vectors, false, true).add(bias) as tf.Tensor2D;
    return pair ? s.add(pair) : s;
  }

  /** Scalar parameters without the per-item tables (E, β): the part that does not grow with the catalogue. */
  parameterCount(): number {
    return this.params.count(/^item\/(vector|bias)$/);
  }

  dispose(): void {
    this.params.dispose();
  }
}
