/**
 * Temporal attention over a node's last W snapshot embeddings — the h_t term of the temporal-attentive
 * graph autoencoder (TAGAE): each service attends over its own recent history, so the representation
 * the decoder reconstructs from carries what the graph looked like, and a sudden change in the current
 * snapshot reconstructs badly.
 *
 *     q_i    = z_i^(0) W_q                                       (k = 0 is the current snapshot)
 *     β_i^k  = softmax_k( q_i · (z_i^(k) W_k) / √d_k + b_k )      (b_k: a learned bias per lag)
 *     h_i    = Σ_k β_i^k z_i^(k) W_v
 *     out_i  = z_i^(0) + h_i                                      (residual)
 *
 * Shapes: zs [L, n, dim] with L ≤ window (fewer at the start of a series) → [n, dim].
 */
import { tf } from '../../core/tf.js';
import type { Params } from './params.js';

export interface TemporalAttentionArgs {
  /** embedding width */
  dim: number;
  /** query/key width */
  keyDim: number;
  /** the most snapshots attended over (W) */
  window: number;
}

export class TemporalAttention {
  private readonly wq: tf.Variable;
  private readonly wk: tf.Variable;
  private readonly wv: tf.Variable;
  private readonly lagBias: tf.Variable;

  constructor(params: Params, name: string, readonly args: TemporalAttentionArgs) {
    this.wq = params.glorot(`${name}.w_q`, [args.dim, args.keyDim]);
    this.wk = params.glorot(`${name}.w_k`, [args.dim, args.keyDim]);
    this.wv = params.glorot(`${name}.w_v`, [args.dim, args.dim]);
    this.lagBias = params.zeros(`${name}.lag_bias`, [args.window, 1]);
  }

  apply(zs: tf.Tensor3D): tf.Tensor2D {
    const [L, n, D] = zs.shape;
    if (L > this.args.window) throw new Error(`temporal attention: ${L} snapshots given, window is ${this.args.window}`);
    return tf.tidy(() => {
      const flat = zs.reshape([L * n, D]);
      const z0 = zs.slice([0, 0, 0], [1, n, D]).reshape([n, D]);
      const q = tf.matMul(z0, this.wq); // [n, dk]
      const k = tf.matMul(flat, this.wk).reshape([L, n, this.args.keyDim]);
      const logits = tf.add(tf.div(tf.sum(tf.mul(k, q.expandDims(0)), -1), Math.sqrt(this.args.keyDim)), this.lagBias.slice([0, 0], [L, 1])); // [L, n]
      const beta = tf.softmax(logits.transpose(), -1).transpose(); // softmax over lags
      const v = tf.matMul(flat, this.wv).reshape([L, n, D]);
      const h = tf.sum(tf.mul(v, beta.expandDims(-1)), 0);
      return tf.add(z0, h) as tf.Tensor2D;
    });
  }
}
