/**
 * Fused ops with hand-written gradients: one TF.js kernel forward and one backward where the composite
 * of standard ops runs many.
 *
 * Why: on the wasm backend every kernel costs tens of µs of dispatch before it computes anything, and a
 * training step of the hetero GNN built from standard ops issues ~580 of them: LayerNorm ~200 (moments,
 * sub, mul, rsqrt and their gradients), dropout ~6 per call, and the masked neighbour mean (gather → reshape →
 * mul → sum, and back through UnsortedSegmentSum) several per edge type and layer. Each op here is one
 * forward kernel and one backward kernel whose bodies are TypeScript loops over typed arrays
 * (`fused_kernels.ts`), registered on wasm and on cpu with the same code (`typed_kernel.ts`).
 *
 * Dropout is the exception: one kernel draws the mask on the device and the backend's own multiply
 * applies it (its gradient is dy · mask). Measured alternatives were slower: outputting the mask from a
 * fused kernel makes the engine build and upload a full-size zero gradient for that unused output, and
 * redrawing the mask in a backward kernel costs a second pass of draws (~0.3 ms per [3000, 64]).
 *
 * Dispatch: each public op runs its fused kernel when the active backend has it (wasm, cpu) and otherwise
 * (the native `tensorflow` backend, whose per-op cost is small and whose kernels are multithreaded C++)
 * the equivalent composite, exported as `…Composite` so tests can compare the two. Both paths agree to
 * float32 rounding; dropout draws the identical mask on every path for a given seed.
 *
 * Registration: `selectBackend` calls `registerFusedKernels()` for wasm and cpu, and every op calls it
 * too (it is idempotent and cheap), so the ops also work on a backend set with `tf.setBackend`.
 */
import { tf } from '../core/tf.js';
import {
  FusedKernelName,
  dropoutMask,
  dropoutMaskKernel,
  gatherAttentionGradKernel,
  gatherAttentionKernel,
  gatherWeightedSumGradKernel,
  gatherWeightedSumKernel,
  gatherWeightedSumWeightsGradKernel,
  layerNormGradKernel,
  layerNormKernel,
} from './fused_kernels.js';
import { rankingSoftmaxGradKernel, rankingSoftmaxKernel, SoftmaxKernelName } from './softmax_kernels.js';
import { cpuKernelFunc, wasmKernelFunc, type TypedKernel } from './typed_kernel.js';

export { FusedKernelName } from './fused_kernels.js';

const KERNELS: readonly TypedKernel[] = [
  layerNormKernel,
  layerNormGradKernel,
  gatherWeightedSumKernel,
  gatherWeightedSumGradKernel,
  gatherWeightedSumWeightsGradKernel,
  dropoutMaskKernel,
  gatherAttentionKernel,
  gatherAttentionGradKernel,
  rankingSoftmaxKernel,
  rankingSoftmaxGradKernel,
];

/** The kernel names `registerFusedKernels` adds to the wasm and cpu backends. */
export const FUSED_KERNELS: readonly string[] = KERNELS.map((k) => k.name);

/** The backends the fused kernels are registered for. */
export const FUSED_BACKENDS = ['wasm', 'cpu'] as const;

let registered = false;

/**
 * Registers the fused kernels on wasm and cpu and their gradients (idempotent). Returns the kernel
 * names, for `BackendInfo.added_kernels`.
 */
export function registerFusedKernels(): string[] {
  if (!registered) {
    for (const k of KERNELS) {
      for (const backendName of FUSED_BACKENDS) {
        // Another copy of this module (e.g. src and dist in one process) may have registered it already.
        if (tf.getKernel(k.name, backendName) !== undefined) tf.unregisterKernel(k.name, backendName);
        const kernelFunc = backendName === 'wasm' ? wasmKernelFunc(k) : cpuKernelFunc(k);
        tf.registerKernel({ kernelName: k.name, backendName, kernelFunc });
      }
    }
    for (const g of GRADIENTS) tf.registerGradient(g);
    registered = true;
  }
  return [...FUSED_KERNELS];
}

/** Whether `kernel` runs on the active backend (registering the fused kernels first if needed). */
function fusedOnActiveBackend(kernel: string): boolean {
  registerFusedKernels();
  return tf.getKernel(kernel, tf.getBackend()) !== undefined;
}

