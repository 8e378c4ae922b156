import { describe, expect, it } from 'vitest';
import { maskedAttentionPool, maskedMeanPool, OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';
import { expectClose, f32, openSession, randomFloats } from './ort_helpers.js';

const dim = 3;

/** Mean of the valid rows (mask ≠ 0) in float64; zeros when there are none. */
function meanJs(x: Float32Array, mask: Float32Array, batch: number, seq: number): Float32Array {
  const out = new Float32Array(batch * dim);
  for (let b = 0; b < batch; b++) {
    let n = 0;
    const acc = new Float64Array(dim);
    for (let i = 0; i < seq; i++) {
      if (mask[b * seq + i] === 0) continue;
      n++;
      for (let j = 0; j < dim; j++) acc[j]! += x[(b * seq + i) * dim + j]!;
    }
    for (let j = 0; j < dim; j++) out[b * dim + j] = acc[j]! / Math.max(n, 1);
  }
  return out;
}

/** Softmax attention over the valid rows only (the graph's extra slot and masked rows get weight 0). */
function attentionJs(x: Float32Array, mask: Float32Array, batch: number, seq: number, w: Float32Array, bias: number): Float32Array {
  const out = new Float32Array(batch * dim);
  for (let b = 0; b < batch; b++) {
    const valid = [...Array(seq).keys()].filter((i) => mask[b * seq + i] !== 0);
    if (valid.length === 0) continue;
    const s = valid.map((i) => bias + [...Array(dim).keys()].reduce((a, j) => a + x[(b * seq + i) * dim + j]! * w[j]!, 0));
    const m = Math.max(...s);
    const e = s.map((v) => Math.exp(v - m));
    const z = e.reduce((a, v) => a + v, 0);
    valid.forEach((i, k) => {
      for (let j = 0; j < dim; j++) out[b * dim + j]! += (e[k]! / z) * x[(b * seq + i) * dim + j]!;
    });
  }
  return out;
}

type Pool = 'mean' | 'attention';
const w = Float32Array.of(0.7, -1.2, 0.4);
const bias = 0.3;

function build(kind: Pool): Uint8Array {
  const g = new OnnxGraphBuilder();
  const x = g.addInput('x', 'FLOAT', ['batch', 'seq', dim]);
  const mask = g.addInput('mask', 'FLOAT', ['batch', 'seq']);
  const pooled = kind === 'mean' ? maskedMeanPool(g, x, mask) : maskedAttentionPool(g, x, mask, { weight: w, bias });
  g.addOutput('pooled', 'FLOAT', ['batch', dim], { from: pooled });
  return g.toBytes();
}

function reference(kind: Pool, x: Float32Array, mask: Float32Array, batch: number, seq: number): Float32Array {
  return kind === 'mean' ? meanJs(x, mask, batch, seq) : attentionJs(x, mask, batch, seq, w, bias);
}

describe.each(['mean', 'attention'] as const)('masked %s pooling', (kind) => {
  it('matches JS on a batch with partial, full and all-masked rows', async () => {
    const batch = 4;
    const seq = 5;
    const x = randomFloats(batch * seq * dim, 31, -3, 3);
    const mask = Float32Array.from([1, 1, 0, 1, 0, /**/ 1, 1, 1, 1, 1, /**/ 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 1]);
    const session = await openSession(build(kind));
    try {
      const out = await session.run({ x: f32(x, [batch, seq, dim]), mask: f32(mask, [batch, seq]) });
      expect(out.pooled!.dims).toEqual([batch, dim]);
      const got = out.pooled!.data as Float32Array;
      expectClose(got, reference(kind, x, mask, batch, seq));
      expect(Array.from(got.subarray(2 * dim, 3 * dim))).toEqual([0, 0, 0]); // all masked → zero vector
      // Batch 1 equals the same row inside the batch.
      for (let b = 0; b < batch; b++) {
        const one = await session.run({
          x: f32(x.subarray(b * seq * dim, (b + 1) * seq * dim), [1, seq, dim]),
          mask: f32(mask.subarray(b * seq, (b + 1) * seq), [1, seq]),
        });
        expectClose(one.pooled!.data as Float32Array, got.subarray(b * dim, (b + 1) * dim), 1e-6);
      }
    } finally {
      await session.release();
    }
  });

  it('gives the zero vector for sequence length 0, at batch 1 and batch N', async () => {
    const session = await openSession(build(kind));
    try {
      for (const batch of [1, 3]) {
        const out = await session.run({ x: f32([], [batch, 0, dim]), mask: f32([], [batch, 0]) });
        expect(out.pooled!.dims).toEqual([batch, dim]);
        expect(Array.from(out.pooled!.data as Float32Array)).toEqual(new Array(batch * dim).fill(0));
      }
    } finally {
      await session.release();
    }
  });

  it('ignores NaN and huge values in masked positions', async () => {
    const seq = 3;
    const x = Float32Array.from([1, 2, 3, NaN, NaN, NaN, 3e38, -Infinity, Infinity]);
    const mask = Float32Array.from([1, 0, 0]);
    const session = await openSession(build(kind));
    try {
      const out = await session.run({ x: f32(x, [1, seq, dim]), mask: f32(mask, [1, seq]) });
      expectClose(out.pooled!.data as Float32Array, [1, 2, 3]);
      const allMasked = await session.run({ x: f32(x, [1, seq, dim]), mask: f32([0, 0, 0], [1, seq]) });
      expect(Array.from(allMasked.pooled!.data as Float32Array)).toEqual([0, 0, 0]);
    } finally {
      await session.release();
    }
  });

  it('is unchanged by extra masked padding (variable-length requests batched together)', async () => {
    const x = randomFloats(2 * dim, 32);
    const padded = new Float32Array(5 * dim);
    padded.set(x);
    padded.fill(NaN, 2 * dim);
    const session = await openSession(build(kind));
    try {
      const short = await session.run({ x: f32(x, [1, 2, dim]), mask: f32([1, 1], [1, 2]) });
      const long = await session.run({ x: f32(padded, [1, 5, dim]), mask: f32([1, 1, 0, 0, 0], [1, 5]) });
      expectClose(long.pooled!.data as Float32Array, short.pooled!.data as Float32Array, 1e-6);
    } finally {
      await session.release();
    }
  });
});
