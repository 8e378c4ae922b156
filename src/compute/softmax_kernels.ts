/**
 * The recommender's training loss as two typed kernels (see fused.ts): the scores of B users × M candidates
 * and the multi-positive sampled softmax over them, forward in one pass and backward in one pass.
 *
 *   s[b, m] = logits[b, m] + w · pop[m] + gate[b] · pair[cell[b, m] − 1]   (no pair term where cell = 0)
 *   loss    = Σ_{b with a positive} (logsumexp_m s[b, ·] − Σ_m s[b, m] · pos[b, m] / Σ_m pos[b, m]) / #such rows
 *
 * As standard ops this is ~20 kernels over [B, M] tensors each way (at B = 512, M = 4,096: 2M floats per
 * kernel, plus the all-ones tensors TF.js builds for each sum's gradient): ~250 ms of a ~750 ms step at
 * `medium`. Row statistics are float64.
 */
import type { KernelArray, TypedKernel } from './typed_kernel.js';

export const SoftmaxKernelName = {
  rankingSoftmax: 'GnnctlRankingSoftmax',
  rankingSoftmaxGrad: 'GnnctlRankingSoftmaxGrad',
} as const;

const f32 = (a: KernelArray) => a as Float32Array;
const i32 = (a: KernelArray) => a as Int32Array;

/** One user's scores into `row` (float32, as the composite adds them). */
function scoreRow(b: number, M: number, logits: Float32Array, w: number, pop: Float32Array, pair: Float32Array, cell: Int32Array, gate: Float32Array, row: Float32Array): void {
  const o = b * M;
  const g = gate[b]!;
  for (let m = 0; m < M; m++) {
    let s = Math.fround(logits[o + m]! + Math.fround(pop[m]! * w));
    const c = cell[o + m]!;
    if (c > 0) s = Math.fround(s + Math.fround(pair[c - 1]! * g));
    row[m] = s;
  }
}

/** log Σ exp(row), stable. */
function logSumExp(row: Float32Array): number {
  let max = -Infinity;
  for (let m = 0; m < row.length; m++) if (row[m]! > max) max = row[m]!;
  if (max === -Infinity) return max;
  let sum = 0;
  for (let m = 0; m < row.length; m++) sum += Math.exp(row[m]! - max);
  return max + Math.log(sum);
}

/** inputs: logits [B, M], popWeight [1], pop [M], pair [P], cell int32 [B·M], gate [B, 1], positives [B, M]. */
const INPUTS = ['logits', 'popWeight', 'pop', 'pair', 'cell', 'gate', 'positives'] as const;

/** Outputs the loss [] and each row's logsumexp [B] (kept for the backward pass). */
export const rankingSoftmaxKernel: TypedKernel = {
  name: SoftmaxKernelName.rankingSoftmax,
  inputs: INPUTS,
  outputs: ([logits]) => [
    { shape: [], dtype: 'float32' },
    { shape: [logits!.shape[0]!], dtype: 'float32' },
  ],
  compute([logits, popWeight, pop, pair, cell, gate, positives], [loss, lse], [li]) {
    const [B, M] = li!.shape as [number, number];
    const row = new Float32Array(M);
    const pos = f32(positives!);
    let total = 0;
    let rows = 0;
    for (let b = 0; b < B; b++) {
      scoreRow(b, M, f32(logits!), f32(popWeight!)[0]!, f32(pop!), f32(pair!), i32(cell!), f32(gate!), row);
      const l = logSumExp(row);
      f32(lse!)[b] = l;
      let count = 0;
      let sp = 0;
      for (let m = 0; m < M; m++) {
        const p = pos[b * M + m]!;
        count += p;
        sp += row[m]! * p;
      }
      if (count > 0) {
        total += l - sp / count;
        rows++;
      }
    }
    f32(loss!)[0] = total / Math.max(1, rows);
  },
};

/** inputs: dy [], the forward's inputs, lse [B] → dlogits [B, M], dpopWeight [1], dpair [P], dgate [B, 1]. */
export const rankingSoftmaxGradKernel: TypedKernel = {
  name: SoftmaxKernelName.rankingSoftmaxGrad,
  inputs: ['dy', ...INPUTS, 'lse'],
  outputs: ([, logits, popWeight, , pair, , gate]) => [
    { shape: logits!.shape, dtype: 'float32' },
    { shape: popWeight!.shape, dtype: 'float32' },
    { shape: pair!.shape, dtype: 'float32' },
    { shape: gate!.shape, dtype: 'float32' },
  ],
  compute([dy, logits, popWeight, pop, pair, cell, gate, positives, lse], [dlogits, dw, dpair, dgate], [, li]) {
    const [B, M] = li!.shape as [number, number];
    const pos = f32(positives!);
    const cells = i32(cell!);
    const pairV = f32(pair!);
    const popV = f32(pop!);
    const dl = f32(dlogits!);
    const dp = f32(dpair!);
    const dg = f32(dgate!);
    dp.fill(0);
    const counts = new Float64Array(B);
    let rows = 0;
    for (let b = 0; b < B; b++) {
      let c = 0;
      for (let m = 0; m < M; m++) c += pos[b * M + m]!;
      counts[b] = c;
      if (c > 0) rows++;
    }
    const scale = f32(dy!)[0]! / Math.max(1, rows);
    const row = new Float32Array(M);
    let dwSum = 0;
    for (let b = 0; b < B; b++) {
      const o = b * M;
      let dgb = 0;
      if (counts[b] === 0) {
        dl.fill(0, o, o + M);
        dg[b] = 0;
        continue;
      }
      scoreRow(b, M, f32(logits!), f32(popWeight!)[0]!, popV, pairV, cells, f32(gate!), row);
      const l = f32(lse!)[b]!;
      const inv = 1 / counts[b]!;
      const g = f32(gate!)[b]!;
      for (let m = 0; m < M; m++) {
        const d = scale * (Math.exp(row[m]! - l) - pos[o + m]! * inv);
        dl[o + m] = d;
        dwSum += d * popV[m]!;
        const c = cells[o + m]!;
        if (c > 0) {
          dp[c - 1] = dp[c - 1]! + d * g;
          dgb += d * pairV[c - 1]!;
        }
      }
      dg[b] = dgb;
    }
    f32(dw!)[0] = dwSum;
  },
};