function run(kernel: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap = {}): tf.Tensor[] {
  const out = tf.engine().runKernel(kernel, inputs, attrs) as tf.Tensor | tf.Tensor[];
  return Array.isArray(out) ? out : [out];
}

const firstDy = (dy: tf.Tensor | tf.Tensor[]): tf.Tensor => (Array.isArray(dy) ? dy[0]! : dy);

/**
 * Gradients of the forward kernels. A backward kernel computes every input's gradient in one pass, so the
 * gradient functions run it eagerly and hand out its outputs; the engine disposes any it does not ask
 * for when the backward pass ends. Integer and constant inputs get zero gradients (float32, as the tape
 * requires), which the tape never asks for unless they depend on a watched variable.
 */
const GRADIENTS: readonly tf.GradConfig[] = [
  {
    kernelName: FusedKernelName.layerNorm,
    inputsToSave: ['x', 'gamma'],
    outputsToSave: [false, true, true],
    gradFunc: (dy, saved) => {
      const [x, gamma, mean, rstd] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
      const [dx, dgamma, dbeta] = run(FusedKernelName.layerNormGrad, { dy: firstDy(dy), x, gamma, mean, rstd });
      return { x: () => dx!, gamma: () => dgamma!, beta: () => dbeta! };
    },
  },
  {
    kernelName: FusedKernelName.gatherWeightedSum,
    inputsToSave: ['x', 'index', 'weights'],
    gradFunc: (dy, saved, attrs) => {
      const [x, index, weights] = saved as [tf.Tensor, tf.Tensor, tf.Tensor];
      const fanout = attrs.fanout as number;
      return {
        x: () => run(FusedKernelName.gatherWeightedSumGrad, { dy: firstDy(dy), index, weights }, { fanout, numRows: x.shape[0]! })[0]!,
        index: () => tf.zeros(index.shape),
        weights: () => tf.reshape(run(FusedKernelName.gatherWeightedSumWeightsGrad, { dy: firstDy(dy), x, index }, { fanout })[0]!, weights.shape),
      };
    },
  },
  {
    kernelName: FusedKernelName.gatherAttention,
    inputsToSave: ['xw', 'src', 'dst', 'index'],
    outputsToSave: [false, true],
    gradFunc: (dy, saved, attrs) => {
      const [xw, src, dst, index, alpha] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
      const [dxw, dsrc, ddst] = run(FusedKernelName.gatherAttentionGrad, { dy: firstDy(dy), xw, src, dst, index, alpha }, attrs);
      // The mask only selects (α = 0 encodes it for the backward kernel); like index it gets no gradient.
      // Its shape comes as an attr, so the tape need not keep (on wasm: copy) the mask itself.
      const maskShape = attrs.maskShape as number[];
      return { xw: () => dxw!, src: () => dsrc!, dst: () => ddst!, index: () => tf.zeros(index.shape), mask: () => tf.zeros(maskShape) };
    },
  },
  {
    kernelName: SoftmaxKernelName.rankingSoftmax,
    inputsToSave: ['logits', 'popWeight', 'pop', 'pair', 'cell', 'gate', 'positives'],
    outputsToSave: [false, true],
    gradFunc: (dy, saved) => {
      const [logits, popWeight, pop, pair, cell, gate, positives, lse] = saved as tf.Tensor[];
      const [dlogits, dw, dpair, dgate] = run(SoftmaxKernelName.rankingSoftmaxGrad, { dy: firstDy(dy), logits: logits!, popWeight: popWeight!, pop: pop!, pair: pair!, cell: cell!, gate: gate!, positives: positives!, lse: lse! });
      return {
        logits: () => dlogits!,
        popWeight: () => dw!,
        pair: () => dpair!,
        gate: () => dgate!,
        pop: () => tf.zeros(pop!.shape),
        cell: () => tf.zeros(cell!.shape),
        positives: () => tf.zeros(positives!.shape),
      };
    },
  },
];

// ---------------------------------------------------------------------------------------------------------
// rankingSoftmax

