/**
 * The faster wasm kernels of `src/compute/wasm-fast-kernels.ts` (Transpose, BatchMatMul, SplitV, Concat,
 * Sum; products and large sums in onnxruntime) against the cpu backend: forward and gradients, on the
 * shapes their fast paths take and on the ones they hand back to the shipped kernels (other permutations,
 * size-1 and empty dimensions, dtypes); and which products reach onnxruntime.
 */
import { tf } from '../../src/core/tf.js';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { OrtGemm } from '../../src/compute/ort_gemm.js';
import { matMulLibrary, withRowDependentProducts } from '../../src/compute/wasm_fast_kernels.js';
import { ints, maxRelDiff, runOp, uniform, type OpCase } from './ops.js';

const TOL = 1e-5;

beforeAll(async () => {
  const info = await selectBackend('wasm');
  expect(info.replaced_kernels).toEqual(expect.arrayContaining(['Transpose', 'BatchMatMul', 'SplitV', 'Concat', 'Sum']));
});

/**
 * Runs `c` on wasm and cpu; forward and gradients must agree, exactly for int32 outputs. A case may loosen
 * the tolerance (`tol`): sums of thousands of float32 terms taken in another order (onnxruntime's blocked
 * kernels against the cpu backend's sequential loops) differ by more than 1e-5 of their size.
 */
async function matchesCpu(c: OpCase & { tol?: number }): Promise<void> {
  const tol = c.tol ?? TOL;
  const cpu = await runOp(c, 'cpu');
  const wasm = await runOp(c, 'wasm');
  expect(wasm.leaked).toBe(0);
  expect(cpu.leaked).toBe(0);
  expect(wasm.forward.map((f) => f.length)).toEqual(cpu.forward.map((f) => f.length));
  expect(maxRelDiff(wasm.forward, cpu.forward)).toBeLessThanOrEqual(tol);
  expect(wasm.grads.length).toBe(cpu.grads.length);
  expect(maxRelDiff(wasm.grads, cpu.grads)).toBeLessThanOrEqual(tol);
}

/** Runs `c` forward only on wasm and cpu and requires identical values (int32 data: bit-exact copies). */
async function identicalToCpu(c: OpCase): Promise<void> {
  const op = { ...c, wrt: [] };
  const cpu = await runOp(op, 'cpu');
  const wasm = await runOp(op, 'wasm');
  expect(wasm.leaked).toBe(0);
  expect(wasm.forward).toEqual(cpu.forward);
}

const cases = (list: (OpCase & { tol?: number })[]) => list.map((c) => [c.name, c] as const);

describe('the replacements are installed', () => {
  it.each([
    ['Transpose', 'fastTranspose'],
    ['BatchMatMul', 'fastMatMul'],
    ['SplitV', 'fastSplit'],
    ['Concat', 'fastConcat'],
    ['Sum', 'fastSum'],
  ])('%s runs %s', (kernel, fn) => {
    expect(tf.getKernel(kernel, 'wasm')?.kernelFunc.name).toBe(fn);
  });
});

