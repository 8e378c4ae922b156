import * as tf from '@tensorflow/tfjs';
import { gatherWeightedSum } from '../../compute/fused.js';
import type { ParamStore } from './params.js';

export interface SageConvArgs {
  /** input and output width */
  channels: number;
  /** incoming edge types (their order fixes the weight layout) */
  edges: string[];
}

/**
 * Heterogeneous GraphSAGE layer for one destination node type (Hamilton et al., 2017, mean aggregator;
 * the heterogeneous form sums one SAGEConv per edge type, as PyG's `to_hetero` does), with a degree term:
 *
 *   h_i' = W_self h_i + Σ_e ( W_e · mean_{j ∈ N_e(i)} h_j + w_e · log(1 + |N_e(i)|) ) + b
 *
 * The mean alone cannot tell one recent purchase from ten; the log-degree term (PNA's degree scaler,
 * Corso et al., 2020, in its simplest form) gives the layer the count that recency/frequency signals need.
 * Computed as one matmul: [h_i ‖ mean_e1 ‖ … ‖ mean_ek ‖ deg_e1 … deg_ek] · W. The means over sampled
 * neighbours are masked: padded positions have weight 0 and a node with no neighbours of a type gets a
 * zero mean and degree term 0.
 *
 * Shapes: self [n, C]; per edge a table of child rows [m, C] with an index and weights (mask / count)
 * over n·f_e neighbour positions and degrees [n, 1] → [n, C]. The masked mean is one fused
 * gather-weighted-sum (one kernel forward, one backward).
 */
export class SageConv {
  private readonly w: tf.Variable;
  private readonly b: tf.Variable;

  constructor(params: ParamStore, name: string, readonly args: SageConvArgs) {
    this.w = params.glorot(`${name}/w`, [args.channels * (1 + args.edges.length) + args.edges.length, args.channels]);
    this.b = params.zeros(`${name}/b`, [args.channels]);
  }

  /** The aggregated input row block for one slot: [h_i ‖ masked means] → [n, C(1+k)]. */
  gatherInputs(self: tf.Tensor2D, neighbours: (NeighbourBlock | null)[]): tf.Tensor2D {
    const parts: tf.Tensor2D[] = [self];
    const n = self.shape[0];
    const degrees: tf.Tensor2D[] = neighbours.map((nb) => nb?.degree ?? tf.zeros([n, 1]));
    for (const nb of neighbours) {
      parts.push(nb ? gatherWeightedSum(nb.table, nb.index, nb.weights, nb.fanout) : tf.zeros([n, this.args.channels]));
    }
    return tf.concat([...parts, ...degrees], 1);
  }

  /** x [n, C(1+k)] from `gatherInputs` (possibly several slots stacked) → [n, C]. */
  project(x: tf.Tensor2D): tf.Tensor2D {
    return tf.matMul(x, this.w).add(this.b) as tf.Tensor2D;
  }
}

/** The sampled neighbours of a slot's nodes over one edge type. */
export interface NeighbourBlock {
  /** the child slot's rows, [m, C] */
  table: tf.Tensor2D;
  /** int32 [n · fanout]: the row of each neighbour position (any row where the mask is 0) */
  index: tf.Tensor1D;
  fanout: number;
  /** [n · fanout]: mask / max(1, count), the mean's weights */
  weights: tf.Tensor1D;
  /** [n · fanout]: 0/1 validity (attention needs the mask itself) */
  mask: tf.Tensor1D;
  /** [n, 1]: log(1 + number of valid neighbours) */
  degree: tf.Tensor2D;
}