/**
 * The recommender's training loss over B users × M candidates (softmax_kernels.ts): the scores
 * `logits + popWeight · pop + gate · pair[cell − 1]` (the pair term only where cell > 0) and the
 * multi-positive sampled softmax over them (`sampledSoftmax`, task/objective/ranking.ts).
 *
 * Shapes: logits [B, M], popWeight [1], pop [M], pair [P], cell int32 [B·M] (0 or 1 + a pair row), gate
 * [B, 1], positives [B, M] 0/1 → scalar. Differentiable in logits, popWeight, pair and gate. One kernel
 * forward and one backward, where the composite runs ~20 over [B, M] each way.
 */
export function rankingSoftmax(logits: tf.Tensor2D, popWeight: tf.Tensor, pop: Float32Array, pair: tf.Tensor1D, cell: Int32Array, gate: tf.Tensor2D, positives: Float32Array): tf.Scalar {
  const [B, M] = logits.shape;
  if (pop.length !== M || cell.length !== B * M || positives.length !== B * M || gate.shape[0] !== B) {
    throw new Error(`rankingSoftmax: logits [${B}, ${M}] need pop [${M}], cell and positives [${B * M}], gate [${B}, 1]`);
  }
  requireFloat('rankingSoftmax', { logits, popWeight, pair, gate });
  return tf.tidy(() => {
    const inputs = { logits, popWeight, pop: tf.tensor1d(pop), pair, cell: tf.tensor1d(cell, 'int32'), gate, positives: tf.tensor2d(positives, [B, M]) };
    if (!fusedOnActiveBackend(SoftmaxKernelName.rankingSoftmax)) return rankingSoftmaxComposite(inputs);
    return run(SoftmaxKernelName.rankingSoftmax, inputs)[0] as tf.Scalar;
  });
}

/** `rankingSoftmax` as standard tf ops (the path on backends without the fused kernel). */
export function rankingSoftmaxComposite(x: { logits: tf.Tensor2D; popWeight: tf.Tensor; pop: tf.Tensor1D; pair: tf.Tensor1D; cell: tf.Tensor1D; gate: tf.Tensor2D; positives: tf.Tensor2D }): tf.Scalar {
  return tf.tidy(() => {
    const [B, M] = x.logits.shape;
    const pairDense = tf.gather(tf.concat([tf.zeros([1]), x.pair]), x.cell).reshape([B, M]);
    const s = x.logits.add(x.pop.reshape([1, M]).mul(x.popWeight)).add(pairDense.mul(x.gate)) as tf.Tensor2D;
    const count = x.positives.sum(1);
    const has = count.greater(0).toFloat();
    const meanPos = s.mul(x.positives).sum(1).div(count.maximum(1));
    return tf.logSumExp(s, 1).sub(meanPos).mul(has).sum().div(has.sum().maximum(1)) as tf.Scalar;
  });
}

// ---------------------------------------------------------------------------------------------------------
// layerNorm

/**
 * Layer normalization (Ba et al., 2016) over the last axis:
 *
 *   y = (x − mean(x)) / sqrt(var(x) + eps) · γ + β      (population variance)
 *
 * Shapes: x [n, d], gamma [d], beta [d] → [n, d]. Differentiable in x, gamma and beta. Fused: one kernel
 * forward (which also outputs the row means and 1/std, kept for the backward pass) and one backward
 * kernel returning dx, dγ and dβ together; the composite runs 12 kernels forward and 71 with gradients
 * (bench/fused.mjs). Statistics are float64, so the fused op is more exact than the composite when
 * |mean| ≫ std.
 */
export function layerNorm(x: tf.Tensor2D, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps = 1e-5): tf.Tensor2D {
  const d = x.shape[1];
  if (x.rank !== 2) throw new Error(`layerNorm: x must be 2-D [n, d] (got shape [${x.shape}])`);
  for (const [name, t] of [['gamma', gamma], ['beta', beta]] as const) {
    if (t.rank !== 1 || t.shape[0] !== d) throw new Error(`layerNorm: ${name} must have shape [${d}] (got [${t.shape}])`);
  }
  requireFloat('layerNorm', { x, gamma, beta });
  if (!(eps >= 0)) throw new Error(`layerNorm: eps must be ≥ 0 (got ${eps})`);
  if (!fusedOnActiveBackend(FusedKernelName.layerNorm)) return layerNormComposite(x, gamma, beta, eps);
  const [y, mean, rstd] = run(FusedKernelName.layerNorm, { x, gamma, beta }, { eps });
  // The backward pass keeps its own clones of mean and rstd (saved on the tape), so these can go.
  tf.dispose([mean!, rstd!]);
  return y as tf.Tensor2D;
}

