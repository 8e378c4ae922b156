import { ArtifactError } from '../../../core/errors.js';
import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';
import { cast, floatScalar } from './basic.js';

export interface StandardizeStats {
  /** Per-feature mean, shape [F]. */
  mean: Float32Array;
  /**
   * Per-feature standard deviation, shape [F]; every entry finite and > 0. A constant column's 0 must
   * be replaced (training uses 1) before export, so both sides divide by the same number.
   */
  std: Float32Array;
  /** Prefix for initializer names. Default `standardize`. */
  name?: string;
}

/**
 * Standardizes numeric features and turns missing values (NaN) into 0 plus an indicator.
 *
 * - `x`: FLOAT `[..., F]` (e.g. `[batch, F]` or an RTI column `[batch, seq, F]`).
 * - returns `value`: FLOAT `[..., F]`, `isNaN(x) ? 0 : (x − mean) / std`;
 *   `isNull`: FLOAT `[..., F]`, `1` where `x` is NaN, else `0`.
 * - ONNX: `IsNaN`, `Sub`, `Div`, `Where`, `Cast(BOOL→FLOAT)`. Subtract-then-divide (not multiply by
 *   1/std) so the float32 rounding is the same as TF.js.
 * - TF.js: `nan = tf.isNaN(x)`, `value = tf.where(nan, 0, tf.div(tf.sub(x, mean), std))`,
 *   `isNull = tf.cast(nan, 'float32')`. Bit-identical.
 * Only NaN counts as missing: ±Infinity passes through (the graph build maps bad values to NaN).
 */
export function standardize(g: OnnxGraphBuilder, x: string, stats: StandardizeStats): { value: string; isNull: string } {
  const prefix = stats.name ?? 'standardize';
  if (stats.mean.length !== stats.std.length) {
    throw new ArtifactError(`${prefix}: mean has ${stats.mean.length} features but std has ${stats.std.length}`);
  }
  stats.std.forEach((s, i) => {
    if (!(Number.isFinite(s) && s > 0)) {
      throw new ArtifactError(`${prefix}: std[${i}] must be finite and > 0`, { value: s, hint: 'replace the std of constant columns by 1 when fitting the encoder' });
    }
  });
  stats.mean.forEach((m, i) => {
    if (!Number.isFinite(m)) throw new ArtifactError(`${prefix}: mean[${i}] must be finite`, { value: m });
  });
  const F = stats.mean.length;
  const mean = g.constant(stats.mean, [F], { name: `${prefix}.mean` });
  const std = g.constant(stats.std, [F], { name: `${prefix}.std` });
  const nan = g.op('IsNaN', [x]);
  const z = g.op('Div', [g.op('Sub', [x, mean]), std]);
  const value = g.op('Where', [nan, floatScalar(g, 0, 'zero'), z]);
  return { value, isNull: cast(g, nan, 'FLOAT') };
}
