import { tf } from '../core/tf.js';
import { layerNorm } from '../compute/fused.js';
import type { ParamStore } from './params.js';

/**
 * Layer normalization (Ba et al., 2016): y = (x − mean(x)) / sqrt(var(x) + ε) · γ + β over the last axis.
 *
 * Args: `dim` (features), `eps` = 1e-5. Shapes: x [n, dim] → [n, dim].
 */
export class LayerNorm {
  private readonly gamma: tf.Variable;
  private readonly beta: tf.Variable;

  constructor(params: ParamStore, name: string, readonly dim: number, private readonly eps = 1e-5) {
    this.gamma = params.ones(`${name}/gamma`, [dim]);
    this.beta = params.zeros(`${name}/beta`, [dim]);
  }

  /** One fused kernel forward and one backward where the backend has them (see compute/fused.ts). */
  apply(x: tf.Tensor2D): tf.Tensor2D {
    return layerNorm(x, this.gamma as tf.Tensor1D, this.beta as tf.Tensor1D, this.eps);
  }
}