describe('Transpose', () => {
  it.each(
    cases([
      { name: '2-D [5, 7] perm [1, 0]', inputs: () => [uniform([5, 7], 1)], forward: (x) => tf.transpose(x!, [1, 0]) },
      { name: '2-D [64, 192] perm [1, 0]', inputs: () => [uniform([64, 192], 2)], forward: (x) => tf.transpose(x!, [1, 0]) },
      { name: '3-D [3, 5, 7] perm [0, 2, 1] (batched)', inputs: () => [uniform([3, 5, 7], 3)], forward: (x) => tf.transpose(x!, [0, 2, 1]) },
      { name: '4-D [2, 3, 4, 5] perm [0, 1, 3, 2] (batched)', inputs: () => [uniform([2, 3, 4, 5], 4)], forward: (x) => tf.transpose(x!, [0, 1, 3, 2]) },
      { name: 'size-1 dims: [5, 1, 7] perm [2, 1, 0]', inputs: () => [uniform([5, 1, 7], 5)], forward: (x) => tf.transpose(x!, [2, 1, 0]) },
      { name: 'size-1 dims: [1, 5, 7] perm [0, 2, 1]', inputs: () => [uniform([1, 5, 7], 6)], forward: (x) => tf.transpose(x!, [0, 2, 1]) },
      { name: 'size-1 dims: [5, 7, 1] perm [1, 0, 2]', inputs: () => [uniform([5, 7, 1], 7)], forward: (x) => tf.transpose(x!, [1, 0, 2]) },
      { name: 'fallback: [2, 3, 4] perm [1, 0, 2]', inputs: () => [uniform([2, 3, 4], 8)], forward: (x) => tf.transpose(x!, [1, 0, 2]) },
      { name: 'fallback: [2, 3, 4] perm [2, 0, 1]', inputs: () => [uniform([2, 3, 4], 9)], forward: (x) => tf.transpose(x!, [2, 0, 1]) },
      { name: 'fallback: [2, 3, 4] perm [1, 2, 0]', inputs: () => [uniform([2, 3, 4], 10)], forward: (x) => tf.transpose(x!, [1, 2, 0]) },
      { name: 'fallback: [2, 3, 4] perm [2, 1, 0]', inputs: () => [uniform([2, 3, 4], 11)], forward: (x) => tf.transpose(x!, [2, 1, 0]) },
      { name: 'fallback: [2, 3, 4, 5] perm [0, 2, 1, 3]', inputs: () => [uniform([2, 3, 4, 5], 12)], forward: (x) => tf.transpose(x!, [0, 2, 1, 3]) },
      { name: 'fallback: [1, 1] perm [1, 0]', inputs: () => [uniform([1, 1], 13)], forward: (x) => tf.transpose(x!, [1, 0]) },
      { name: 'fallback: [1, 6] perm [1, 0]', inputs: () => [uniform([1, 6], 14)], forward: (x) => tf.transpose(x!, [1, 0]) },
      { name: 'identity perm [0, 1]', inputs: () => [uniform([3, 4], 15)], forward: (x) => tf.transpose(x!, [0, 1]) },
      { name: 'empty [0, 5] perm [1, 0]', inputs: () => [uniform([0, 5], 16)], forward: (x) => tf.transpose(x!, [1, 0]) },
    ]),
  )('matches cpu: %s', async (_n, c) => {
    await matchesCpu(c);
  });

  it.each(
    cases([
      { name: 'int32 [4, 6] perm [1, 0]', inputs: () => [tf.tensor2d(Int32Array.from([0x7fa00001, -1, 0x7f800001, 123456789, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]), [4, 6], 'int32')], forward: (x) => tf.transpose(x!, [1, 0]) },
      { name: 'int32 [2, 3, 4] perm [0, 2, 1]', inputs: () => [ints([2, 3, 4], 17, 1 << 30)], forward: (x) => tf.transpose(x!, [0, 2, 1]) },
      { name: 'bool [3, 4] perm [1, 0] (shipped kernel)', inputs: () => [uniform([3, 4], 18)], forward: (x) => tf.cast(tf.transpose(tf.greater(x!, 0), [1, 0]), 'int32') },
    ]),
  )('copies exactly: %s', async (_n, c) => {
    await identicalToCpu(c);
  });
});

