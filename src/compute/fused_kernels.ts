/**
 * The bodies of gnnctl's fused kernels: forward and backward passes over typed arrays, one loop nest
 * each where TF.js would run 10 to 120 kernels. `fused.ts` registers them (on wasm and cpu), wires the
 * gradients and holds the public ops; the shapes and formulas are documented there.
 *
 * What the loops are up against (this machine, Node 20): a plain JS loop costs ~1 ns per element and
 * pass, wasm's SIMD kernels ~0.1 ns plus 20–50 µs of dispatch each. So fusion pays by removing kernels
 * (most in backward passes) and the loops keep passes few and dependency chains short:
 * - sums run in float64 locals, several independent accumulators at a time, rounded to float32 once;
 * - weighted row sums and scatter-adds work 8 columns at a time in locals (`weightedRowSum`,
 *   `scatterRow`): 1.2–1.45× faster than accumulating row by row into an array;
 * - no allocation inside loops (scratch arrays are made once per call).
 */
import type * as tf from '@tensorflow/tfjs';
import type { KernelArray, TypedKernel } from './typed_kernel.js';

/** TF.js kernel names, prefixed so they can never collide with a kernel a later TF.js release adds. */
export const FusedKernelName = {
  layerNorm: 'GnnctlLayerNorm',
  layerNormGrad: 'GnnctlLayerNormGrad',
  gatherWeightedSum: 'GnnctlGatherWeightedSum',
  gatherWeightedSumGrad: 'GnnctlGatherWeightedSumGrad',
  gatherWeightedSumWeightsGrad: 'GnnctlGatherWeightedSumWeightsGrad',
  dropoutMask: 'GnnctlDropoutMask',
  gatherAttention: 'GnnctlGatherAttention',
  gatherAttentionGrad: 'GnnctlGatherAttentionGrad',
} as const;

const f32 = (a: KernelArray) => a as Float32Array;
const i32 = (a: KernelArray) => a as Int32Array;
const num = (attrs: tf.NamedAttrMap, key: string) => attrs[key] as number;

// ---------------------------------------------------------------------------------------------------------
// LayerNorm

/**
 * x [n, d], gamma [d], beta [d]; attr eps → y [n, d], mean [n, 2], rstd [n] (1 / sqrt(var + eps)).
 * The mean is kept for the backward pass as two float32 values (hi + lo ≈ the float64 mean to ~48 bits):
 * one float32 would shift x̂ by up to |mean|·6e-8·rstd, 6e-5 for a row with |mean| = 1000·std.
 */
export const layerNormKernel: TypedKernel = {
  name: FusedKernelName.layerNorm,
  inputs: ['x', 'gamma', 'beta'],
  outputs: ([x]) => [
    { shape: x!.shape, dtype: 'float32' },
    { shape: [x!.shape[0]!, 2], dtype: 'float32' },
    { shape: [x!.shape[0]!], dtype: 'float32' },
  ],
  compute([x, gamma, beta], [y, mean, rstd], [xi], attrs) {
    const [n, d] = xi!.shape as [number, number];
    layerNormForward(f32(x!), f32(gamma!), f32(beta!), n, d, num(attrs, 'eps'), f32(y!), f32(mean!), f32(rstd!));
  },
};

