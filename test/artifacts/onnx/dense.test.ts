import { describe, expect, it } from 'vitest';
import { dense, OnnxGraphBuilder, type Activation } from '../../../src/artifacts/onnx/index.js';
import { expectClose, f32, openSession, randomFloats } from './ort_helpers.js';

const act: Record<Activation, (z: number) => number> = {
  linear: (z) => z,
  relu: (z) => Math.max(z, 0),
  sigmoid: (z) => 1 / (1 + Math.exp(-z)),
  tanh: (z) => Math.tanh(z),
};

/** y[r, j] = act(Σ_k x[r, k] W[k, j] + b[j]) in float64: the reference the graph must match. */
function denseJs(x: Float32Array, W: Float32Array, b: Float32Array | undefined, inDim: number, units: number, a: Activation): Float32Array {
  const n = x.length / inDim;
  const y = new Float32Array(n * units);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < units; j++) {
      let s = b ? b[j]! : 0;
      for (let k = 0; k < inDim; k++) s += x[r * inDim + k]! * W[k * units + j]!;
      y[r * units + j] = act[a](s);
    }
  }
  return y;
}

describe('dense', () => {
  const inDim = 5;
  const units = 3;
  const W = randomFloats(inDim * units, 11);
  const b = randomFloats(units, 12);

  for (const activation of ['linear', 'relu', 'sigmoid', 'tanh'] as const) {
    for (const rank of [2, 3] as const) {
      it(`activation=${activation} rank=${rank}`, async () => {
        const g = new OnnxGraphBuilder();
        const shape = rank === 2 ? ['batch', inDim] : ['batch', 'seq', inDim];
        const x = g.addInput('x', 'FLOAT', shape);
        g.addOutput('y', 'FLOAT', rank === 2 ? ['batch', units] : ['batch', 'seq', units], {
          from: dense(g, x, { kernel: W, bias: b, inputDim: inDim, units, activation }),
        });
        const batch = 4;
        const seq = rank === 2 ? 1 : 3;
        const xs = randomFloats(batch * seq * inDim, 13, -3, 3);
        const dims = rank === 2 ? [batch, inDim] : [batch, seq, inDim];
        const session = await openSession(g.toBytes());
        try {
          const out = await session.run({ x: f32(xs, dims) });
          expect(out.y!.dims).toEqual(rank === 2 ? [batch, units] : [batch, seq, units]);
          const all = out.y!.data as Float32Array;
          expectClose(all, denseJs(xs, W, b, inDim, units, activation));
          // Batch 1 gives the same rows as the batch of 4.
          for (let r = 0; r < batch; r++) {
            const row = xs.subarray(r * seq * inDim, (r + 1) * seq * inDim);
            const one = await session.run({ x: f32(row, [1, ...dims.slice(1)]) });
            expectClose(one.y!.data as Float32Array, all.subarray(r * seq * units, (r + 1) * seq * units), 1e-6);
          }
        } finally {
          await session.release();
        }
      });
    }
  }

  it('works without a bias and stacks into an MLP', async () => {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', ['batch', inDim]);
    const W2 = randomFloats(units * 2, 14);
    const h = dense(g, x, { kernel: W, inputDim: inDim, units, activation: 'relu', name: 'l1' });
    g.addOutput('y', 'FLOAT', ['batch', 2], { from: dense(g, h, { kernel: W2, inputDim: units, units: 2, name: 'l2' }) });
    const xs = randomFloats(2 * inDim, 15, -2, 2);
    const session = await openSession(g.toBytes());
    try {
      const out = await session.run({ x: f32(xs, [2, inDim]) });
      expectClose(out.y!.data as Float32Array, denseJs(denseJs(xs, W, undefined, inDim, units, 'relu'), W2, undefined, units, 2, 'linear'));
    } finally {
      await session.release();
    }
  });

  it('rejects weights that do not match the declared sizes', () => {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', ['batch', inDim]);
    expect(() => dense(g, x, { kernel: W, inputDim: inDim, units: 4 })).toThrow(/kernel has 15 values, expected inputDim × units = 5 × 4/);
    expect(() => dense(g, x, { kernel: W, bias: Float32Array.of(1), inputDim: inDim, units })).toThrow(/bias has 1 values/);
  });
});
