#!/usr/bin/env node
/**
 * Fused ops (`src/compute/fused.ts`) against their composites of standard tf ops, forward + backward, at
 * the shapes of one training step (batch 512 seeds, 64 channels).
 *
 *   npm run build && node bench/fused.mjs [--backend wasm|cpu|auto] [--seconds 0.5]
 *
 * Prints one JSON object. Per op: milliseconds per forward+backward call (the gradients of every
 * differentiable input, given a fixed upstream gradient), milliseconds forward only, and the number of
 * TF.js kernels each runs (`tf.profile`), for the fused op and for the composite on the same backend.
 *
 * - layerNorm x [3000, 64] (gradients for x, γ, β);
 * - gatherWeightedSum table [3000, 64], 512 rows × fanout 10, 30 % padding (gradient for the table);
 * - dropout [3000, 64], rate 0.1;
 * - gatherAttention table [3000, 64], 4 heads, 512 × 10 (gradients for the table and both scores).
 *
 * Each measurement warms up twice, then repeats for at least `--seconds` of wall time and reports the
 * median call.
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs';
import { parseBackendRequest, selectBackend } from '../dist/compute/backend.js';
import {
  dropout,
  dropoutComposite,
  gatherAttention,
  gatherAttentionComposite,
  gatherWeightedSum,
  gatherWeightedSumComposite,
  layerNorm,
  layerNormComposite,
} from '../dist/compute/fused.js';
import { Rng } from '../dist/core/rng.js';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const seconds = Number(arg('seconds', '0.5'));
const backend = await selectBackend(parseBackendRequest(arg('backend', 'wasm')));

/**
 * Median seconds per call of `fn`, after two warm-up calls, over at least `seconds` of wall time (and at
 * least 5 calls). The median, not the mean: on a shared 2-core machine other processes preempt single
 * calls, and the median ignores those outliers.
 */
function timeIt(fn) {
  fn();
  fn();
  const samples = [];
  const start = performance.now();
  while (performance.now() - start < seconds * 1000 || samples.length < 5) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1] / 1000;
}

const round = (x, digits = 3) => Number(x.toPrecision(digits));
const rng = new Rng(7);
const uniform = (shape, lo = -1, hi = 1) => {
  const size = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(size);
  for (let i = 0; i < size; i++) v[i] = lo + (hi - lo) * rng.next();
  return tf.tensor(v, shape, 'float32');
};

/** Sampled-block index and weights: `padding` of the positions are padding (weight / mask 0, index 0). */
function block(m, n, f, padding) {
  const index = new Int32Array(n * f);
  const mask = new Float32Array(n * f);
  const weights = new Float32Array(n * f);
  for (let i = 0; i < n; i++) {
    let count = 0;
    for (let j = 0; j < f; j++) {
      if (rng.next() < padding) continue;
      index[i * f + j] = rng.int(m);
      mask[i * f + j] = 1;
      count++;
    }
    for (let j = 0; j < f; j++) weights[i * f + j] = mask[i * f + j] / Math.max(1, count);
  }
  return { index: tf.tensor1d(index, 'int32'), mask: tf.tensor1d(mask), weights: tf.tensor1d(weights) };
}

/**
 * Times `op(...inputs)` forward, and forward + gradients of the inputs at `wrt` (upstream gradient `dy`),
 * and counts the kernels of the latter.
 */
