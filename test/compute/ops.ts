/**
 * Shared test helper: runs an op's forward pass and its gradients on a named TF.js backend and returns
 * plain arrays, so the same case can be compared between wasm and cpu. Inputs are built from a seeded
 * PRNG inside each run, on the backend under test.
 */
import { tf } from '../../src/core/tf.js';
import { cpuBackend } from '../../src/compute/wasm_kernels.js';

/** mulberry32: a tiny deterministic PRNG, so both backends see the same inputs. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A float32 tensor of uniform values in [lo, hi). */
export function uniform(shape: number[], seed: number, lo = -1, hi = 1): tf.Tensor {
  const r = prng(seed);
  const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < values.length; i++) values[i] = lo + (hi - lo) * r();
  return tf.tensor(values, shape, 'float32');
}

/** An int32 tensor of uniform integers in [0, max). */
export function ints(shape: number[], seed: number, max: number): tf.Tensor {
  const r = prng(seed);
  const values = new Int32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < values.length; i++) values[i] = Math.floor(r() * max);
  return tf.tensor(values, shape, 'int32');
}

export interface OpCase {
  name: string;
  /** Builds the inputs (called on the backend under test). */
  inputs: () => tf.Tensor[];
  /** The op under test. May return several tensors. */
  forward: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[];
  /** Indices of the inputs to differentiate; default: every float32 input. `[]`: forward only. */
  wrt?: number[];
}

export interface OpRun {
  forward: number[][];
  grads: number[][];
  /** Tensors left behind by the run (should be 0). */
  leaked: number;
}

/**
 * Runs `c` on `backend`: forward values, and the gradients of `Σ y ⊙ w` (w: fixed pseudo-random weights,
 * so the upstream gradient is not all ones) with respect to the chosen inputs.
 */
export async function runOp(c: OpCase, backend: string): Promise<OpRun> {
  if (backend === 'cpu') cpuBackend(); // silences its "install tfjs-node" banner
  if (!(await tf.setBackend(backend))) throw new Error(`backend ${backend} did not initialise`);
  const before = tf.memory().numTensors;
  const out = tf.tidy(() => {
    const xs = c.inputs();
    const ys = asList(c.forward(...xs));
    const forward = ys.map((y) => Array.from(y.dataSync()));
    const wrt = c.wrt ?? xs.map((x, i) => (x.dtype === 'float32' ? i : -1)).filter((i) => i >= 0);
    let grads: number[][] = [];
    if (wrt.length > 0) {
      const f = (...diff: tf.Tensor[]): tf.Scalar => {
        const all = xs.slice();
        wrt.forEach((idx, j) => (all[idx] = diff[j]!));
        const outs = asList(c.forward(...all)).filter((y) => y.dtype === 'float32');
        return tf.addN(outs.map((y, k) => tf.sum(tf.mul(y, uniform(y.shape, 1000 + k, 0.5, 1.5))))) as tf.Scalar;
      };
      grads = tf.grads(f)(wrt.map((i) => xs[i]!)).map((g) => Array.from(g.dataSync()));
    }
    return { forward, grads };
  });
  return { ...out, leaked: tf.memory().numTensors - before };
}

function asList(y: tf.Tensor | tf.Tensor[]): tf.Tensor[] {
  return Array.isArray(y) ? y : [y];
}

/** Largest |a − b| / max(1, |b|) over all entries (b is the reference). */
export function maxRelDiff(a: number[][], b: number[][]): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.length !== y.length) return Infinity;
    for (let j = 0; j < x.length; j++) {
      const yj = y[j]!;
      const xj = x[j]!;
      if (Number.isNaN(xj) || Number.isNaN(yj)) {
        if (!(Number.isNaN(xj) && Number.isNaN(yj))) return Infinity;
        continue;
      }
      worst = Math.max(worst, Math.abs(xj - yj) / Math.max(1, Math.abs(yj)));
    }
  }
  return worst;
}