function layerNormForward(
  x: Float32Array,
  gamma: Float32Array,
  beta: Float32Array,
  n: number,
  d: number,
  eps: number,
  y: Float32Array,
  mean: Float32Array,
  rstd: Float32Array,
): void {
  for (let i = 0; i < n; i++) {
    const o = i * d;
    // One pass for both moments, in float64 and shifted by the row's first value: with float32 inputs
    // the E[(x−K)²] − E[x−K]² cancellation stays ~1e-9 of the variance even for |mean| ≈ 1000·std.
    // Two accumulator chains per moment halve the add-latency bound of the loop.
    const shift = d > 0 ? x[o]! : 0;
    let s0 = 0;
    let s1 = 0;
    let q0 = 0;
    let q1 = 0;
    let j = 0;
    for (; j + 1 < d; j += 2) {
      const a = x[o + j]! - shift;
      const b = x[o + j + 1]! - shift;
      s0 += a;
      q0 += a * a;
      s1 += b;
      q1 += b * b;
    }
    if (j < d) {
      const a = x[o + j]! - shift;
      s0 += a;
      q0 += a * a;
    }
    const m = d > 0 ? (s0 + s1) / d : 0;
    const v = d > 0 ? Math.max(0, (q0 + q1) / d - m * m) : 0;
    const mu = shift + m;
    const r = 1 / Math.sqrt(v + eps);
    j = 0;
    for (; j + 3 < d; j += 4) {
      y[o + j] = (x[o + j]! - mu) * r * gamma[j]! + beta[j]!;
      y[o + j + 1] = (x[o + j + 1]! - mu) * r * gamma[j + 1]! + beta[j + 1]!;
      y[o + j + 2] = (x[o + j + 2]! - mu) * r * gamma[j + 2]! + beta[j + 2]!;
      y[o + j + 3] = (x[o + j + 3]! - mu) * r * gamma[j + 3]! + beta[j + 3]!;
    }
    for (; j < d; j++) y[o + j] = (x[o + j]! - mu) * r * gamma[j]! + beta[j]!;
    const hi = Math.fround(mu);
    mean[2 * i] = hi;
    mean[2 * i + 1] = mu - hi;
    rstd[i] = r;
  }
}

/**
 * dy [n, d], x [n, d], gamma [d], mean [n, 2] (hi, lo), rstd [n] → dx [n, d], dgamma [d], dbeta [d]. With
 * x̂ = (x − μ)·r and g = dy·γ: dx = r·(g − mean(g) − x̂·mean(g·x̂)), dγ = Σ_rows dy·x̂, dβ = Σ_rows dy.
 */
export const layerNormGradKernel: TypedKernel = {
  name: FusedKernelName.layerNormGrad,
  inputs: ['dy', 'x', 'gamma', 'mean', 'rstd'],
  outputs: ([dy]) => [
    { shape: dy!.shape, dtype: 'float32' },
    { shape: [dy!.shape[1]!], dtype: 'float32' },
    { shape: [dy!.shape[1]!], dtype: 'float32' },
  ],
  compute([dy, x, gamma, mean, rstd], [dx, dgamma, dbeta], [dyi]) {
    const [n, d] = dyi!.shape as [number, number];
    layerNormBackward(f32(dy!), f32(x!), f32(gamma!), f32(mean!), f32(rstd!), n, d, f32(dx!), f32(dgamma!), f32(dbeta!));
  },
};

function layerNormBackward(
  dy: Float32Array,
  x: Float32Array,
  gamma: Float32Array,
  mean: Float32Array,
  rstd: Float32Array,
  n: number,
  d: number,
  dx: Float32Array,
  dgamma: Float32Array,
  dbeta: Float32Array,
): void {
  const dg = new Float64Array(d);
  const db = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    const o = i * d;
    const mu = mean[2 * i]! + mean[2 * i + 1]!;
    const r = rstd[i]!;
    // a = Σ g, b = Σ g·x̂ over the row, two chains each (unrolled by 2).
    let a0 = 0;
    let a1 = 0;
    let b0 = 0;
    let b1 = 0;
    let j = 0;
    for (; j + 1 < d; j += 2) {
      const dy0 = dy[o + j]!;
      const dy1 = dy[o + j + 1]!;
      const xh0 = (x[o + j]! - mu) * r;
      const xh1 = (x[o + j + 1]! - mu) * r;
      const g0 = dy0 * gamma[j]!;
      const g1 = dy1 * gamma[j + 1]!;
      a0 += g0;
      a1 += g1;
      b0 += g0 * xh0;
      b1 += g1 * xh1;
      dg[j]! += dy0 * xh0;
      dg[j + 1]! += dy1 * xh1;
      db[j]! += dy0;
      db[j + 1]! += dy1;
    }
    if (j < d) {
      const dy0 = dy[o + j]!;
      const xh0 = (x[o + j]! - mu) * r;
      const g0 = dy0 * gamma[j]!;
      a0 += g0;
      b0 += g0 * xh0;
      dg[j]! += dy0 * xh0;
      db[j]! += dy0;
    }
    const a = (a0 + a1) / d;
    const b = (b0 + b1) / d;
    // dx = r·(g − a − x̂·b) with x̂ = (x − μ)·r, expanded to r·g − c1·x + c0 (float64: no cancellation
    // worth the name even for |μ| ≫ std).
    const c1 = r * r * b;
    const c0 = c1 * mu - r * a;
    for (j = 0; j < d; j++) dx[o + j] = r * dy[o + j]! * gamma[j]! - c1 * x[o + j]! + c0;
  }
  for (let j = 0; j < d; j++) {
    dgamma[j] = dg[j]!;
    dbeta[j] = db[j]!;
  }
}

