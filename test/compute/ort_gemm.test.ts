/**
 * `OrtGemm` (src/compute/ort_gemm.ts): synchronous products through onnxruntime's native session, on
 * arrays that are views into a larger buffer, as the wasm heap hands them over.
 */
import { describe, expect, it } from 'vitest';
import { OrtGemm } from '../../src/compute/ort_gemm.js';
import { prng } from './ops.js';

/** op(a)·op(b) in float64, a [ar, ac] and b [br, bc] as stored. */
function reference(a: Float32Array, ar: number, ac: number, ta: boolean, b: Float32Array, br: number, bc: number, tb: boolean): Float64Array {
  const [m, k] = ta ? [ac, ar] : [ar, ac];
  const n = tb ? br : bc;
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += (ta ? a[p * ac + i]! : a[i * ac + p]!) * (tb ? b[j * bc + p]! : b[p * bc + j]!);
      out[i * n + j] = s;
    }
  }
  return out;
}

describe('OrtGemm', () => {
  const gemm = OrtGemm.load();

  it('loads (onnxruntime-node is a dependency) and passes its own check', () => {
    expect(gemm).not.toBeNull();
  });

  it.each([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])('transA %s, transB %s: the product of views, written only into the output view', (ta, tb) => {
    const [m, k, n] = [37, 130, 19];
    const [ar, ac] = ta ? [k, m] : [m, k];
    const [br, bc] = tb ? [n, k] : [k, n];
    // One buffer holding a, b and the output at unaligned offsets, with guard values around the output.
    const heap = new Float32Array(3 + ar * ac + 5 + br * bc + 7 + m * n + 11);
    const r = prng(ta ? (tb ? 1 : 2) : tb ? 3 : 4);
    for (let i = 0; i < heap.length; i++) heap[i] = r() * 2 - 1;
    const aAt = 3;
    const bAt = aAt + ar * ac + 5;
    const outAt = bAt + br * bc + 7;
    const before = heap.slice();
    const a = heap.subarray(aAt, aAt + ar * ac);
    const b = heap.subarray(bAt, bAt + br * bc);
    gemm!.run(a, ar, ac, ta, b, br, bc, tb, heap.subarray(outAt, outAt + m * n));
    const want = reference(before.subarray(aAt, aAt + ar * ac), ar, ac, ta, before.subarray(bAt, bAt + br * bc), br, bc, tb);
    let worst = 0;
    for (let i = 0; i < m * n; i++) worst = Math.max(worst, Math.abs(heap[outAt + i]! - want[i]!) / Math.max(1, Math.abs(want[i]!)));
    expect(worst).toBeLessThan(1e-5);
    // Everything outside the output view is as it was.
    expect(Array.from(heap.subarray(0, outAt))).toEqual(Array.from(before.subarray(0, outAt)));
    expect(Array.from(heap.subarray(outAt + m * n))).toEqual(Array.from(before.subarray(outAt + m * n)));
  });

  it('a product with an empty inner dimension is all zeros', () => {
    const out = new Float32Array(6).fill(7);
    gemm!.run(new Float32Array(0), 2, 0, false, new Float32Array(0), 0, 3, false, out);
    expect(Array.from(out)).toEqual([0, 0, 0, 0, 0, 0]);
  });
});