/** `layerNorm` as standard tf ops (the path on backends without the fused kernel). */
export function layerNormComposite(x: tf.Tensor2D, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps = 1e-5): tf.Tensor2D {
  return tf.tidy(() => {
    const { mean, variance } = tf.moments(x, -1, true);
    return x.sub(mean).mul(tf.rsqrt(variance.add(eps))).mul(gamma).add(beta) as tf.Tensor2D;
  });
}

// ---------------------------------------------------------------------------------------------------------
// gatherWeightedSum

/**
 * Gathers rows and sums them with weights, `fanout` at a time: the masked neighbour mean of GraphSAGE
 * (weights = mask / count), or a plain masked lookup with `fanout` 1.
 *
 *   out[i] = Σ_{j < f} weights[i·f + j] · x[index[i·f + j]]
 *
 * Shapes: x [m, c] float32; index int32 with n·f elements; weights float32 with n·f elements (any shape,
 * e.g. [n, f]) → [n, c]. Positions with weight 0 are padding and are never read, so their index may be
 * anything (0 into an empty table, say); every other index must lie in [0, m), else the op throws. m = 0
 * or n = 0 are fine. Differentiable in x (a weighted scatter-add of dy) and in weights
 * (dweights[i·f+j] = dy[i] · x[index[i·f+j]]; at padding whose index is outside [0, m) the fused kernel
 * gives 0 and the composite, which clamps such indices, dy[i] · x[clamped]). One kernel forward and one
 * backward replace gather → reshape → mul → sum and, backward, UnsortedSegmentSum and its helpers (9
 * kernels forward, 32 with gradients).
 */
export function gatherWeightedSum(x: tf.Tensor2D, index: tf.Tensor, weights: tf.Tensor, fanout: number): tf.Tensor2D {
  checkGatherArgs('gatherWeightedSum', x, index, weights, 'weights', fanout);
  requireFloat('gatherWeightedSum', { x, weights });
  if (!fusedOnActiveBackend(FusedKernelName.gatherWeightedSum)) return gatherWeightedSumComposite(x, index, weights, fanout);
  return run(FusedKernelName.gatherWeightedSum, { x, index, weights }, { fanout })[0] as tf.Tensor2D;
}

/** `gatherWeightedSum` as standard tf ops. For m = 0 or n = 0 it returns zeros not connected to x. */
export function gatherWeightedSumComposite(x: tf.Tensor2D, index: tf.Tensor, weights: tf.Tensor, fanout: number): tf.Tensor2D {
  const n = checkGatherArgs('gatherWeightedSum', x, index, weights, 'weights', fanout);
  const [m, c] = x.shape;
  return tf.tidy(() => {
    if (n === 0 || m === 0) return tf.zeros([n, c]);
    const w = weights.reshape([n * fanout]);
    // Padding may carry any index: clamp it into the table, the zero weight cancels the row. (A mask
    // built from the weights would put the int32 index on the differentiated path when weights are.)
    const rows = tf.gather(x, clampIndex(index.reshape([n * fanout]), m));
    if (fanout === 1) return rows.mul(w.reshape([n, 1])) as tf.Tensor2D;
    return rows.reshape([n, fanout, c]).mul(w.reshape([n, fanout, 1])).sum(1) as tf.Tensor2D;
  });
}

// ---------------------------------------------------------------------------------------------------------
// dropout