// ---------------------------------------------------------------------------------------------------------
// GatherWeightedSum

/** x [m, c], index [n·f] int32, weights [n·f]; attr fanout → out [n, c]. */
export const gatherWeightedSumKernel: TypedKernel = {
  name: FusedKernelName.gatherWeightedSum,
  inputs: ['x', 'index', 'weights'],
  outputs: ([x, index], attrs) => [
    { shape: [tfSize(index!) / num(attrs, 'fanout'), x!.shape[1]!], dtype: 'float32' },
  ],
  compute([x, index, weights], [out], [xi], attrs) {
    const [m, c] = xi!.shape as [number, number];
    const f = num(attrs, 'fanout');
    gatherWeightedSumForward(f32(x!), m, c, i32(index!), f32(weights!), f, f32(out!));
  },
};

function gatherWeightedSumForward(
  x: Float32Array,
  m: number,
  c: number,
  index: Int32Array,
  weights: Float32Array,
  f: number,
  out: Float32Array,
): void {
  const n = index.length / f;
  const bases = new Int32Array(f);
  const ws = new Float64Array(f);
  for (let i = 0; i < n; i++) {
    let count = 0;
    for (let j = 0; j < f; j++) {
      const k = i * f + j;
      const w = weights[k]!;
      // Padding: weight 0, any index (possibly invalid, e.g. 0 into an empty table). Never read.
      if (w === 0) continue;
      const idx = index[k]!;
      if (idx < 0 || idx >= m) {
        throw new Error(`gatherWeightedSum: index ${idx} at position ${k} (weight ${w}) is not in [0, ${m - 1}]`);
      }
      bases[count] = idx * c;
      ws[count++] = w;
    }
    weightedRowSum(x, bases, ws, count, 0, c, out, i * c);
  }
}

/**
 * out[o + t] = Σ_{q < count} ws[q] · x[bases[q] + col + t] for t < width. Eight columns at a time are
 * summed over all rows in locals (float64 registers): 1.45× faster than accumulating row by row into an
 * array (0.28 vs 0.41 ms for 512 × 10 rows of 64 here).
 */
function weightedRowSum(
  x: Float32Array,
  bases: Int32Array,
  ws: Float64Array,
  count: number,
  col: number,
  width: number,
  out: Float32Array,
  o: number,
): void {
  let t = 0;
  for (; t + 7 < width; t += 8) {
    let a0 = 0;
    let a1 = 0;
    let a2 = 0;
    let a3 = 0;
    let a4 = 0;
    let a5 = 0;
    let a6 = 0;
    let a7 = 0;
    for (let q = 0; q < count; q++) {
      const w = ws[q]!;
      const b = bases[q]! + col + t;
      a0 += w * x[b]!;
      a1 += w * x[b + 1]!;
      a2 += w * x[b + 2]!;
      a3 += w * x[b + 3]!;
      a4 += w * x[b + 4]!;
      a5 += w * x[b + 5]!;
      a6 += w * x[b + 6]!;
      a7 += w * x[b + 7]!;
    }
    out[o + t] = a0;
    out[o + t + 1] = a1;
    out[o + t + 2] = a2;
    out[o + t + 3] = a3;
    out[o + t + 4] = a4;
    out[o + t + 5] = a5;
    out[o + t + 6] = a6;
    out[o + t + 7] = a7;
  }
  for (; t < width; t++) {
    let a = 0;
    for (let q = 0; q < count; q++) a += ws[q]! * x[bases[q]! + col + t]!;
    out[o + t] = a;
  }
}

