#!/usr/bin/env node
/**
 * Kernel throughput on the active TF.js backend, against the speed table in docs/architecture.md ("Compute").
 *
 *   npm run build && node bench/kernels.mjs [--backend auto|tensorflow|wasm|cpu] [--seconds 0.5]
 *
 * Prints one JSON object. Measures:
 * - matmul GFLOP/s at GNN-training shapes: a SAGE layer over a sampled block ([5120×192]·[192×64]),
 *   a small dense layer ([512×64]·[64×64]), and 1024³ for comparison with the table;
 * - gather + mean over fanout (`tf.gather` → reshape `[batch, fanout, dim]` → `mean(1)`), GB/s of
 *   gathered rows (on wasm, `tf.gather` is gnnctl's TypeScript GatherV2; wasm's own ran at 0.06–0.10 GB/s);
 * - the same gather + sum as a plain JavaScript loop over a Float32Array (what the sampler does);
 * - gnnctl's wasm `UnsortedSegmentSum` kernel (the gradient of gather), GB/s of input read;
 * - a whole embedding-lookup gradient (`tf.grad` of gather + mean), per call.
 *
 * Each measurement warms up twice, then repeats for at least `--seconds` of wall time and reports the mean.
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs';
import { parseBackendRequest, selectBackend } from '../dist/compute/backend.js';
import { probeMatmul } from '../dist/compute/probe.js';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const seconds = Number(arg('seconds', '0.5'));
const backend = await selectBackend(parseBackendRequest(arg('backend', 'auto')));

/** Mean seconds per call of `fn`, after two warm-up calls, over at least `seconds` of wall time. */
function timeIt(fn) {
  fn();
  fn();
  let iterations = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    fn();
    iterations++;
    elapsed = (performance.now() - start) / 1000;
  } while (elapsed < seconds || iterations < 3);
  return { perCall: elapsed / iterations, iterations };
}

const round = (x, digits = 3) => Number(x.toPrecision(digits));

// --- matmul -------------------------------------------------------------------------------------------
const matmul = [
  [5120, 192, 64],
  [512, 64, 64],
  [1024, 1024, 1024],
].map(([m, k, n]) => {
  const p = probeMatmul({ seconds, m, k, n });
  return { shape: `[${m}×${k}]·[${k}×${n}]`, gflops: round(p.gflops), iterations: p.iterations };
});

// --- gather + mean (TF.js) and gather + sum (plain JS) --------------------------------------------------
const tableRows = 100_000;
const batch = 1024;
const fanout = 16;
const dim = 64;
const gatheredBytes = batch * fanout * dim * 4;
const tableValues = new Float32Array(tableRows * dim);
for (let i = 0; i < tableValues.length; i++) tableValues[i] = Math.random() - 0.5;
const indexValues = new Int32Array(batch * fanout);
for (let i = 0; i < indexValues.length; i++) indexValues[i] = Math.floor(Math.random() * tableRows);

const table = tf.tensor2d(tableValues, [tableRows, dim]);
const indices = tf.tensor1d(indexValues, 'int32');
const gatherMean = timeIt(() => {
  const out = tf.tidy(() => tf.mean(tf.reshape(tf.gather(table, indices), [batch, fanout, dim]), 1));
  out.dataSync();
  out.dispose();
});
const gatherOnly = timeIt(() => {
  const out = tf.gather(table, indices);
  out.dataSync();
  out.dispose();
});

const jsOut = new Float32Array(batch * dim);
const gatherSumJs = timeIt(() => {
  jsOut.fill(0);
  for (let b = 0; b < batch; b++) {
    const o = b * dim;
    for (let f = 0; f < fanout; f++) {
      const src = indexValues[b * fanout + f] * dim;
      for (let d = 0; d < dim; d++) jsOut[o + d] += tableValues[src + d];
    }
  }
});

// --- UnsortedSegmentSum (gnnctl's kernel on wasm) -----------------------------------------------------
const segmentSum = [
  { rows: 100_000, dim: 16, segments: 10_000 },
  { rows: batch * fanout, dim, segments: tableRows },
  { rows: 100_000, dim: 64, segments: 10_000 },
].map(({ rows, dim: d, segments }) => {
  const x = tf.randomUniform([rows, d], -1, 1, 'float32', 3);
  const ids = tf.randomUniform([rows], 0, segments, 'int32', 4);
  const t = timeIt(() => {
    const out = tf.unsortedSegmentSum(x, ids, segments);
    out.dataSync();
    out.dispose();
  });
  tf.dispose([x, ids]);
  return { rows, dim: d, segments, ms: round(t.perCall * 1000), gbps: round((rows * d * 4) / t.perCall / 1e9) };
});

// --- a whole embedding-lookup gradient ----------------------------------------------------------------
const upstream = tf.randomUniform([batch, dim], -1, 1, 'float32', 5);
const gatherGrad = timeIt(() => {
  const g = tf.tidy(() =>
    tf.grad((t) => tf.sum(tf.mul(tf.mean(tf.reshape(tf.gather(t, indices), [batch, fanout, dim]), 1), upstream)))(table),
  );
  g.dataSync();
  g.dispose();
});
tf.dispose([table, indices, upstream]);

const gbps = (t) => round(gatheredBytes / t.perCall / 1e9);
console.log(
  JSON.stringify({
    bench: 'kernels',
    backend: {
      name: backend.name,
      simd: backend.simd,
      threads: backend.threads,
      added_kernels: backend.added_kernels,
      replaced_kernels: backend.replaced_kernels,
    },
    node: process.version,
    cpu: { model: os.cpus()[0]?.model.trim(), cores: os.availableParallelism() },
    seconds,
    matmul,
    gather: {
      shape: `table [${tableRows}×${dim}], ${batch}×${fanout} indices`,
      tfjsGatherMeanGBps: gbps(gatherMean),
      tfjsGatherOnlyGBps: gbps(gatherOnly),
      jsLoopGatherSumGBps: gbps(gatherSumJs),
    },
    unsortedSegmentSum: segmentSum,
    gatherGradient: {
      shape: `d/dtable of mean(gather(table [${tableRows}×${dim}], ${batch}×${fanout}))`,
      ms: round(gatherGrad.perCall * 1000),
    },
    designTable: {
      matmulWasmGflops: 29,
      matmulCpuGflops: 0.85,
      jsLoopGatherSumGBps: 0.72,
      tfjsWasmGatherMeanGBps: 0.12,
    },
    tensorsLeft: tf.memory().numTensors,
  }),
);
