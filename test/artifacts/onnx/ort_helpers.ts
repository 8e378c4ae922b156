/** Shared test helpers: run a model in onnxruntime-node (session released in finally) and compare values. */
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import type { OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';

export { ort };

/** Runs `model` (bytes, a path, or a builder) once and releases the session. */
export async function runModel(model: Uint8Array | string | OnnxGraphBuilder, feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>> {
  const source = typeof model === 'string' || model instanceof Uint8Array ? model : model.toBytes();
  const session = typeof source === 'string' ? await ort.InferenceSession.create(source) : await ort.InferenceSession.create(source);
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

/** Opens a session for several runs; `close` must be awaited in finally. */
export async function openSession(model: Uint8Array | string): Promise<ort.InferenceSession> {
  return typeof model === 'string' ? ort.InferenceSession.create(model) : ort.InferenceSession.create(model);
}

export const f32 = (data: ArrayLike<number>, dims: readonly number[]) => new ort.Tensor('float32', Float32Array.from(data), dims);
export const i64 = (data: ArrayLike<bigint>, dims: readonly number[]) => new ort.Tensor('int64', BigInt64Array.from(data as ArrayLike<bigint>), dims);
export const str = (data: readonly string[], dims: readonly number[]) => new ort.Tensor('string', [...data], dims);

/** Element-wise |a − e| ≤ tol · max(1, |e|), with a message that points at the first mismatch. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (!(Math.abs(a - e) <= tol * Math.max(1, Math.abs(e)))) {
      expect.fail(`element ${i}: got ${a}, expected ${e} (tol ${tol})`);
    }
  }
}

/** Deterministic pseudo-random floats in [lo, hi) (mulberry32), so failures reproduce. */
export function randomFloats(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}

/** Rows `[from, to)` of a row-major tensor whose rows have `rowSize` elements. */
export function rows<T extends { subarray(a: number, b: number): T }>(data: T, rowSize: number, from: number, to: number): T {
  return data.subarray(from * rowSize, to * rowSize);
}