/**
 * dx[bases[q] + col + t] += ws[q] · dy[o + t] for q < count, t < width: eight values of the dy row are
 * held in locals while they are added into every target row (1.2× faster than row by row).
 */
function scatterRow(
  dy: Float32Array,
  o: number,
  bases: Int32Array,
  ws: Float64Array,
  count: number,
  col: number,
  width: number,
  dx: Float32Array,
): void {
  let t = 0;
  for (; t + 7 < width; t += 8) {
    const d0 = dy[o + t]!;
    const d1 = dy[o + t + 1]!;
    const d2 = dy[o + t + 2]!;
    const d3 = dy[o + t + 3]!;
    const d4 = dy[o + t + 4]!;
    const d5 = dy[o + t + 5]!;
    const d6 = dy[o + t + 6]!;
    const d7 = dy[o + t + 7]!;
    for (let q = 0; q < count; q++) {
      const w = ws[q]!;
      const b = bases[q]! + col + t;
      dx[b]! += w * d0;
      dx[b + 1]! += w * d1;
      dx[b + 2]! += w * d2;
      dx[b + 3]! += w * d3;
      dx[b + 4]! += w * d4;
      dx[b + 5]! += w * d5;
      dx[b + 6]! += w * d6;
      dx[b + 7]! += w * d7;
    }
  }
  for (; t < width; t++) {
    const d = dy[o + t]!;
    for (let q = 0; q < count; q++) dx[bases[q]! + col + t]! += ws[q]! * d;
  }
}

/** dy [n, c], index [n·f], weights [n·f]; attrs fanout, numRows (m) → dx [m, c] (a weighted scatter-add). */
export const gatherWeightedSumGradKernel: TypedKernel = {
  name: FusedKernelName.gatherWeightedSumGrad,
  inputs: ['dy', 'index', 'weights'],
  outputs: ([dy], attrs) => [{ shape: [num(attrs, 'numRows'), dy!.shape[1]!], dtype: 'float32' }],
  compute([dy, index, weights], [dx], [dyi], attrs) {
    const c = dyi!.shape[1]!;
    scatterWeighted(f32(dy!), c, i32(index!), f32(weights!), num(attrs, 'fanout'), num(attrs, 'numRows'), f32(dx!));
  },
};

function scatterWeighted(
  dy: Float32Array,
  c: number,
  index: Int32Array,
  weights: Float32Array,
  f: number,
  m: number,
  dx: Float32Array,
): void {
  dx.fill(0);
  const n = index.length / f;
  const bases = new Int32Array(f);
  const ws = new Float64Array(f);
  for (let i = 0; i < n; i++) {
    let count = 0;
    for (let j = 0; j < f; j++) {
      const k = i * f + j;
      const w = weights[k]!;
      const idx = index[k]!;
      if (w === 0 || idx < 0 || idx >= m) continue;
      bases[count] = idx * c;
      ws[count++] = w;
    }
    scatterRow(dy, i * c, bases, ws, count, 0, c, dx);
  }
}

/**
 * dy [n, c], x [m, c], index [n·f]; attr fanout → dweights [n·f] with dweights[i·f+j] = dy[i] · x[index].
 * An index outside [0, m) (allowed only where the weight is 0) gets 0.
 */
