/**
 * onnxruntime-node latency of a representative distilled model built with gnnctl's ONNX helpers:
 * a key → embedding lookup (LabelEncoder + Gather over a 100k × 64 table), an RTI sequence pooled with
 * masked attention, and a 3-layer MLP with a sigmoid head.
 *
 *   npm run build && node bench/onnx_latency.mjs [--runs 5000] [--threads 1]
 *
 * Prints p50 / p99 / mean single-request latency (batch 1) and batch-64 latency. A benchmark, not a
 * test: it asserts nothing and is never run by `npm test`.
 */
import * as ort from 'onnxruntime-node';
import { parseArgs } from 'node:util';
import {
  OnnxGraphBuilder,
  concat,
  dense,
  keyedEmbedding,
  maskedAttentionPool,
  relativeTime,
  squeeze,
  INT64_MIN,
} from '../dist/artifacts/onnx/index.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5000' }, threads: { type: 'string', default: '1' } } });
const runs = Number(values.runs);
const threads = Number(values.threads);

const ROWS = 100_000;
const DIM = 64;
const HIDDEN = 128;
const SEQ = 32;

let seed = 1;
const rand = (n, scale = 0.1) => Float32Array.from({ length: n }, () => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return ((seed / 2 ** 32) * 2 - 1) * scale;
});

function buildModel() {
  const g = new OnnxGraphBuilder();
  const anchor = g.addInput('anchor_time', 'INT64', ['batch', 1]);
  const key = g.addInput('customer_id', 'INT64', ['batch', 1]);
  const price = g.addInput('price', 'FLOAT', ['batch', 1]);
  const rtiPrice = g.addInput('rti:price', 'FLOAT', ['batch', 'seq', 1]);
  const rtiTime = g.addInput('rti:t', 'INT64', ['batch', 'seq', 1]);
  const vocab = BigInt64Array.from({ length: ROWS }, (_, i) => BigInt(i * 7 + 3));
  const emb = squeeze(g, keyedEmbedding(g, key, { vocab, table: { data: rand(ROWS * DIM), rows: ROWS, dim: DIM }, fallback: 'mean' }), [1]);
  const rel = relativeTime(g, rtiTime, anchor, { tRank: 3 });
  const seqFeatures = concat(g, [rtiPrice, rel.value], 2);
  const pooled = maskedAttentionPool(g, seqFeatures, squeeze(g, rel.mask, [2]), { weight: rand(2, 1) });
  const x = concat(g, [price, emb, pooled], 1);
  const inDim = 1 + DIM + 2;
  let h = dense(g, x, { kernel: rand(inDim * HIDDEN), bias: rand(HIDDEN), inputDim: inDim, units: HIDDEN, activation: 'relu' });
  h = dense(g, h, { kernel: rand(HIDDEN * HIDDEN), bias: rand(HIDDEN), inputDim: HIDDEN, units: HIDDEN, activation: 'relu' });
  const y = dense(g, h, { kernel: rand(HIDDEN), bias: rand(1), inputDim: HIDDEN, units: 1, activation: 'sigmoid' });
  g.addOutput('prediction', 'FLOAT', ['batch', 1], { from: y });
  return g.toBytes();
}

function feeds(batch) {
  const anchor = 1_710_000_000_000_000_000n;
  const times = [];
  for (let b = 0; b < batch; b++) for (let i = 0; i < SEQ; i++) times.push(i < SEQ - (b % 5) ? anchor - BigInt(i + 1) * 3_600_000_000_000n : INT64_MIN);
  return {
    anchor_time: new ort.Tensor('int64', new BigInt64Array(batch).fill(anchor), [batch, 1]),
    customer_id: new ort.Tensor('int64', BigInt64Array.from({ length: batch }, (_, b) => BigInt(b * 7 + 3)), [batch, 1]),
    price: new ort.Tensor('float32', rand(batch, 50), [batch, 1]),
    'rti:price': new ort.Tensor('float32', rand(batch * SEQ, 50), [batch, SEQ, 1]),
    'rti:t': new ort.Tensor('int64', BigInt64Array.from(times), [batch, SEQ, 1]),
  };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(session, batch, n) {
  const f = feeds(batch);
  for (let i = 0; i < 100; i++) await session.run(f); // warm-up
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(f);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), mean: ms.reduce((a, b) => a + b, 0) / ms.length };
}

const t0 = performance.now();
const bytes = buildModel();
const buildMs = performance.now() - t0;
const t1 = performance.now();
const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: threads, interOpNumThreads: 1 });
const loadMs = performance.now() - t1;
try {
  const fmt = (r) => `p50 ${r.p50.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms  mean ${r.mean.toFixed(3)} ms`;
  console.log(`model: ${(bytes.byteLength / 2 ** 20).toFixed(1)} MiB, built in ${buildMs.toFixed(0)} ms, session created in ${loadMs.toFixed(0)} ms, intra-op threads ${threads}`);
  console.log(`batch 1  (${runs} runs): ${fmt(await measure(session, 1, runs))}`);
  console.log(`batch 64 (${Math.ceil(runs / 10)} runs): ${fmt(await measure(session, 64, Math.ceil(runs / 10)))}`);
} finally {
  await session.release();
}
