import { tf } from '../core/tf.js';
import { gatherAttention } from '../compute/fused.js';
import type { ParamStore } from './params.js';
import type { NeighbourBlock } from './sage_conv.js';

export interface GatConvArgs {
  /** input and output width; must be divisible by `heads` */
  channels: number;
  /** attention heads; each attends with channels / heads features, outputs are concatenated */
  heads: number;
  /** incoming edge types */
  edges: string[];
  /** LeakyReLU slope of the attention logits (default 0.2, as in the paper) */
  negativeSlope?: number;
}

/**
 * Heterogeneous graph attention layer for one destination node type (Veličković et al., 2018, GAT; one
 * attention per edge type, summed over edge types as PyG's `to_hetero` does):
 *
 *   α_ij^e,k = softmax_j( LeakyReLU( a_dst^e,k · W_e^k h_i + a_src^e,k · W_e^k h_j ) )   over sampled j
 *   h_i'     = W_self h_i + Σ_e ( ‖_k Σ_j α_ij^e,k W_e^k h_j + w_e log(1 + |N_e(i)|) ) + b
 *
 * Attention weights sum to one, so like a mean they hide the neighbour count; the log-degree term
 * restores it (see SageConv).
 * Padded neighbour positions get −∞ logits (weight 0); a node with no neighbours of a type receives a
 * zero message, never NaN.
 *
 * Shapes: self [n, C]; per edge a table of child rows [m, C] with an index and mask over n·f_e
 * neighbour positions → [n, C].
 */
export class GatConv {
  private readonly wSelf: tf.Variable;
  private readonly b: tf.Variable;
  private readonly wEdge: tf.Variable[];
  private readonly aSrc: tf.Variable[];
  private readonly aDst: tf.Variable[];
  private readonly wDeg: tf.Variable[];
  private readonly headDim: number;

  constructor(params: ParamStore, name: string, readonly args: GatConvArgs) {
    if (args.channels % args.heads !== 0) {
      throw new Error(`GAT: channels (${args.channels}) must be divisible by heads (${args.heads})`);
    }
    this.headDim = args.channels / args.heads;
    this.wSelf = params.glorot(`${name}/w_self`, [args.channels, args.channels]);
    this.b = params.zeros(`${name}/b`, [args.channels]);
    this.wEdge = args.edges.map((_, i) => params.glorot(`${name}/e${i}/w`, [args.channels, args.channels]));
    this.aSrc = args.edges.map((_, i) => params.glorot(`${name}/e${i}/a_src`, [args.heads, this.headDim]));
    this.aDst = args.edges.map((_, i) => params.glorot(`${name}/e${i}/a_dst`, [args.heads, this.headDim]));
    this.wDeg = args.edges.map((_, i) => params.glorot(`${name}/e${i}/w_deg`, [1, args.channels]));
  }

  apply(self: tf.Tensor2D, neighbours: (NeighbourBlock | null)[]): tf.Tensor2D {
    return tf.tidy(() => {
      const n = self.shape[0];
      const { heads } = this.args;
      const hd = this.headDim;
      let out = tf.matMul(self, this.wSelf).add(this.b) as tf.Tensor2D;
      neighbours.forEach((nb, e) => {
        if (nb) out = out.add(nb.degree.mul(this.wDeg[e]!)) as tf.Tensor2D;
      });
      neighbours.forEach((nb, e) => {
        if (!nb || nb.table.shape[0] === 0) return;
        // Project each child row once (not once per neighbour position), score it per head, then let the
        // fused kernel do the masked softmax over each node's neighbours and the weighted sum.
        const m = nb.table.shape[0];
        const xw = tf.matMul(nb.table, this.wEdge[e]!) as tf.Tensor2D;
        const src = xw.reshape([m, heads, hd]).mul(this.aSrc[e]!).sum(-1) as tf.Tensor2D;
        const dst = tf.matMul(self, this.wEdge[e]!).reshape([n, heads, hd]).mul(this.aDst[e]!).sum(-1) as tf.Tensor2D;
        if (!nb.mask) throw new Error(`GAT neighbour blocks need their mask (edge ${e})`);
        const msg = gatherAttention(xw, src, dst, nb.index, nb.mask, { fanout: nb.fanout, heads, negativeSlope: this.args.negativeSlope ?? 0.2 });
        out = out.add(msg) as tf.Tensor2D;
      });
      return out;
    });
  }
}
