/**
 * Pooling of variable-length, masked sequences (the RTI elements of one request) into one vector.
 *
 * Both poolers are total: a request with no valid element (all masked) or with sequence length 0 gets
 * the zero vector, never NaN. Two things make that hold in the graph itself rather than by caller
 * discipline: masked positions are replaced (Where, not multiplied, so a NaN in padding cannot leak
 * through `0 · NaN`), and a constant zero slot is appended on the sequence axis so no reduction or
 * softmax ever runs over an empty axis.
 */
import { ArtifactError } from '../../../core/errors.js';
import { attr } from '../attributes.js';
import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';
import { cast, floatScalar, int64s, squeeze, unsqueeze } from './basic.js';

/**
 * Score given to masked positions before the softmax. Large enough that `exp(s − max)` underflows to
 * exactly 0 in float32 next to any real score, finite so that an all-masked row stays finite
 * (softmax of equal scores is uniform; −Infinity would give `exp(−∞ + ∞) = NaN`).
 */
export const MASKED_SCORE = -1e9;

/** Zero-pads axis 1 at the end by one slot: `[b, s, …] → [b, s + 1, …]`. */
function appendSlot(g: OnnxGraphBuilder, x: string, rank: number, value: string): string {
  const pads = new Array<number>(2 * rank).fill(0);
  pads[rank + 1] = 1; // end padding of axis 1
  return g.op('Pad', [x, int64s(g, pads, 'pads'), value], { mode: attr.string('constant') });
}

/** `valid = mask ≠ 0` as BOOL `[b, s]` and `[b, s, 1]`, and the masked input `x̃ = valid ? x : 0`. */
function maskInput(g: OnnxGraphBuilder, x: string, mask: string): { valid: string; valid3: string; xm: string } {
  const valid = cast(g, mask, 'BOOL');
  const valid3 = unsqueeze(g, valid, [2]);
  const xm = g.op('Where', [valid3, x, floatScalar(g, 0, 'zero')]);
  return { valid, valid3, xm };
}

/**
 * Masked mean over the sequence axis:
 * `out[b, :] = Σ_i [m_bi ≠ 0] · x_bi / max(Σ_i [m_bi ≠ 0], 1)`.
 *
 * - `x`: FLOAT `[batch, seq, dim]`; `mask`: FLOAT `[batch, seq]`, non-zero = valid element. `seq` may be 0.
 * - returns FLOAT `[batch, dim]`; the zero vector when no element is valid.
 * - ONNX: `Cast`, `Unsqueeze`, `Where`, `Pad` (zero slot), `ReduceSum`, `Max`, `Div`.
 * - TF.js: `v = tf.cast(mask, 'bool')`, `xm = tf.where(v.expandDims(2), x, 0)`,
 *   `tf.div(tf.sum(xm, 1), tf.maximum(tf.sum(tf.cast(v, 'float32'), 1, true), 1))`.
 *   The appended slot adds exact zeros, so results agree to summation-order rounding.
 */
export function maskedMeanPool(g: OnnxGraphBuilder, x: string, mask: string): string {
  const { valid, xm } = maskInput(g, x, mask);
  const zero = floatScalar(g, 0, 'zero');
  const sum = g.op('ReduceSum', [appendSlot(g, xm, 3, zero), int64s(g, [1], 'axes')], { keepdims: attr.int(0) });
  const count = g.op('ReduceSum', [appendSlot(g, cast(g, valid, 'FLOAT'), 2, zero), int64s(g, [1], 'axes')], { keepdims: attr.int(1) });
  return g.op('Div', [sum, g.op('Max', [count, floatScalar(g, 1, 'one')])]);
}

export interface AttentionScore {
  /** Score weights w, shape [dim]. */
  weight: Float32Array;
  /** Score bias (a scalar). Default 0; it cancels in the softmax but is kept for parity with training. */
  bias?: number;
  /** Initializer name prefix. Default `attention`. */
  name?: string;
}

/**
 * Masked attention pooling with one learned score vector:
 * `x̃_i = m_i ≠ 0 ? x_i : 0`, `s_i = m_i ≠ 0 ? x̃_i · w + b : −1e9`, `α = softmax([s_1 … s_n, −1e9])`,
 * `out = Σ_i α_i x̃_i` (the extra slot has `x̃ = 0`).
 *
 * - `x`: FLOAT `[batch, seq, dim]`; `mask`: FLOAT `[batch, seq]`, non-zero = valid. `seq` may be 0.
 * - returns FLOAT `[batch, dim]`. With at least one valid element the masked and extra slots get weight
 *   exactly 0 (float32 `exp` underflow), so this equals attention over the valid elements alone; with
 *   none, all weights sit on zero vectors and the output is the zero vector.
 * - ONNX: `Where`, `MatMul`, `Add`, `Squeeze`, `Pad`, `Softmax(axis = −1)`, `Mul`, `ReduceSum`.
 * - TF.js: `s = tf.where(v, tf.add(tf.squeeze(tf.matMul(xm, w.reshape([dim, 1])), [2]), b), −1e9)`,
 *   `α = tf.softmax(s)` (no extra slot needed there when seq ≥ 1), `tf.sum(tf.mul(xm, α.expandDims(2)), 1)`.
 */
export function maskedAttentionPool(g: OnnxGraphBuilder, x: string, mask: string, score: AttentionScore): string {
  const prefix = score.name ?? 'attention';
  const dim = score.weight.length;
  if (dim === 0) throw new ArtifactError(`${prefix}: the score weight vector is empty`);
  const { valid, xm } = maskInput(g, x, mask);
  const w = g.constant(score.weight, [dim, 1], { name: `${prefix}.weight` });
  let s = g.op('MatMul', [xm, w]);
  if (score.bias !== undefined && score.bias !== 0) s = g.op('Add', [s, g.constant(Float32Array.of(score.bias), [], { name: `${prefix}.bias` })]);
  const masked = floatScalar(g, MASKED_SCORE, 'masked_score');
  const scores = g.op('Where', [valid, squeeze(g, s, [2]), masked]);
  const alpha = g.op('Softmax', [appendSlot(g, scores, 2, masked)], { axis: attr.int(-1) });
  const xPad = appendSlot(g, xm, 3, floatScalar(g, 0, 'zero'));
  const weighted = g.op('Mul', [xPad, unsqueeze(g, alpha, [2])]);
  return g.op('ReduceSum', [weighted, int64s(g, [1], 'axes')], { keepdims: attr.int(0) });
}
