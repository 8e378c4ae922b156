import { tf } from '../core/tf.js';
import { gatherWeightedSum } from '../compute/fused.js';
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
 * |N_e(i)| counts every neighbour with time ≤ anchor, not only the sampled ones: a sampled count is capped
 * at the fanout, and with `last` sampling on bursty data (a whole sitting inside the fanout) it is the
 * fanout for every active entity, so total activity would reach the model nowhere (docs/quality.md).
 * The means over sampled neighbours are masked: padded positions have weight 0 and a node with no
 * neighbours of a type gets a zero mean and degree term 0.
 *
 * Shapes: self [n, C]; per edge a table of child rows [m, C] with an index and weights (mask / count)
 * over n·f_e neighbour positions and degrees [n, 1] → [n, C]. The masked mean is one fused
 * gather-weighted-sum (one kernel forward, one backward). Each term has its own weight and matmul rather
 * than one matmul over [h ‖ means ‖ degrees]: on wasm the concat and, in the backward pass, the split
 * of that wide input cost more than the extra (narrower) matmuls. Several row groups (the slots of one
 * node type) are stacked so each weight is used in one matmul per step.
 */
export class SageConv {
  private readonly wSelf: tf.Variable;
  private readonly wEdge: tf.Variable[];
  private readonly wDeg: tf.Variable[];
  private readonly b: tf.Variable;

  constructor(params: ParamStore, name: string, readonly args: SageConvArgs) {
    const C = args.channels;
    this.wSelf = params.glorot(`${name}/w_self`, [C, C]);
    this.wEdge = args.edges.map((_, i) => params.glorot(`${name}/w_e${i}`, [C, C]));
    this.wDeg = args.edges.map((_, i) => params.glorot(`${name}/w_deg${i}`, [1, C]));
    this.b = params.zeros(`${name}/b`, [C]);
  }

  /**
   * h' for stacked row groups, each with its own neighbour blocks (ordered as `args.edges`) → [Σn, C].
   * `selfTransformed`: W_self·self already computed by the caller (every group or none), see
   * `selfWeight`. `release` (inference): each partial sum and term is freed as soon as it is added, so
   * two [n, C] tensors are alive at a time instead of every term (the inputs are never freed).
   */
  apply(groups: { self: tf.Tensor2D; blocks: (NeighbourBlock | null)[]; selfTransformed?: tf.Tensor2D }[], release = false): tf.Tensor2D {
    const C = this.args.channels;
    const stack = (xs: tf.Tensor2D[]): tf.Tensor2D => (xs.length === 1 ? xs[0]! : tf.concat(xs, 0));
    const folded = groups.map((g) => g.selfTransformed).filter((t): t is tf.Tensor2D => t !== undefined);
    if (folded.length > 0 && folded.length < groups.length) throw new Error('SageConv.apply: selfTransformed must be given for every group or none');
    const ownSelf = folded.length === 0 || folded.length > 1;
    const selfTerm = folded.length > 0 ? stack(folded) : (tf.matMul(stack(groups.map((g) => g.self)), this.wSelf) as tf.Tensor2D);
    /** sum + term, freeing both when released (both made here) */
    const add = (sum: tf.Tensor2D, term: tf.Tensor2D): tf.Tensor2D => {
      const next = sum.add(term) as tf.Tensor2D;
      if (release) {
        sum.dispose();
        term.dispose();
      }
      return next;
    };
    let out = selfTerm.add(this.b) as tf.Tensor2D;
    if (release && ownSelf) selfTerm.dispose();
    this.args.edges.forEach((_, e) => {
      const w = this.wEdge[e]!;
      // W·mean(x) = mean(W·x): transform first when the table has fewer rows than the nodes reading it
      // (distinct encoder rows at layer 1), aggregate first otherwise — the same value, fewer FLOPs.
      const messages = groups.map((g) => {
        const nb = g.blocks[e];
        const n = g.self.shape[0];
        if (!nb) return tf.zeros([n, C]) as tf.Tensor2D;
        if (nb.transformed) return gatherWeightedSum(nb.table, nb.index, nb.weights, nb.fanout);
        if (nb.table.shape[0] < n) return gatherWeightedSum(tf.matMul(nb.table, w) as tf.Tensor2D, nb.index, nb.weights, nb.fanout);
        return tf.matMul(gatherWeightedSum(nb.table, nb.index, nb.weights, nb.fanout), w) as tf.Tensor2D;
      });
      out = add(out, stack(messages));
      // The degree term is a broadcast product ([n, 1] · [1, C]); a matmul with inner size 1 is far slower.
      const deg = stack(groups.map((g) => g.blocks[e]?.degree ?? (tf.zeros([g.self.shape[0], 1]) as tf.Tensor2D)));
      out = add(out, deg.mul(this.wDeg[e]!));
    });
    return out;
  }

  /** W_self ([C, C]), for a caller that folds it into the map producing the self rows (`NodeEncoder.throughTo`). */
  selfWeight(): tf.Tensor2D {
    return this.wSelf as tf.Tensor2D;
  }

  /** W_e of edge e ([C, C]), for a caller that folds it into the map producing the rows (`NodeEncoder.applyThrough`). */
  edgeWeight(edge: number): tf.Tensor2D {
    return this.wEdge[edge]! as tf.Tensor2D;
  }

  /** W_e·x for edge e: rows a caller transforms once and passes back as a `transformed` block. */
  transform(edge: number, x: tf.Tensor2D): tf.Tensor2D {
    return tf.matMul(x, this.wEdge[edge]!) as tf.Tensor2D;
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
  /** [n · fanout]: 0/1 validity; attention needs the mask itself, SAGE reads only the weights (may omit it) */
  mask?: tf.Tensor1D;
  /** [n, 1]: log(1 + number of valid neighbours) */
  degree: tf.Tensor2D;
  /** SAGE only: `table` already holds W_e·h (from `SageConv.transform`), so only the mean is left to do */
  transformed?: boolean;
}
