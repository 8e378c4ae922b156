/**
 * The fused ops (`src/compute/fused.ts`) against their composites of standard tf ops, on wasm and on
 * cpu: forward within 1e-5, gradients within 1e-4, odd shapes, no tensor leaks, dropout determinism, and
 * the composite fallback on a backend without the fused kernels.
 */
import { tf } from '../../src/core/tf.js';
import type { Rank } from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import {
  FUSED_KERNELS,
  FusedKernelName,
  dropout,
  dropoutComposite,
  gatherAttention,
  gatherAttentionComposite,
  gatherWeightedSum,
  gatherWeightedSumComposite,
  layerNorm,
  layerNormComposite,
  rankingSoftmax,
  rankingSoftmaxComposite,
  registerFusedKernels,
} from '../../src/compute/fused.js';
import { SoftmaxKernelName } from '../../src/compute/softmax_kernels.js';
import { cpuBackend } from '../../src/compute/wasm_kernels.js';
import { Rng } from '../../src/core/rng.js';
import { maxRelDiff, prng, runOp, uniform, type OpCase } from './ops.js';

const FORWARD_TOL = 1e-5;
const GRAD_TOL = 1e-4;
const BACKENDS = ['wasm', 'cpu'] as const;

beforeAll(async () => {
  expect((await selectBackend('wasm')).name).toBe('wasm');
  cpuBackend();
});

/**
 * Runs the fused op and its composite through the shared helper (forward, and gradients of Σ y ⊙ w with
 * respect to `wrt`) on one backend and checks they agree and leak nothing.
 */
async function compare(
  backend: string,
  inputs: () => tf.Tensor[],
  fused: (...xs: tf.Tensor[]) => tf.Tensor,
  composite: (...xs: tf.Tensor[]) => tf.Tensor,
  wrt?: number[],
): Promise<{ forward: number[][]; grads: number[][] }> {
  const f = await runOp({ name: 'fused', inputs, forward: fused, wrt }, backend);
  const c = await runOp({ name: 'composite', inputs, forward: composite, wrt }, backend);
  expect(f.leaked).toBe(0);
  expect(c.leaked).toBe(0);
  expect(maxRelDiff(f.forward, c.forward)).toBeLessThanOrEqual(FORWARD_TOL);
  expect(f.grads.length).toBe(c.grads.length);
  expect(maxRelDiff(f.grads, c.grads)).toBeLessThanOrEqual(GRAD_TOL);
  return f;
}

/** Counts the kernels a function runs, by name. */
async function kernelNames(fn: () => tf.TensorContainer): Promise<string[]> {
  const profile = await tf.profile(() => {
    tf.tidy(() => {
      fn();
    });
  });
  return profile.kernels.map((k) => k.name);
}

/** An int32 [len] tensor from a plain array. */
const int1d = (values: number[]) => tf.tensor1d(values, 'int32');

// ---------------------------------------------------------------------------------------------------------
// layerNorm