/**
 * Inverted dropout (Srivastava et al., 2014): y = x · mask / (1 − rate), mask ~ Bernoulli(1 − rate) per
 * element, drawn from `new Rng(seed)`: each 32-bit draw decides two elements by its two 16-bit halves
 * (so the keep probability is 1 − ceil(rate·2¹⁶)/2¹⁶, within 2⁻¹⁶ of 1 − rate), and a seed fixes the
 * mask on every backend and path. Gradient: dy · mask / (1 − rate). `rate` in [0, 1); rate 0 returns a
 * copy of x. Any shape. Dropped elements are x · 0, as in `tf.dropout`: a NaN stays NaN. Two kernels
 * forward (draw the mask, multiply) and a multiply backward, against `tf.dropout`'s four forward (and
 * its ~4× slower JS draws).
 */
export function dropout<T extends tf.Tensor>(x: T, rate: number, seed: number): T {
  if (!(rate >= 0 && rate < 1)) throw new Error(`dropout: rate must be in [0, 1) (got ${rate})`);
  if (!Number.isFinite(seed)) throw new Error(`dropout: seed must be a finite number (got ${seed})`);
  requireFloat('dropout', { x });
  if (rate === 0) return x.clone();
  if (!fusedOnActiveBackend(FusedKernelName.dropoutMask)) return dropoutComposite(x, rate, seed);
  return tf.tidy(() => tf.mul(x, run(FusedKernelName.dropoutMask, {}, { shape: x.shape, rate, seed })[0]!)) as T;
}

/** `dropout` on backends without the mask kernel: the same mask drawn in JS, uploaded, times x. */
export function dropoutComposite<T extends tf.Tensor>(x: T, rate: number, seed: number): T {
  if (rate === 0) return x.clone();
  return tf.tidy(() => x.mul(tf.tensor(dropoutMask(x.size, rate, seed), x.shape, 'float32'))) as T;
}

// ---------------------------------------------------------------------------------------------------------
// gatherAttention

export interface GatherAttentionArgs {
  /** neighbours per row (f); index and mask have n·f elements */
  fanout: number;
  /** attention heads H; the width of xw must be divisible by it */
  heads: number;
  /** LeakyReLU slope of the logits (default 0.2, as in the GAT paper) */
  negativeSlope?: number;
}

/**
 * The neighbour half of a GAT layer (Veličković et al., 2018) for one edge type, fused: per row i and
 * head h, over the sampled neighbours j with mask ≠ 0,
 *
 *   e_ij = LeakyReLU(src[index_ij, h] + dst[i, h]),  α_ij = softmax_j(e_ij),  out[i, h] = Σ_j α_ij xw[index_ij, h]
 *
 * where `xw[·, h]` is head h's slice of width C/H. The caller projects the neighbour table once and
 * scores it: xw = x_src · W, src[r, h] = a_src,h · xw[r, h], dst[i, h] = a_dst,h · (x_dst · W)[i, h].
 *
 * Shapes: xw [m, C], src [m, H], dst [n, H], index int32 and mask float32 with n·f elements → [n, C].
 * A row with no valid neighbour gets zeros. Positions with mask 0 are never read; every other index must
 * lie in [0, m). Differentiable in xw, src and dst. The composite (gat_conv's masked softmax) runs 26
 * kernels forward and 124 with gradients; this is one forward and one backward. Results match the
 * composite to float32 rounding (its +1e-16 in the softmax denominator aside).
 */
export function gatherAttention(
  xw: tf.Tensor2D,
  src: tf.Tensor2D,
  dst: tf.Tensor2D,
  index: tf.Tensor,
  mask: tf.Tensor,
  args: GatherAttentionArgs,
): tf.Tensor2D {
  const { fanout, heads } = args;
  const negativeSlope = args.negativeSlope ?? 0.2;
  checkAttentionArgs(xw, src, dst, index, mask, args);
  if (!fusedOnActiveBackend(FusedKernelName.gatherAttention)) return gatherAttentionComposite(xw, src, dst, index, mask, args);
  const [out, alpha] = run(FusedKernelName.gatherAttention, { xw, src, dst, index, mask }, { fanout, heads, negativeSlope, maskShape: mask.shape });
  alpha!.dispose();
  return out as tf.Tensor2D;
}