async function measure(op, inputs, wrt, dy) {
  const diff = wrt.map((i) => inputs[i]);
  const call = (...xs) => {
    const all = inputs.slice();
    wrt.forEach((idx, j) => (all[idx] = xs[j]));
    return op(...all);
  };
  // No read-back: wasm and cpu run kernels synchronously, and a training step never reads these back
  // (a wasm read-back copies the tensor: ~0.8 ms for [3000, 64] here, which would blur the comparison).
  const backward = () => tf.dispose(tf.tidy(() => tf.grads(call)(diff, dy)));
  const forward = () => tf.dispose(tf.tidy(() => op(...inputs)));
  // tf.profile returns the engine's one profile object, reset by the next call: read it at once.
  const kernels = (await tf.profile(() => tf.tidy(() => void tf.grads(call)(diff, dy)))).kernels.map((k) => k.name);
  const forwardKernels = (await tf.profile(() => tf.tidy(() => void op(...inputs)))).kernels.length;
  return {
    forwardBackwardMs: round(timeIt(backward) * 1000),
    forwardMs: round(timeIt(forward) * 1000),
    kernels: kernels.length,
    forwardKernels,
    // Identity kernels are the tape's copies of the tensors a gradient needs (a full copy on wasm).
    identityKernels: kernels.filter((k) => k === 'Identity').length,
  };
}

async function compare(name, shape, fused, composite, inputs, wrt, dy) {
  const f = await measure(fused, inputs, wrt, dy);
  const c = await measure(composite, inputs, wrt, dy);
  return {
    op: name,
    shape,
    fused: f,
    composite: c,
    speedup: round(c.forwardBackwardMs / f.forwardBackwardMs),
    forwardSpeedup: round(c.forwardMs / f.forwardMs),
    kernelsSaved: c.kernels - f.kernels,
  };
}

const C = 64;
const rows = 3000;
const n = 512;
const f = 10;
const heads = 4;
const results = [];

{
  const inputs = [uniform([rows, C]), uniform([C], 0.5, 1.5), uniform([C])];
  const dy = uniform([rows, C]);
  results.push(await compare('layerNorm', `x [${rows}, ${C}]`, layerNorm, layerNormComposite, inputs, [0, 1, 2], dy));
  tf.dispose([...inputs, dy]);
}
{
  const { index, weights, mask } = block(rows, n, f, 0.3);
  const x = uniform([rows, C]);
  const dy = uniform([n, C]);
  results.push(
    await compare(
      'gatherWeightedSum',
      `x [${rows}, ${C}], ${n} × fanout ${f}`,
      (t, i, w) => gatherWeightedSum(t, i, w, f),
      (t, i, w) => gatherWeightedSumComposite(t, i, w, f),
      [x, index, weights],
      [0],
      dy,
    ),
  );
  tf.dispose([x, index, weights, mask, dy]);
}
{
  const x = uniform([rows, C]);
  const dy = uniform([rows, C]);
  results.push(
    await compare(
      'dropout',
      `x [${rows}, ${C}], rate 0.1`,
      (t) => dropout(t, 0.1, 42),
      (t) => dropoutComposite(t, 0.1, 42),
      [x],
      [0],
      dy,
    ),
  );
  // tf.dropout, which the model used before: random uniform, add, floor, mul, div.
  const tfDropout = await measure((t) => tf.dropout(t, 0.1, undefined, 42), [x], [0], dy);
  results[results.length - 1].tfDropout = tfDropout;
  tf.dispose([x, dy]);
}
{
  const { index, mask } = block(rows, n, f, 0.3);
  const xw = uniform([rows, C]);
  const src = uniform([rows, heads]);
  const dst = uniform([n, heads]);
  const dy = uniform([n, C]);
  const args = { fanout: f, heads };
  results.push(
    await compare(
      'gatherAttention',
      `xw [${rows}, ${C}], ${heads} heads, ${n} × fanout ${f}`,
      (a, s, d, i, mk) => gatherAttention(a, s, d, i, mk, args),
      (a, s, d, i, mk) => gatherAttentionComposite(a, s, d, i, mk, args),
      [xw, src, dst, index, mask],
      [0, 1, 2],
      dy,
    ),
  );
  tf.dispose([xw, src, dst, index, mask, dy]);
}

console.log(
  JSON.stringify({
    bench: 'fused',
    backend: { name: backend.name, simd: backend.simd, threads: backend.threads },
    node: process.version,
    cpu: { model: os.cpus()[0]?.model.trim(), cores: os.availableParallelism() },
    seconds,
    results,
  }),
);