export const gatherWeightedSumWeightsGradKernel: TypedKernel = {
  name: FusedKernelName.gatherWeightedSumWeightsGrad,
  inputs: ['dy', 'x', 'index'],
  outputs: ([, , index]) => [{ shape: index!.shape, dtype: 'float32' }],
  compute([dy, x, index], [dw], [, xi], attrs) {
    const [m, c] = xi!.shape as [number, number];
    const f = num(attrs, 'fanout');
    const dyv = f32(dy!);
    const xv = f32(x!);
    const idxv = i32(index!);
    const out = f32(dw!);
    for (let k = 0; k < idxv.length; k++) {
      const idx = idxv[k]!;
      if (idx < 0 || idx >= m) {
        out[k] = 0;
        continue;
      }
      out[k] = dot(dyv, ((k / f) | 0) * c, xv, idx * c, c);
    }
  },
};

function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, len: number): number {
  let s0 = 0;
  let s1 = 0;
  let t = 0;
  for (; t + 1 < len; t += 2) {
    s0 += a[ao + t]! * b[bo + t]!;
    s1 += a[ao + t + 1]! * b[bo + t + 1]!;
  }
  if (t < len) s0 += a[ao + t]! * b[bo + t]!;
  return s0 + s1;
}

// ---------------------------------------------------------------------------------------------------------
// Dropout

/**
 * attrs shape, rate, seed → mask (float32, `shape`): 1/(1 − rate) where an element is kept, else 0,
 * drawn as `dropoutDraws` says. No inputs, so never on a gradient path: `dropout` multiplies x by it
 * with the backend's own (SIMD) multiply, whose gradient is dy · mask.
 */
export const dropoutMaskKernel: TypedKernel = {
  name: FusedKernelName.dropoutMask,
  inputs: [],
  outputs: (_inputs, attrs) => [{ shape: attrs.shape as number[], dtype: 'float32' }],
  compute(_ins, [mask], _infos, attrs) {
    dropoutDraws(f32(mask!), num(attrs, 'rate'), num(attrs, 'seed'));
  },
};

/** The kept-element scale, rounded to float32 so `x · scale` equals a float32 multiply by a mask tensor. */
export function dropoutScale(rate: number): number {
  return Math.fround(1 / (1 - rate));
}

/** The keep threshold for a 16-bit draw (see `dropoutDraws`). */
export function dropoutThreshold16(rate: number): number {
  return Math.ceil(rate * 65536);
}

/**
 * Fills `mask`: `dropoutScale(rate)` where an element is kept, else 0.
 *
 * The draws: the q-th `nextU32()` of `new Rng(seed)` decides elements 2q (its low 16 bits) and 2q + 1
 * (its high 16 bits); an element is kept when its 16 bits are ≥ ceil(rate · 2¹⁶). So the keep
 * probability is within 2⁻¹⁶ of 1 − rate (the scale stays exactly 1 / (1 − rate)), and a seed fixes the
 * mask on every backend. The generator (SplitMix32 seeding, xoshiro128**) is `Rng`'s, inlined over
 * int32 locals, and the keep test is branch-free: `Rng.nextU32` keeps unsigned state in object fields,
 * which V8 boxes as doubles, and one 32-bit draw per element with a branch costs ~3× as much (0.8–1 ms
 * for 192k elements here). A test pins the stream to `Rng`'s.
 */
export function dropoutDraws(mask: Float32Array, rate: number, seed: number): void {
  let z = seed >>> 0;
  const splitmix = (): number => {
    z = (z + 0x9e3779b9) >>> 0;
    let t = z;
    t = Math.imul(t ^ (t >>> 16), 0x85ebca6b) >>> 0;
    t = Math.imul(t ^ (t >>> 13), 0xc2b2ae35) >>> 0;
    return (t ^ (t >>> 16)) | 0;
  };
  let s0 = splitmix();
  let s1 = splitmix();
  let s2 = splitmix();
  let s3 = splitmix();
  const threshold = dropoutThreshold16(rate);
  const scale = dropoutScale(rate);
  const size = mask.length;
  for (let k = 0; k < size; k += 2) {
    // xoshiro128**: the output, then the state update (as Rng.nextU32).
    const m5 = Math.imul(s1, 5);
    const draw = Math.imul((m5 << 7) | (m5 >>> 25), 9);
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = (s3 << 11) | (s3 >>> 21);
    // ((bits − threshold) >> 31) + 1 is 1 when bits ≥ threshold, else 0.
    mask[k] = scale * ((((draw & 0xffff) - threshold) >> 31) + 1);
    if (k + 1 < size) mask[k + 1] = scale * ((((draw >>> 16) - threshold) >> 31) + 1);
  }
}

