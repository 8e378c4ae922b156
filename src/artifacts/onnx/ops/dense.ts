import { ArtifactError } from '../../../core/errors.js';
import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';

/** Activations the distilled model uses; each maps to one ONNX op and one TF.js op of the same formula. */
export type Activation = 'linear' | 'relu' | 'sigmoid' | 'tanh';

export interface DenseWeights {
  /** Kernel W, shape [inputDim, units], row-major: the layout of a TF.js `dense` layer's kernel. */
  kernel: Float32Array;
  /** Bias b, shape [units]. Omitted: no bias. */
  bias?: Float32Array;
  inputDim: number;
  units: number;
  /** Default `'linear'` (none). */
  activation?: Activation;
  /** Prefix for the initializer and value names (readable graphs). Default `dense`. */
  name?: string;
}

/**
 * A fully connected layer: `y = act(x · W + b)`.
 *
 * - `x`: FLOAT `[batch, inputDim]` or `[batch, seq, inputDim]` (MatMul broadcasts W over leading axes).
 * - returns `y`: FLOAT `[batch, units]` or `[batch, seq, units]`.
 * - ONNX: `MatMul(x, W)`, `Add(·, b)` when there is a bias, then `Relu` | `Sigmoid` | `Tanh`.
 * - TF.js: `tf.layers.dense({ units, activation })` with the same kernel and bias, i.e.
 *   `act(tf.add(tf.matMul(x, W), b))` with `relu(z) = max(z, 0)`, `sigmoid(z) = 1 / (1 + exp(−z))`,
 *   `tanh(z)`. Results agree to float32 rounding of the summation order (≈1e-6 relative).
 */
export function dense(g: OnnxGraphBuilder, x: string, w: DenseWeights): string {
  const prefix = w.name ?? 'dense';
  if (w.kernel.length !== w.inputDim * w.units) {
    throw new ArtifactError(`${prefix}: kernel has ${w.kernel.length} values, expected inputDim × units = ${w.inputDim} × ${w.units}`);
  }
  if (w.bias && w.bias.length !== w.units) {
    throw new ArtifactError(`${prefix}: bias has ${w.bias.length} values, expected units = ${w.units}`);
  }
  const kernel = g.constant(w.kernel, [w.inputDim, w.units], { name: `${prefix}.kernel` });
  let y = g.op('MatMul', [x, kernel], undefined, { name: `${prefix}.matmul` });
  if (w.bias) {
    const bias = g.constant(w.bias, [w.units], { name: `${prefix}.bias` });
    y = g.op('Add', [y, bias]);
  }
  switch (w.activation ?? 'linear') {
    case 'linear':
      return y;
    case 'relu':
      return g.op('Relu', [y]);
    case 'sigmoid':
      return g.op('Sigmoid', [y]);
    case 'tanh':
      return g.op('Tanh', [y]);
  }
}