/** `gatherAttention` as standard tf ops (the masked softmax of `GatConv`, over gathered rows). */
export function gatherAttentionComposite(
  xw: tf.Tensor2D,
  src: tf.Tensor2D,
  dst: tf.Tensor2D,
  index: tf.Tensor,
  mask: tf.Tensor,
  args: GatherAttentionArgs,
): tf.Tensor2D {
  const n = checkAttentionArgs(xw, src, dst, index, mask, args);
  const { fanout: f, heads } = args;
  const [m, c] = xw.shape;
  const hd = c / heads;
  return tf.tidy(() => {
    if (n === 0 || m === 0) return tf.zeros([n, c]);
    const mk = mask.reshape([n * f]);
    const safe = clampIndex(index.reshape([n * f]), m);
    const wh = tf.gather(xw, safe).reshape([n, f, heads, hd]);
    const logits = tf.leakyRelu(tf.gather(src, safe).reshape([n, f, heads]).add(dst.reshape([n, 1, heads])), args.negativeSlope ?? 0.2);
    const m3 = mk.reshape([n, f, 1]);
    // Masked softmax over the neighbour axis; all-masked rows come out as zeros. `where`, not adding
    // (mask − 1)·1e9: a padded position holding a huge value would otherwise win the max.
    const masked = tf.where(tf.greater(m3, 0).tile([1, 1, heads]), logits, tf.fill(logits.shape, -1e9));
    const e = tf.exp(masked.sub(masked.max(1, true))).mul(m3);
    const alpha = e.div(e.sum(1, true).add(1e-16));
    return wh.mul(alpha.reshape([n, f, heads, 1])).sum(1).reshape([n, c]) as tf.Tensor2D;
  });
}

/**
 * Clamps int32 indices into [0, m). Not `tf.clipByValue`: the wasm ClipByValue kernel reads int32 data
 * as float32 (tfjs-backend-wasm 4.22) and returns the indices unchanged or zeroed.
 */
function clampIndex(index: tf.Tensor, m: number): tf.Tensor {
  return tf.minimum(tf.maximum(index, tf.scalar(0, 'int32')), tf.scalar(m - 1, 'int32'));
}

// ---------------------------------------------------------------------------------------------------------
// argument checks

function requireFloat(op: string, tensors: Record<string, tf.Tensor>): void {
  for (const [name, t] of Object.entries(tensors)) {
    if (t.dtype !== 'float32') throw new Error(`${op}: ${name} must be float32 (got ${t.dtype})`);
  }
}

/** Checks x / index / weights (or mask) / fanout; returns n. */
function checkGatherArgs(op: string, x: tf.Tensor, index: tf.Tensor, weights: tf.Tensor, weightsName: string, fanout: number): number {
  if (x.rank !== 2) throw new Error(`${op}: x must be 2-D [m, c] (got shape [${x.shape}])`);
  if (index.dtype !== 'int32') throw new Error(`${op}: index must be int32 (got ${index.dtype})`);
  if (!Number.isInteger(fanout) || fanout < 1) throw new Error(`${op}: fanout must be a positive integer (got ${fanout})`);
  if (index.size % fanout !== 0) throw new Error(`${op}: index has ${index.size} elements, not a multiple of fanout ${fanout}`);
  if (weights.size !== index.size) {
    throw new Error(`${op}: ${weightsName} must have as many elements as index (${index.size}) (got shape [${weights.shape}])`);
  }
  return index.size / fanout;
}

function checkAttentionArgs(xw: tf.Tensor2D, src: tf.Tensor2D, dst: tf.Tensor2D, index: tf.Tensor, mask: tf.Tensor, args: GatherAttentionArgs): number {
  const op = 'gatherAttention';
  const n = checkGatherArgs(op, xw, index, mask, 'mask', args.fanout);
  requireFloat(op, { xw, src, dst, mask });
  const { heads } = args;
  const [m, c] = xw.shape;
  if (!Number.isInteger(heads) || heads < 1 || c % heads !== 0) {
    throw new Error(`${op}: heads must be a positive integer dividing the width ${c} (got ${heads})`);
  }
  if (src.rank !== 2 || src.shape[0] !== m || src.shape[1] !== heads) throw new Error(`${op}: src must have shape [${m}, ${heads}] (got [${src.shape}])`);
  if (dst.rank !== 2 || dst.shape[0] !== n || dst.shape[1] !== heads) throw new Error(`${op}: dst must have shape [${n}, ${heads}] (got [${dst.shape}])`);
  return n;
}