/** The dropout mask as a new float32 array (see `dropoutDraws`). */
export function dropoutMask(size: number, rate: number, seed: number): Float32Array {
  const mask = new Float32Array(size);
  dropoutDraws(mask, rate, seed);
  return mask;
}

// ---------------------------------------------------------------------------------------------------------
// GatherAttention

/**
 * xw [m, H·hd], src [m, H], dst [n, H], index [n·f], mask [n·f]; attrs fanout, heads, negativeSlope →
 * out [n, H·hd], alpha [n·f, H]. Per row i and head h over the neighbours j with mask ≠ 0:
 * e_j = LeakyReLU(src[index_j, h] + dst[i, h]), α = softmax_j(e), out[i, h] = Σ_j α_j xw[index_j, h].
 * A row with no valid neighbour gets zeros (and α = 0).
 */
export const gatherAttentionKernel: TypedKernel = {
  name: FusedKernelName.gatherAttention,
  inputs: ['xw', 'src', 'dst', 'index', 'mask'],
  outputs: ([xw, , , index], attrs) => [
    { shape: [tfSize(index!) / num(attrs, 'fanout'), xw!.shape[1]!], dtype: 'float32' },
    { shape: [tfSize(index!), num(attrs, 'heads')], dtype: 'float32' },
  ],
  compute([xw, src, dst, index, mask], [out, alpha], [xwi], attrs) {
    const [m, c] = xwi!.shape as [number, number];
    gatherAttentionForward(
      f32(xw!),
      m,
      c,
      f32(src!),
      f32(dst!),
      i32(index!),
      f32(mask!),
      num(attrs, 'fanout'),
      num(attrs, 'heads'),
      num(attrs, 'negativeSlope'),
      f32(out!),
      f32(alpha!),
    );
  },
};

function gatherAttentionForward(
  xw: Float32Array,
  m: number,
  c: number,
  src: Float32Array,
  dst: Float32Array,
  index: Int32Array,
  mask: Float32Array,
  f: number,
  heads: number,
  slope: number,
  out: Float32Array,
  alpha: Float32Array,
): void {
  const n = index.length / f;
  const hd = c / heads;
  // Per row, the valid neighbours: table offset, score row, position; then per head their weights.
  const bases = new Int32Array(f);
  const srcRows = new Int32Array(f);
  const pos = new Int32Array(f);
  const ws = new Float64Array(f);
  for (let i = 0; i < n; i++) {
    let count = 0;
    for (let j = 0; j < f; j++) {
      const k = i * f + j;
      if (mask[k] === 0) {
        for (let h = 0; h < heads; h++) alpha[k * heads + h] = 0;
        continue;
      }
      const idx = index[k]!;
      if (idx < 0 || idx >= m) {
        throw new Error(`gatherAttention: index ${idx} at position ${k} (mask ${mask[k]}) is not in [0, ${m - 1}]`);
      }
      bases[count] = idx * c;
      srcRows[count] = idx * heads;
      pos[count++] = k;
    }
    for (let h = 0; h < heads; h++) {
      const o = i * c + h * hd;
      if (count === 0) {
        out.fill(0, o, o + hd);
        continue;
      }
      // Softmax of LeakyReLU(src + dst) over the valid neighbours, shifted by the max.
      const d = dst[i * heads + h]!;
      let mx = -Infinity;
      for (let q = 0; q < count; q++) {
        const pre = src[srcRows[q]! + h]! + d;
        const e = pre > 0 ? pre : slope * pre;
        ws[q] = e;
        if (e > mx) mx = e;
      }
      let total = 0;
      for (let q = 0; q < count; q++) {
        const e = Math.exp(ws[q]! - mx);
        ws[q] = e;
        total += e;
      }
      for (let q = 0; q < count; q++) {
        const a = ws[q]! / total;
        ws[q] = a;
        alpha[pos[q]! * heads + h] = a;
      }
      weightedRowSum(xw, bases, ws, count, h * hd, hd, out, o);
    }
  }
}