describe.each(BACKENDS)('layerNorm on %s', (backend) => {
  const cases: { name: string; n: number; d: number; offset?: number }[] = [
    { name: 'n=7 d=5', n: 7, d: 5 },
    { name: 'n=1 d=1 (var 0: y = beta, dx = 0)', n: 1, d: 1 },
    { name: 'n=1 d=8', n: 1, d: 8 },
    { name: 'n=3 d=1', n: 3, d: 1 },
    { name: 'n=33 d=64 (GNN width)', n: 33, d: 64 },
    { name: 'n=5 d=12 rows offset by 10', n: 5, d: 12, offset: 10 },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('matches the composite: %s', async (_name, c) => {
    await compare(
      backend,
      () => [tf.add(uniform([c.n, c.d], c.n * 10 + c.d), c.offset ?? 0), uniform([c.d], 3, 0.5, 1.5), uniform([c.d], 4)],
      (x, g, b) => layerNorm(x as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D),
      (x, g, b) => layerNormComposite(x as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D),
    );
  });

  it('stays accurate when |mean| ≫ std (float64 statistics, two-pass variance)', async () => {
    await tf.setBackend(backend);
    const n = 6;
    const d = 16;
    const r = prng(9);
    const values = Float32Array.from({ length: n * d }, () => 1000 + r());
    const reference = new Float64Array(n * d);
    for (let i = 0; i < n; i++) {
      const row = Array.from(values.subarray(i * d, (i + 1) * d));
      const mu = row.reduce((a, b) => a + b, 0) / d;
      const v = row.reduce((a, b) => a + (b - mu) ** 2, 0) / d;
      row.forEach((x, j) => (reference[i * d + j] = (x - mu) / Math.sqrt(v + 1e-5)));
    }
    // And the gradient of Σ y ⊙ w with γ = 1: dx = r·(w − mean(w) − x̂·mean(w·x̂)).
    const w = Float32Array.from({ length: n * d }, () => r() - 0.5);
    const referenceDx = new Float64Array(n * d);
    for (let i = 0; i < n; i++) {
      const row = Array.from(values.subarray(i * d, (i + 1) * d));
      const mu = row.reduce((a, b) => a + b, 0) / d;
      const rstd = 1 / Math.sqrt(row.reduce((a, b) => a + (b - mu) ** 2, 0) / d + 1e-5);
      const xhat = row.map((x) => (x - mu) * rstd);
      const wr = Array.from(w.subarray(i * d, (i + 1) * d));
      const a = wr.reduce((s, v) => s + v, 0) / d;
      const b = wr.reduce((s, v, j) => s + v * xhat[j]!, 0) / d;
      wr.forEach((v, j) => (referenceDx[i * d + j] = rstd * (v - a - xhat[j]! * b)));
    }
    const run = (f: typeof layerNorm) =>
      tf.tidy(() => {
        const x = tf.tensor2d(values, [n, d]);
        const g = tf.ones([d]) as tf.Tensor1D;
        const b = tf.zeros([d]) as tf.Tensor1D;
        const dx = tf.grad((xi: tf.Tensor) => f(xi as tf.Tensor2D, g, b))(x, tf.tensor2d(w, [n, d]));
        return { y: Array.from(f(x, g, b).dataSync()), dx: Array.from(dx.dataSync()) };
      });
    const fused = run(layerNorm);
    const composite = run(layerNormComposite);
    const worst = (got: number[], ref: Float64Array) => Math.max(...got.map((v, k) => Math.abs(v - ref[k]!)));
    expect(worst(fused.y, reference)).toBeLessThan(1e-5);
    expect(worst(fused.dx, referenceDx)).toBeLessThan(1e-4);
    // The float32 composite loses ~3 digits to the 1000 offset.
    expect(worst(composite.y, reference)).toBeGreaterThan(worst(fused.y, reference));
    expect(worst(composite.dx, referenceDx)).toBeGreaterThan(worst(fused.dx, referenceDx));
  });

  it('handles n = 0 (gamma and beta get zero gradients)', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const [y, dg, db] = tf.tidy(() => {
      const x = tf.zeros([0, 4]);
      const g = tf.ones([4]);
      const b = tf.zeros([4]);
      const [gg, gb] = tf.grads((gi: tf.Tensor, bi: tf.Tensor) => tf.sum(layerNorm(x as tf.Tensor2D, gi as tf.Tensor1D, bi as tf.Tensor1D)))([g, b]);
      return [layerNorm(x as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D).shape, Array.from(gg!.dataSync()), Array.from(gb!.dataSync())];
    });
    expect(y).toEqual([0, 4]);
    expect(dg).toEqual([0, 0, 0, 0]);
    expect(db).toEqual([0, 0, 0, 0]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('runs one kernel forward and one backward', async () => {
    await tf.setBackend(backend);
    const x = uniform([6, 4], 5);
    const g = tf.ones([4]);
    const b = tf.zeros([4]);
    const names = await kernelNames(() => tf.grads((xi: tf.Tensor) => layerNorm(xi as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D))([x]));
    expect(names.filter((n) => n.startsWith('Gnnctl'))).toEqual([FusedKernelName.layerNorm, FusedKernelName.layerNormGrad]);
    tf.dispose([x, g, b]);
  });

  it('trains gamma and beta through tf.variableGrads without leaking', async () => {
    await tf.setBackend(backend);
    const init = [tf.ones([3]), tf.zeros([3])];
    const gamma = tf.variable(init[0]!, true, `ln_gamma_${backend}`) as tf.Variable<Rank.R1>;
    const beta = tf.variable(init[1]!, true, `ln_beta_${backend}`) as tf.Variable<Rank.R1>;
    tf.dispose(init);
    const x = uniform([4, 3], 6);
    const target = uniform([4, 3], 7);
    const before = tf.memory().numTensors;
    const loss = (f: typeof layerNorm) => () => tf.losses.meanSquaredError(target, f(x as tf.Tensor2D, gamma, beta)) as tf.Scalar;
    const fused = tf.variableGrads(loss(layerNorm));
    const composite = tf.variableGrads(loss(layerNormComposite));
    expect(Math.abs(fused.value.dataSync()[0]! - composite.value.dataSync()[0]!)).toBeLessThan(1e-6);
    for (const name of [gamma.name, beta.name]) {
      expect(maxRelDiff([Array.from(fused.grads[name]!.dataSync())], [Array.from(composite.grads[name]!.dataSync())])).toBeLessThan(GRAD_TOL);
    }
    tf.dispose([fused.value, composite.value, ...Object.values(fused.grads), ...Object.values(composite.grads)]);
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([gamma, beta, x, target]);
  });

  it('leaks nothing outside a tidy and without a tape', async () => {
    await tf.setBackend(backend);
    const x = uniform([5, 3], 8) as tf.Tensor2D;
    const g = tf.ones([3]) as tf.Tensor1D;
    const b = tf.zeros([3]) as tf.Tensor1D;
    const before = tf.memory().numTensors;
    const y = layerNorm(x, g, b);
    expect(tf.memory().numTensors).toBe(before + 1);
    y.dispose();
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([x, g, b]);
  });
});

describe('layerNorm arguments', () => {
  it('rejects mismatched shapes and dtypes, quoting what it got', () => {
    tf.tidy(() => {
      const x = tf.zeros([2, 3]) as tf.Tensor2D;
      expect(() => layerNorm(x, tf.ones([4]) as tf.Tensor1D, tf.zeros([3]) as tf.Tensor1D)).toThrow('gamma must have shape [3] (got [4])');
      expect(() => layerNorm(tf.zeros([2, 3, 1]) as unknown as tf.Tensor2D, tf.ones([3]) as tf.Tensor1D, tf.zeros([3]) as tf.Tensor1D)).toThrow('x must be 2-D');
      expect(() => layerNorm(tf.zeros([2, 3], 'int32') as tf.Tensor2D, tf.ones([3]) as tf.Tensor1D, tf.zeros([3]) as tf.Tensor1D)).toThrow('x must be float32 (got int32)');
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// gatherWeightedSum

interface GatherCase {
  name: string;
  m: number;
  n: number;
  f: number;
  c: number;
  /** fraction of padding positions (weight 0, index 0) */
  padding?: number;
  /** weights as [n, f] instead of [n·f] */
  weights2d?: boolean;
}

/** index / weights like a sampled block: random rows, padding with weight 0 and index 0, mean weights. */
function gatherInputs(c: GatherCase, seed: number): { index: Int32Array; weights: Float32Array } {
  const r = prng(seed);
  const index = new Int32Array(c.n * c.f);
  const weights = new Float32Array(c.n * c.f);
  for (let i = 0; i < c.n; i++) {
    let count = 0;
    for (let j = 0; j < c.f; j++) {
      const k = i * c.f + j;
      if (r() < (c.padding ?? 0.3)) continue;
      index[k] = Math.floor(r() * c.m);
      weights[k] = 1;
      count++;
    }
    // Mean weights (mask / count), then some noise so the weights are not all equal.
    for (let j = 0; j < c.f; j++) weights[i * c.f + j]! *= (1 / Math.max(1, count)) * (0.5 + r());
  }
  return { index, weights };
}

describe.each(BACKENDS)('gatherWeightedSum on %s', (backend) => {
  const cases: GatherCase[] = [
    { name: 'm=30 n=8 f=5 c=6', m: 30, n: 8, f: 5, c: 6 },
    { name: 'm=40 n=16 f=10 c=64 (GNN shape)', m: 40, n: 16, f: 10, c: 64 },
    { name: 'fanout 1 (FK edge)', m: 12, n: 9, f: 1, c: 7 },
    { name: 'n=1 c=1', m: 5, n: 1, f: 4, c: 1 },
    { name: 'm=1', m: 1, n: 6, f: 3, c: 5 },
    { name: 'all-zero weights', m: 8, n: 5, f: 3, c: 4, padding: 1 },
    { name: 'no padding, weights [n, f]', m: 20, n: 7, f: 4, c: 9, padding: 0, weights2d: true },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('matches the composite (gradients for x and weights): %s', async (_name, c) => {
    const { index, weights } = gatherInputs(c, c.m * 7 + c.n);
    const wShape = c.weights2d ? [c.n, c.f] : [c.n * c.f];
    const out = await compare(
      backend,
      () => [uniform([c.m, c.c], c.m + c.c), int1d(Array.from(index)), tf.tensor(weights, wShape, 'float32')],
      (x, i, w) => gatherWeightedSum(x as tf.Tensor2D, i!, w!, c.f),
      (x, i, w) => gatherWeightedSumComposite(x as tf.Tensor2D, i!, w!, c.f),
    );
    expect(out.forward[0]!.length).toBe(c.n * c.c);
    expect(out.grads.map((g) => g.length)).toEqual([c.m * c.c, c.n * c.f]);
  });

  it('ignores the index of padding (weight 0), even outside [0, m)', async () => {
    const index = [2, -1, 0, 99, 1, 3];
    const weights = [0.5, 0, 0.25, 0, 1, 0];
    await compare(
      backend,
      () => [uniform([4, 3], 11), int1d(index), tf.tensor1d(weights)],
      (x, i, w) => gatherWeightedSum(x as tf.Tensor2D, i!, w!, 3),
      (x, i, w) => gatherWeightedSumComposite(x as tf.Tensor2D, i!, w!, 3),
      [0],
    );
  });

  it('handles an empty table (m = 0): zeros out, an empty dx, zero dweights', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const [y, dx, dw] = tf.tidy(() => {
      const x = tf.zeros([0, 3]) as tf.Tensor2D;
      const i = int1d([0, 0, 0, 0]);
      const w = tf.zeros([4]);
      const [gx, gw] = tf.grads((xi: tf.Tensor, wi: tf.Tensor) => tf.sum(gatherWeightedSum(xi as tf.Tensor2D, i, wi, 2)))([x, w]);
      return [gatherWeightedSum(x, i, w, 2), gx!, gw!].map((t) => ({ shape: t.shape, values: Array.from(t.dataSync()) }));
    });
    expect(y).toEqual({ shape: [2, 3], values: [0, 0, 0, 0, 0, 0] });
    expect(dx).toEqual({ shape: [0, 3], values: [] });
    expect(dw).toEqual({ shape: [4], values: [0, 0, 0, 0] });
    const composite = tf.tidy(() => Array.from(gatherWeightedSumComposite(tf.zeros([0, 3]) as tf.Tensor2D, int1d([0, 0]), tf.zeros([2]), 1).dataSync()));
    expect(composite).toEqual([0, 0, 0, 0, 0, 0]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('handles n = 0', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const [shape, dx] = tf.tidy(() => {
      const x = uniform([3, 2], 12) as tf.Tensor2D;
      const i = tf.zeros([0], 'int32');
      const w = tf.zeros([0]);
      const g = tf.grad((xi: tf.Tensor) => tf.sum(gatherWeightedSum(xi as tf.Tensor2D, i, w, 4)))(x);
      return [gatherWeightedSum(x, i, w, 4).shape, Array.from(g.dataSync())];
    });
    expect(shape).toEqual([0, 2]);
    expect(dx).toEqual([0, 0, 0, 0, 0, 0]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('rejects an out-of-range index with a non-zero weight and leaves no tensor behind', async () => {
    await tf.setBackend(backend);
    const x = uniform([4, 2], 13) as tf.Tensor2D;
    const i = int1d([1, 4]);
    const w = tf.tensor1d([1, 0.5]);
    const before = tf.memory().numTensors;
    expect(() => gatherWeightedSum(x, i, w, 2)).toThrow('gatherWeightedSum: index 4 at position 1 (weight 0.5) is not in [0, 3]');
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([x, i, w]);
  });

  it('runs one kernel forward and one backward (for x)', async () => {
    await tf.setBackend(backend);
    const x = uniform([10, 4], 14);
    const i = int1d([1, 2, 3, 4, 5, 6]);
    const w = tf.fill([6], 0.5);
    const names = await kernelNames(() => tf.grads((xi: tf.Tensor) => gatherWeightedSum(xi as tf.Tensor2D, i, w, 3))([x]));
    expect(names.filter((n) => n.startsWith('Gnnctl'))).toEqual([FusedKernelName.gatherWeightedSum, FusedKernelName.gatherWeightedSumGrad]);
    tf.dispose([x, i, w]);
  });
});

describe('gatherWeightedSum arguments', () => {
  it('rejects a fanout that does not divide the index, float indices and mismatched weights', () => {
    tf.tidy(() => {
      const x = tf.zeros([3, 2]) as tf.Tensor2D;
      expect(() => gatherWeightedSum(x, int1d([0, 1, 2]), tf.zeros([3]), 2)).toThrow('index has 3 elements, not a multiple of fanout 2');
      expect(() => gatherWeightedSum(x, tf.zeros([2]), tf.zeros([2]), 1)).toThrow('index must be int32 (got float32)');
      expect(() => gatherWeightedSum(x, int1d([0, 1]), tf.zeros([3]), 1)).toThrow('weights must have as many elements as index (2) (got shape [3])');
      expect(() => gatherWeightedSum(x, int1d([0, 1]), tf.zeros([2]), 0)).toThrow('fanout must be a positive integer (got 0)');
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// dropout

describe.each(BACKENDS)('dropout on %s', (backend) => {
  it.each([
    ['[40, 16] rate 0.5', [40, 16], 0.5],
    ['[7, 3, 5] rate 0.1', [7, 3, 5], 0.1],
    ['[1, 1] rate 0.9', [1, 1], 0.9],
  ] as const)('matches the composite bit for bit (forward and gradient): %s', async (_name, shape, rate) => {
    const out = await compare(
      backend,
      () => [uniform([...shape], 21)],
      (x) => dropout(x!, rate, 1234),
      (x) => dropoutComposite(x!, rate, 1234),
    );
    const c = await runOp({ name: 'composite', inputs: () => [uniform([...shape], 21)], forward: (x) => dropoutComposite(x!, rate, 1234) }, backend);
    expect(out.forward).toEqual(c.forward);
    expect(out.grads).toEqual(c.grads);
  });

  it('is deterministic per seed, differs between seeds, and keeps about 1 − rate', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const mask = (seed: number): number[] => tf.tidy(() => Array.from(dropout(tf.ones([100, 50]), 0.3, seed).dataSync()));
    const [a, b, other] = [mask(7), mask(7), mask(8)];
    expect(a).toEqual(b);
    expect(a).not.toEqual(other);
    const scale = Math.fround(1 / 0.7);
    expect(a.every((v) => v === 0 || v === scale)).toBe(true);
    const kept = a.filter((v) => v !== 0).length / a.length;
    expect(kept).toBeGreaterThan(0.67);
    expect(kept).toBeLessThan(0.73);
    expect(tf.memory().numTensors).toBe(before);
  });

  it.each([
    [0.4, 99],
    [0.5, 0],
    [0.25, 2 ** 32 - 1],
    [0.1, -5],
    [1 - 2 ** -20, 3],
  ])('draws its mask from Rng(seed), two elements per draw (rate %s, seed %s)', async (rate, seed) => {
    await tf.setBackend(backend);
    // An odd size: the last element uses the low half of one more draw.
    const got = tf.tidy(() => Array.from(dropout(tf.ones([20_001]), rate, seed).dataSync()));
    const rng = new Rng(seed);
    const threshold = Math.ceil(rate * 65536);
    const expected: boolean[] = [];
    while (expected.length < got.length) {
      const u = rng.nextU32();
      expected.push((u & 0xffff) >= threshold, u >>> 16 >= threshold);
    }
    expect(got.map((v) => v !== 0)).toEqual(expected.slice(0, got.length));
  });

  it('rate 0 is the identity (a copy) and its gradient is dy', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const [y, g] = tf.tidy(() => {
      const x = uniform([5, 4], 22);
      const w = uniform([5, 4], 23);
      const grad = tf.grad((xi: tf.Tensor) => tf.sum(tf.mul(dropout(xi, 0, 1), w)))(x);
      return [Array.from(dropout(x, 0, 1).sub(x).dataSync()), Array.from(grad.sub(w).dataSync())];
    });
    expect(y.every((v) => v === 0)).toBe(true);
    expect(g.every((v) => v === 0)).toBe(true);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('draws the mask in one kernel and multiplies (forward and backward)', async () => {
    await tf.setBackend(backend);
    const x = uniform([6, 4], 24);
    const dy = uniform([6, 4], 25);
    const names = await kernelNames(() => tf.grads((xi: tf.Tensor) => dropout(xi, 0.5, 3))([x], dy));
    // Besides: the tape's clones of the multiply's inputs (Identity), and a Cast in Multiply's gradient.
    expect(names.filter((n) => n !== 'Identity' && n !== 'Cast')).toEqual([FusedKernelName.dropoutMask, 'Multiply', 'Multiply']);
    tf.dispose([x, dy]);
  });

  it('gives the same mask on wasm and cpu, and handles an empty tensor', async () => {
    await tf.setBackend(backend);
    const here = tf.tidy(() => Array.from(dropout(tf.ones([33, 7]), 0.25, 5).dataSync()));
    const other = backend === 'wasm' ? 'cpu' : 'wasm';
    await tf.setBackend(other);
    const there = tf.tidy(() => Array.from(dropout(tf.ones([33, 7]), 0.25, 5).dataSync()));
    expect(here).toEqual(there);
    await tf.setBackend(backend);
    const empty = tf.tidy(() => dropout(tf.ones([0, 4]), 0.5, 1).shape);
    expect(empty).toEqual([0, 4]);
  });

  it('rejects a rate outside [0, 1) and non-float input', () => {
    tf.tidy(() => {
      expect(() => dropout(tf.ones([2]), 1, 1)).toThrow('rate must be in [0, 1) (got 1)');
      expect(() => dropout(tf.ones([2]), -0.1, 1)).toThrow('rate must be in [0, 1) (got -0.1)');
      expect(() => dropout(tf.ones([2], 'int32'), 0.5, 1)).toThrow('x must be float32 (got int32)');
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// gatherAttention

interface AttentionCase {
  name: string;
  m: number;
  n: number;
  f: number;
  heads: number;
  hd: number;
  /** fraction of masked positions */
  padding?: number;
  /** rows whose every neighbour is masked */
  emptyRows?: number[];
  slope?: number;
}

describe.each(BACKENDS)('gatherAttention on %s', (backend) => {
  const cases: AttentionCase[] = [
    { name: 'm=20 n=6 f=4 heads=2 hd=3', m: 20, n: 6, f: 4, heads: 2, hd: 3 },
    { name: 'one head, fanout 1', m: 9, n: 7, f: 1, heads: 1, hd: 5 },
    { name: 'all-masked rows get zeros', m: 15, n: 5, f: 3, heads: 2, hd: 2, emptyRows: [0, 3] },
    { name: 'm=30 n=16 f=10 heads=4 hd=16 (GNN shape)', m: 30, n: 16, f: 10, heads: 4, hd: 16 },
    { name: 'no padding, slope 0.01', m: 8, n: 4, f: 5, heads: 1, hd: 4, padding: 0, slope: 0.01 },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('matches the composite (gradients for xw, src, dst): %s', async (_name, c) => {
    const r = prng(c.m * 13 + c.n);
    const index = new Int32Array(c.n * c.f);
    const mask = new Float32Array(c.n * c.f);
    for (let k = 0; k < index.length; k++) {
      const row = Math.floor(k / c.f);
      if (c.emptyRows?.includes(row) || r() < (c.padding ?? 0.3)) continue;
      index[k] = Math.floor(r() * c.m);
      mask[k] = 1;
    }
    const args = { fanout: c.f, heads: c.heads, negativeSlope: c.slope };
    const out = await compare(
      backend,
      () => [uniform([c.m, c.heads * c.hd], 31), uniform([c.m, c.heads], 32, -2, 2), uniform([c.n, c.heads], 33, -2, 2), int1d(Array.from(index)), tf.tensor2d(mask, [c.n, c.f])],
      (xw, s, d, i, mk) => gatherAttention(xw as tf.Tensor2D, s as tf.Tensor2D, d as tf.Tensor2D, i!, mk!, args),
      (xw, s, d, i, mk) => gatherAttentionComposite(xw as tf.Tensor2D, s as tf.Tensor2D, d as tf.Tensor2D, i!, mk!, args),
      [0, 1, 2],
    );
    for (const row of c.emptyRows ?? []) {
      expect(out.forward[0]!.slice(row * c.heads * c.hd, (row + 1) * c.heads * c.hd).every((v) => v === 0)).toBe(true);
    }
  });

  it('handles an empty table (m = 0) and n = 0', async () => {
    await tf.setBackend(backend);
    const before = tf.memory().numTensors;
    const [y, dxw, empty] = tf.tidy(() => {
      const xw = tf.zeros([0, 4]) as tf.Tensor2D;
      const src = tf.zeros([0, 2]) as tf.Tensor2D;
      const dst = uniform([3, 2], 34) as tf.Tensor2D;
      const i = int1d([0, 0, 0, 0, 0, 0]);
      const mk = tf.zeros([3, 2]);
      const args = { fanout: 2, heads: 2 };
      const g = tf.grad((x: tf.Tensor) => tf.sum(gatherAttention(x as tf.Tensor2D, src, dst, i, mk, args)))(xw);
      const none = gatherAttention(uniform([5, 4], 35) as tf.Tensor2D, tf.zeros([5, 2]) as tf.Tensor2D, tf.zeros([0, 2]) as tf.Tensor2D, tf.zeros([0], 'int32'), tf.zeros([0]), args);
      return [Array.from(gatherAttention(xw, src, dst, i, mk, args).dataSync()), g.shape, none.shape];
    });
    expect(y).toEqual(new Array(12).fill(0));
    expect(dxw).toEqual([0, 4]);
    expect(empty).toEqual([0, 4]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('rejects heads that do not divide the width and mis-shaped scores', () => {
    tf.tidy(() => {
      const xw = tf.zeros([4, 6]) as tf.Tensor2D;
      const i = int1d([0, 1]);
      const mk = tf.ones([2]);
      expect(() => gatherAttention(xw, tf.zeros([4, 4]) as tf.Tensor2D, tf.zeros([1, 4]) as tf.Tensor2D, i, mk, { fanout: 2, heads: 4 })).toThrow(
        'heads must be a positive integer dividing the width 6 (got 4)',
      );
      expect(() => gatherAttention(xw, tf.zeros([4, 2]) as tf.Tensor2D, tf.zeros([2, 2]) as tf.Tensor2D, i, mk, { fanout: 2, heads: 2 })).toThrow(
        'dst must have shape [1, 2] (got [2,2])',
      );
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// registration and fallback

// ---------------------------------------------------------------------------------------------------------
// rankingSoftmax
interface SoftmaxCase {
  name: string;
  B: number;
  M: number;
  /** pair cells placed on the grid */
  P: number;
  /** rows with no positive */
  empty: number[];
}

/** Constant inputs of a case: popularity, pair cells (each pair row on one distinct cell), positives. */
function softmaxConsts(c: SoftmaxCase, seed: number): { pop: Float32Array; cell: Int32Array; positives: Float32Array } {
  const r = prng(seed);
  const pop = Float32Array.from({ length: c.M }, () => r());
  const cell = new Int32Array(c.B * c.M);
  const free = Array.from({ length: c.B * c.M }, (_, i) => i);
  for (let k = 1; k <= c.P; k++) cell[free.splice(Math.floor(r() * free.length), 1)[0]!] = k;
  const positives = new Float32Array(c.B * c.M);
  for (let b = 0; b < c.B; b++) {
    if (c.empty.includes(b)) continue;
    positives[b * c.M + Math.floor(r() * c.M)] = 1;
    if (b % 2 === 0) positives[b * c.M + ((b + 3) % c.M)] = 1; // several positives in some rows
  }
  return { pop, cell, positives };
}

describe.each(BACKENDS)('rankingSoftmax on %s', (backend) => {
  const cases: SoftmaxCase[] = [
    { name: 'B=5 M=9 with pair cells, one row without positives', B: 5, M: 9, P: 7, empty: [3] },
    { name: 'no pair cells (P=0)', B: 4, M: 6, P: 0, empty: [] },
    { name: 'B=1 M=1', B: 1, M: 1, P: 1, empty: [] },
    { name: 'no row has a positive (loss 0, no gradient)', B: 3, M: 4, P: 2, empty: [0, 1, 2] },
    { name: 'B=16 M=200 (wide scores)', B: 16, M: 200, P: 40, empty: [5, 9] },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('matches the composite: %s', async (_name, c) => {
    const k = softmaxConsts(c, c.B * 100 + c.M);
    await compare(
      backend,
      () => [uniform([c.B, c.M], c.M, -3, 3), uniform([1], 2, 0.5, 1.5), uniform([c.P], 3), uniform([c.B, 1], 4, 0, 1)],
      (l, w, p, g) => rankingSoftmax(l as tf.Tensor2D, w!, k.pop, p as tf.Tensor1D, k.cell, g as tf.Tensor2D, k.positives),
      (l, w, p, g) =>
        rankingSoftmaxComposite({
          logits: l as tf.Tensor2D,
          popWeight: w!,
          pop: tf.tensor1d(k.pop),
          pair: p as tf.Tensor1D,
          cell: tf.tensor1d(k.cell, 'int32'),
          gate: g as tf.Tensor2D,
          positives: tf.tensor2d(k.positives, [c.B, c.M]),
        }),
    );
  });

  it('runs one kernel forward and one backward, and refuses mismatched shapes', async () => {
    await tf.setBackend(backend);
    const c: SoftmaxCase = { name: '', B: 3, M: 5, P: 2, empty: [] };
    const k = softmaxConsts(c, 1);
    const l = uniform([3, 5], 1);
    const w = tf.ones([1]);
    const p = uniform([2], 2);
    const g = uniform([3, 1], 3);
    const names = await kernelNames(() => tf.grads((li: tf.Tensor) => rankingSoftmax(li as tf.Tensor2D, w, k.pop, p as tf.Tensor1D, k.cell, g as tf.Tensor2D, k.positives))([l]));
    expect(names.filter((n) => n.startsWith('Gnnctl'))).toEqual([SoftmaxKernelName.rankingSoftmax, SoftmaxKernelName.rankingSoftmaxGrad]);
    expect(() => rankingSoftmax(l as tf.Tensor2D, w, k.pop.subarray(1), p as tf.Tensor1D, k.cell, g as tf.Tensor2D, k.positives)).toThrow(/pop \[5\]/);
    tf.dispose([l, w, p, g]);
  });
});

describe('registration', () => {
  it('registers every fused kernel on wasm and cpu, idempotently', () => {
    const names = registerFusedKernels();
    expect(names).toEqual([...FUSED_KERNELS]);
    expect(registerFusedKernels()).toEqual(names);
    for (const backend of BACKENDS) {
      const registered = new Set(tf.getKernelsForBackend(backend).map((k) => k.kernelName));
      expect(names.filter((n) => !registered.has(n))).toEqual([]);
    }
  });

  it('selectBackend lists them as added kernels', async () => {
    const info = await selectBackend('wasm');
    expect(info.added_kernels).toEqual(expect.arrayContaining([...FUSED_KERNELS]));
  });
});

/**
 * A backend without the fused kernels (the cpu kernels under another name, standing in for the native
 * `tensorflow` backend): the ops fall back to their composites and give the same results.
 */
describe('composite fallback on a backend without the fused kernels', () => {
  const NAME = 'composite-only';
  beforeAll(() => {
    registerFusedKernels();
    if (tf.findBackendFactory(NAME) !== null) return;
    const cpuFactory = tf.findBackendFactory('cpu');
    tf.registerBackend(
      NAME,
      () => {
        const backend = cpuFactory() as tf.KernelBackend;
        // As cpuBackend() does: no "install tfjs-node" banner.
        (backend as unknown as { firstUse: boolean }).firstUse = false;
        return backend;
      },
      -1,
    );
    for (const k of tf.getKernelsForBackend('cpu')) {
      if (!k.kernelName.startsWith('Gnnctl')) tf.registerKernel({ ...k, backendName: NAME });
    }
  });

  it.each([
    [
      'layerNorm',
      {
        name: 'layerNorm',
        inputs: () => [uniform([6, 5], 41), uniform([5], 42), uniform([5], 43)],
        forward: (x, g, b) => layerNorm(x as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D),
      },
    ],
    [
      'gatherWeightedSum',
      {
        name: 'gatherWeightedSum',
        inputs: () => [uniform([5, 3], 44), int1d([0, 4, 2, 0, 1, 3]), tf.tensor1d([0.5, 0.5, 1, 0, 0.25, 0.75])],
        forward: (x, i, w) => gatherWeightedSum(x as tf.Tensor2D, i!, w!, 2),
      },
    ],
    ['dropout', { name: 'dropout', inputs: () => [uniform([8, 4], 45)], forward: (x) => dropout(x!, 0.5, 77) }],
    [
      'gatherAttention',
      {
        name: 'gatherAttention',
        inputs: () => [uniform([5, 4], 46), uniform([5, 2], 47), uniform([3, 2], 48), int1d([0, 4, 2, 0, 1, 3]), tf.tensor1d([1, 1, 1, 0, 1, 1])],
        forward: (xw, s, d, i, mk) => gatherAttention(xw as tf.Tensor2D, s as tf.Tensor2D, d as tf.Tensor2D, i!, mk!, { fanout: 2, heads: 2 }),
        wrt: [0, 1, 2],
      },
    ],
  ] as [string, OpCase][])('%s gives the fused result through standard ops', async (_name, op) => {
    const fused = await runOp(op, 'cpu');
    const fallback = await runOp(op, NAME);
    expect(fallback.leaked).toBe(0);
    expect(maxRelDiff(fallback.forward, fused.forward)).toBeLessThanOrEqual(FORWARD_TOL);
    expect(maxRelDiff(fallback.grads, fused.grads)).toBeLessThanOrEqual(GRAD_TOL);
    const names = await kernelNames(() => op.forward(...op.inputs()));
    expect(names.some((n) => n.startsWith('Gnnctl'))).toBe(false);
    await tf.setBackend('wasm');
  });
});