describe('BatchMatMul', () => {
  it.each(
    cases([
      { name: 'plain [4, 5]·[5, 3]', inputs: () => [uniform([4, 5], 20), uniform([5, 3], 21)], forward: (a, b) => tf.matMul(a!, b!) },
      { name: 'transposeA [5, 4]ᵀ·[5, 3]', inputs: () => [uniform([5, 4], 22), uniform([5, 3], 23)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
      { name: 'transposeB [4, 5]·[3, 5]ᵀ', inputs: () => [uniform([4, 5], 24), uniform([3, 5], 25)], forward: (a, b) => tf.matMul(a!, b!, false, true) },
      { name: 'both [5, 4]ᵀ·[3, 5]ᵀ', inputs: () => [uniform([5, 4], 26), uniform([3, 5], 27)], forward: (a, b) => tf.matMul(a!, b!, true, true) },
      { name: 'SAGE shape [128, 192]ᵀ·[128, 64]', inputs: () => [uniform([128, 192], 28), uniform([128, 64], 29)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
      { name: 'batched [2, 4, 5]·[2, 5, 3]', inputs: () => [uniform([2, 4, 5], 30), uniform([2, 5, 3], 31)], forward: (a, b) => tf.matMul(a!, b!) },
      { name: 'batched transposeA [2, 5, 4]ᵀ·[2, 5, 3]', inputs: () => [uniform([2, 5, 4], 32), uniform([2, 5, 3], 33)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
      { name: 'batched transposeB [2, 4, 5]·[2, 3, 5]ᵀ', inputs: () => [uniform([2, 4, 5], 34), uniform([2, 3, 5], 35)], forward: (a, b) => tf.matMul(a!, b!, false, true) },
      { name: 'batched both [3, 5, 4]ᵀ·[3, 2, 5]ᵀ', inputs: () => [uniform([3, 5, 4], 36), uniform([3, 2, 5], 37)], forward: (a, b) => tf.matMul(a!, b!, true, true) },
      // Forward only: TF.js's BatchMatMul gradient does not reduce a broadcast batch (on cpu too).
      { name: 'broadcast batch [1, 4, 5]·[3, 2, 5]ᵀ', inputs: () => [uniform([1, 4, 5], 38), uniform([3, 2, 5], 39)], forward: (a, b) => tf.matMul(a!, b!, false, true), wrt: [] },
      { name: 'size-1 batch [1, 5, 4]ᵀ·[1, 5, 3]', inputs: () => [uniform([1, 5, 4], 40), uniform([1, 5, 3], 41)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
      { name: 'fallback: a [5, 1]ᵀ (a row vector)', inputs: () => [uniform([5, 1], 42), uniform([5, 3], 43)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
      { name: 'fallback: b [1, 5]ᵀ (a column vector)', inputs: () => [uniform([4, 5], 44), uniform([1, 5], 45)], forward: (a, b) => tf.matMul(a!, b!, false, true) },
      { name: 'batched with one row: [2, 1, 5]·[2, 3, 5]ᵀ', inputs: () => [uniform([2, 1, 5], 46), uniform([2, 3, 5], 47)], forward: (a, b) => tf.matMul(a!, b!, false, true) },
      { name: 'in onnxruntime blocks (training step) [700, 200]·[200, 64]', inputs: () => [uniform([700, 200], 48), uniform([200, 64], 49)], forward: (a, b) => withRowDependentProducts(() => tf.matMul(a!, b!)), tol: 1e-4 },
      { name: 'in onnxruntime blocks (training step) [700, 200]·[64, 200]ᵀ', inputs: () => [uniform([700, 200], 50), uniform([64, 200], 51)], forward: (a, b) => withRowDependentProducts(() => tf.matMul(a!, b!, false, true)), tol: 1e-4 },
      { name: 'weight gradient shape [3000, 49]ᵀ·[3000, 64]', inputs: () => [uniform([3000, 49], 52), uniform([3000, 64], 53)], forward: (a, b) => tf.matMul(a!, b!, true, false), tol: 1e-4 },
      { name: 'XNNPACK: narrow inner dimension [1000, 64]·[64, 64]', inputs: () => [uniform([1000, 64], 54), uniform([64, 64], 55)], forward: (a, b) => tf.matMul(a!, b!) },
      { name: 'XNNPACK: transposed A, large output [50, 300]ᵀ·[50, 200]', inputs: () => [uniform([50, 300], 56), uniform([50, 200], 57)], forward: (a, b) => tf.matMul(a!, b!, true, false) },
    ]),
  )('matches cpu (and its gradients, transposed matmuls themselves): %s', async (_n, c) => {
    await matchesCpu(c);
  });

  describe('which products go to onnxruntime', () => {
    let calls: MockInstance;
    beforeEach(async () => {
      await tf.setBackend('wasm');
      calls = vi.spyOn(OrtGemm.prototype, 'run');
    });
    afterEach(() => calls.mockRestore());

    it('runs in onnxruntime on this machine', () => {
      expect(matMulLibrary()).toBe('onnxruntime');
    });

    // [a shape, b shape, transA, transB, onnxruntime calls outside / inside withRowDependentProducts]
    it.each([
      ['a weight gradient (Aᵀ·B over 5,000 rows)', [5000, 272], [5000, 64], true, false, 1, 1],
      ['small output', [300, 64], [64, 64], false, false, 0, 1],
      ['small output, B transposed', [300, 64], [32, 64], false, true, 0, 1],
      // 32,000 / 64 = 500 rows a block: 1,200 rows → 3 blocks
      ['large output, wide inner dimension, in blocks of 500 rows', [1200, 272], [272, 64], false, false, 0, 3],
      ['large output, narrow inner dimension: XNNPACK', [1200, 64], [64, 64], false, false, 0, 0],
      ['large output of Aᵀ·B (not contiguous in blocks): XNNPACK', [50, 300], [50, 200], true, false, 0, 0],
      ['batched: XNNPACK', [2, 30, 40], [2, 40, 50], false, false, 0, 0],
    ] as const)('%s', (_n, as, bs, ta, tb, outside, inside) => {
      const product = (): void => tf.tidy(() => void tf.matMul(uniform([...as], 60), uniform([...bs], 61), ta, tb));
      product();
      expect(calls).toHaveBeenCalledTimes(outside);
      withRowDependentProducts(product);
      expect(calls).toHaveBeenCalledTimes(outside + inside);
    });

    it("outside a training step a row's product does not depend on how many rows are computed with it", () => {
      // onnxruntime rounds a row differently by block size; XNNPACK (used here outside the scope) does not.
      const a = uniform([1000, 272], 64);
      const b = uniform([272, 64], 65);
      const whole = tf.tidy(() => tf.matMul(a, b).dataSync());
      for (const rows of [1, 7, 333]) {
        for (let lo = 0; lo < 1000; lo += rows) {
          const part = tf.tidy(() => tf.matMul(a.slice([lo, 0], [Math.min(rows, 1000 - lo), 272]), b).dataSync());
          expect(Array.from(part)).toEqual(Array.from(whole.subarray(lo * 64, lo * 64 + part.length)));
        }
      }
      tf.dispose([a, b]);
    });

    it('a large column sum is 1ᵀ·X in onnxruntime; a small one stays in TypeScript', () => {
      tf.tidy(() => tf.sum(uniform([3000, 64], 62), 0));
      expect(calls).toHaveBeenCalledTimes(1);
      tf.tidy(() => tf.sum(uniform([256, 64], 63), 0));
      expect(calls).toHaveBeenCalledTimes(1);
    });
  });
});

describe('SplitV', () => {
  it.each(
    cases([
      { name: '[6, 4] sizes [2, 3, 1] axis 0', inputs: () => [uniform([6, 4], 50)], forward: (x) => tf.split(x!, [2, 3, 1], 0) },
      { name: '[4, 6] sizes [1, 2, 3] axis 1', inputs: () => [uniform([4, 6], 51)], forward: (x) => tf.split(x!, [1, 2, 3], 1) },
      { name: '[2, 3, 6] sizes [2, 4] axis 2 (last)', inputs: () => [uniform([2, 3, 6], 52)], forward: (x) => tf.split(x!, [2, 4], 2) },
      { name: '[2, 3, 6] sizes [5, 1] axis -1', inputs: () => [uniform([2, 3, 6], 53)], forward: (x) => tf.split(x!, [5, 1], -1) },
      { name: '[2, 6, 3] sizes [1, 5] axis 1 (middle)', inputs: () => [uniform([2, 6, 3], 54)], forward: (x) => tf.split(x!, [1, 5], 1) },
      { name: '[4, 6] into 3 equal parts axis 1', inputs: () => [uniform([4, 6], 55)], forward: (x) => tf.split(x!, 3, 1) },
      { name: '[4, 6] sizes [2, -1] axis 1', inputs: () => [uniform([4, 6], 56)], forward: (x) => tf.split(x!, [2, -1], 1) },
      { name: '[5, 4] sizes [0, 5] axis 0 (an empty part)', inputs: () => [uniform([5, 4], 57)], forward: (x) => tf.split(x!, [0, 5], 0) },
      { name: 'long rows [3, 600] sizes [300, 300] axis 1', inputs: () => [uniform([3, 600], 58)], forward: (x) => tf.split(x!, [300, 300], 1) },
      { name: 'GNN concat gradient [128, 192] into 3 × 64 axis 1', inputs: () => [uniform([128, 192], 59)], forward: (x) => tf.split(x!, [64, 64, 64], 1) },
    ]),
  )('matches cpu: %s', async (_n, c) => {
    await matchesCpu(c);
  });

  it('copies int32 exactly', async () => {
    await identicalToCpu({ name: 'int32', inputs: () => [ints([4, 6], 60, 1 << 30)], forward: (x) => tf.split(x!, [1, 5], 1) });
  });
});

describe('Concat', () => {
  it.each(
    cases([
      { name: 'axis 0: [2, 3] + [4, 3] + [1, 3]', inputs: () => [uniform([2, 3], 70), uniform([4, 3], 71), uniform([1, 3], 72)], forward: (a, b, c) => tf.concat([a!, b!, c!], 0) },
      { name: 'axis 1: [3, 2] + [3, 5]', inputs: () => [uniform([3, 2], 73), uniform([3, 5], 74)], forward: (a, b) => tf.concat([a!, b!], 1) },
      { name: 'axis 1 of 3-D: [2, 1, 4] + [2, 3, 4]', inputs: () => [uniform([2, 1, 4], 75), uniform([2, 3, 4], 76)], forward: (a, b) => tf.concat([a!, b!], 1) },
      { name: 'axis -1 of 3-D: [2, 3, 1] + [2, 3, 2]', inputs: () => [uniform([2, 3, 1], 77), uniform([2, 3, 2], 78)], forward: (a, b) => tf.concat([a!, b!], -1) },
      { name: 'an empty input: [0, 3] + [2, 3] axis 0 (shipped kernel)', inputs: () => [uniform([0, 3], 79), uniform([2, 3], 80)], forward: (a, b) => tf.concat([a!, b!], 0) },
      { name: 'an empty input among three: [2, 0] + [2, 3] + [2, 1] axis 1', inputs: () => [uniform([2, 0], 81), uniform([2, 3], 82), uniform([2, 1], 83)], forward: (a, b, c) => tf.concat([a!, b!, c!], 1) },
      { name: 'long rows: [2, 300] + [2, 400] axis 1', inputs: () => [uniform([2, 300], 84), uniform([2, 400], 85)], forward: (a, b) => tf.concat([a!, b!], 1) },
      { name: 'SAGE inputs: [128, 64] × 3 axis 1', inputs: () => [uniform([128, 64], 86), uniform([128, 64], 87), uniform([128, 64], 88)], forward: (a, b, c) => tf.concat([a!, b!, c!], 1) },
    ]),
  )('matches cpu: %s', async (_n, c) => {
    await matchesCpu(c);
  });

  it('copies int32 exactly; mixed dtypes are cast by the op first', async () => {
    await identicalToCpu({ name: 'int32', inputs: () => [ints([3, 2], 89, 1 << 30), ints([3, 4], 90, 1 << 30)], forward: (a, b) => tf.concat([a!, b!], 1) });
    await identicalToCpu({ name: 'int32 axis 0', inputs: () => [ints([1, 2], 91, 1 << 30), ints([3, 2], 92, 1 << 30)], forward: (a, b) => tf.concat([a!, b!], 0) });
  });
});

describe('Sum', () => {
  it.each(
    cases([
      { name: '[5, 4] axis 0 (bias gradient)', inputs: () => [uniform([5, 4], 100)], forward: (x) => tf.sum(x!, 0) },
      { name: '[5, 4] axis 0 keepDims', inputs: () => [uniform([5, 4], 101)], forward: (x) => tf.sum(x!, 0, true) },
      { name: '[2, 3, 4] axes [0, 1]', inputs: () => [uniform([2, 3, 4], 102)], forward: (x) => tf.sum(x!, [0, 1]) },
      { name: '[2, 3, 4] axes [1, 0] keepDims', inputs: () => [uniform([2, 3, 4], 103)], forward: (x) => tf.sum(x!, [1, 0], true) },
      { name: '[2, 3, 4] axis 0 keepDims', inputs: () => [uniform([2, 3, 4], 104)], forward: (x) => tf.sum(x!, 0, true) },
      { name: '[2, 3, 4] axis -3 (= 0)', inputs: () => [uniform([2, 3, 4], 105)], forward: (x) => tf.sum(x!, -3) },
      { name: 'long columns [20000, 3] axis 0', inputs: () => [uniform([20000, 3], 106)], forward: (x) => tf.sum(x!, 0) },
      { name: 'a large bias gradient [3000, 64] axis 0 (onnxruntime)', inputs: () => [uniform([3000, 64], 114)], forward: (x) => tf.sum(x!, 0), tol: 1e-4 },
      { name: 'empty rows [0, 4] axis 0', inputs: () => [uniform([0, 4], 107)], forward: (x) => tf.sum(x!, 0) },
      { name: 'fallback: all axes of [3, 4]', inputs: () => [uniform([3, 4], 108)], forward: (x) => tf.sum(x!) },
      { name: 'fallback: all axes [0, 1] keepDims', inputs: () => [uniform([3, 4], 109)], forward: (x) => tf.sum(x!, [0, 1], true) },
      { name: 'fallback: non-leading axis 1 of [2, 3, 4]', inputs: () => [uniform([2, 3, 4], 110)], forward: (x) => tf.sum(x!, 1) },
      { name: 'fallback: last axis of [3, 4]', inputs: () => [uniform([3, 4], 111)], forward: (x) => tf.sum(x!, -1) },
      { name: 'fallback: axes [0, 2] of [2, 3, 4]', inputs: () => [uniform([2, 3, 4], 112)], forward: (x) => tf.sum(x!, [0, 2]) },
    ]),
  )('matches cpu: %s', async (_n, c) => {
    await matchesCpu(c);
  });

  it('sums int32 exactly (shipped kernel)', async () => {
    await identicalToCpu({ name: 'int32', inputs: () => [ints([6, 3], 113, 1000)], forward: (x) => tf.sum(x!, 0) });
  });
});
