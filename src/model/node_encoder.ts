import { tf } from '../core/tf.js';
import type { ParamStore } from './params.js';

export interface NodeEncoderArgs {
  /** width of the numeric feature vector (standardized values, null flags, time features) */
  num_dim: number;
  /** code-space size of each categorical column (vocab + null + OOV) */
  cat_sizes: number[];
  /** width of each categorical embedding */
  cat_dim: number;
  /** output width */
  channels: number;
}

/**
 * Per-table input encoder: h = [x_num ‖ E[c_1] ‖ … ‖ E[c_k]] · W + b, with one embedding table E holding
 * every categorical column's code space (codes arrive offset per column), so a node type costs one
 * gather and one matmul whatever its column count. A table with no features gets a learned constant.
 *
 * Shapes: num [n, numDim], cat [n, k] int32 → [n, channels].
 */
export class NodeEncoder {
  private readonly emb: tf.Variable | null;
  private readonly w: tf.Variable | null;
  private readonly b: tf.Variable;
  readonly inDim: number;

  constructor(params: ParamStore, name: string, readonly args: NodeEncoderArgs) {
    const total = args.cat_sizes.reduce((a, b) => a + b, 0);
    this.emb = total > 0 ? params.normal(`${name}/emb`, [total, args.cat_dim], 0.1) : null;
    this.inDim = args.num_dim + args.cat_sizes.length * args.cat_dim;
    this.w = this.inDim > 0 ? params.glorot(`${name}/w`, [this.inDim, args.channels]) : null;
    this.b = params.zeros(`${name}/b`, [args.channels]);
  }

  apply(num: tf.Tensor2D, cat: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => this.applyTo(this.input(num, cat)));
  }

  /** `apply` on an input already assembled by `input` (a caller that also needs `throughTo` on it). */
  applyTo(x: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      if (!this.w) return tf.tile(this.b.reshape([1, -1]), [x.shape[0], 1]) as tf.Tensor2D;
      return tf.matMul(x, this.w).add(this.b) as tf.Tensor2D;
    });
  }

  /**
   * h·V for h = `apply(num, cat)` and a [channels, k] matrix V, computed as x·(W·V) + b·V: the same linear
   * map (to float rounding), with one matmul over the n rows instead of two. For rows whose encoding is
   * read only through V (leaves of the tree whose parent's SAGE conv transforms them, see HeteroGnn).
   */
  applyThrough(num: tf.Tensor2D, cat: tf.Tensor2D, v: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => this.throughTo(this.input(num, cat), v));
  }

  /** `applyThrough` on an input already assembled by `input`. */
  throughTo(x: tf.Tensor2D, v: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      const bv = tf.matMul(this.b.reshape([1, -1]), v);
      if (!this.w) return tf.tile(bv, [x.shape[0], 1]) as tf.Tensor2D;
      return tf.matMul(x, tf.matMul(this.w, v)).add(bv) as tf.Tensor2D;
    });
  }

  /** [x_num ‖ E[c_1] ‖ … ‖ E[c_k]]: [n, inDim] */
  input(num: tf.Tensor2D, cat: tf.Tensor2D): tf.Tensor2D {
    const n = num.shape[0];
    const parts: tf.Tensor2D[] = [];
    if (this.args.num_dim > 0) parts.push(num);
    if (this.emb) parts.push(tf.gather(this.emb, cat.reshape([-1])).reshape([n, this.args.cat_sizes.length * this.args.cat_dim]));
    if (parts.length === 0) return tf.zeros([n, 0]);
    return parts.length === 1 ? parts[0]! : tf.concat(parts, 1);
  }
}