/**
 * dy [n, H·hd], xw [m, H·hd], src [m, H], dst [n, H], index [n·f], alpha [n·f, H]; attrs fanout, heads,
 * negativeSlope → dxw [m, H·hd], dsrc [m, H], ddst [n, H]. Per (i, h): dα_j = dy_i · xw_j,
 * dz_j = α_j (dα_j − Σ_k α_k dα_k), de_j = dz_j · (pre_j > 0 ? 1 : slope); dsrc[index_j] += de_j,
 * ddst[i] += de_j, dxw[index_j] += α_j dy_i. Positions with α = 0 (masked) contribute nothing.
 */
export const gatherAttentionGradKernel: TypedKernel = {
  name: FusedKernelName.gatherAttentionGrad,
  inputs: ['dy', 'xw', 'src', 'dst', 'index', 'alpha'],
  outputs: ([, xw, src, dst]) => [
    { shape: xw!.shape, dtype: 'float32' },
    { shape: src!.shape, dtype: 'float32' },
    { shape: dst!.shape, dtype: 'float32' },
  ],
  compute([dy, xw, src, dst, index, alpha], [dxw, dsrc, ddst], [, xwi], attrs) {
    const c = xwi!.shape[1]!;
    gatherAttentionBackward(
      f32(dy!),
      f32(xw!),
      c,
      f32(src!),
      f32(dst!),
      i32(index!),
      f32(alpha!),
      num(attrs, 'fanout'),
      num(attrs, 'heads'),
      num(attrs, 'negativeSlope'),
      f32(dxw!),
      f32(dsrc!),
      f32(ddst!),
    );
  },
};

function gatherAttentionBackward(
  dy: Float32Array,
  xw: Float32Array,
  c: number,
  src: Float32Array,
  dst: Float32Array,
  index: Int32Array,
  alpha: Float32Array,
  f: number,
  heads: number,
  slope: number,
  dxw: Float32Array,
  dsrc: Float32Array,
  ddst: Float32Array,
): void {
  const n = index.length / f;
  const hd = c / heads;
  const bases = new Int32Array(f);
  const srcRows = new Int32Array(f);
  const ws = new Float64Array(f);
  const da = new Float64Array(f);
  dxw.fill(0);
  dsrc.fill(0);
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < heads; h++) {
      const o = i * c + h * hd;
      // α = 0 (masked, or underflowed) contributes nothing below, so only α > 0 is visited.
      let count = 0;
      for (let j = 0; j < f; j++) {
        const k = i * f + j;
        const a = alpha[k * heads + h]!;
        if (a === 0) continue;
        const idx = index[k]!;
        bases[count] = idx * c;
        srcRows[count] = idx * heads;
        ws[count++] = a;
      }
      let s = 0;
      for (let q = 0; q < count; q++) {
        const d = dot(dy, o, xw, bases[q]! + h * hd, hd);
        da[q] = d;
        s += ws[q]! * d;
      }
      const d = dst[i * heads + h]!;
      let dd = 0;
      for (let q = 0; q < count; q++) {
        const pre = src[srcRows[q]! + h]! + d;
        const dz = ws[q]! * (da[q]! - s);
        const de = pre > 0 ? dz : slope * dz;
        dsrc[srcRows[q]! + h]! += de;
        dd += de;
      }
      ddst[i * heads + h] = dd;
      scatterRow(dy, o, bases, ws, count, h * hd, hd, dxw);
    }
  }
}

function tfSize(t: tf.TensorInfo): number {
  let s = 1;
  for (const d of t.shape) s *= d;
  return s;
}
