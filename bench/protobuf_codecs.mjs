#!/usr/bin/env node
/**
 * The two protobuf codecs gnnctl ships: ONNX `ModelProto` encode/decode of a representative distilled
 * model (a 100k × 64 embedding table inside, as `gnnctl export` writes it) and Triton `config.pbtxt`
 * parse/write of the config `gnnctl export` writes. Median of `--reps` timings each. One JSON object.
 *
 *   npm run build && node bench/protobuf_codecs.mjs [--reps 5] [--dist DIR]
 *
 * `--dist` points at another build (e.g. an older checkout's dist/) to compare codecs on the same machine.
 * A benchmark, not a test: it asserts nothing and is never run by `npm test`.
 */
import { resolve, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, ROOT } from './common.mjs';

const dist = resolve(arg('dist', join(ROOT, 'dist')));
const reps = Number(arg('reps', '5'));
const { OnnxGraphBuilder, keyedEmbedding, dense, squeeze, onnx } = await import(pathToFileURL(join(dist, 'export/onnx/index.js')).href);
const { parseModelConfig, writeModelConfig } = await import(pathToFileURL(join(dist, 'artifacts/triton/pbtxt.js')).href);

let seed = 1;
const rand = (n, scale = 0.1) =>
  Float32Array.from({ length: n }, () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return ((seed / 2 ** 32) * 2 - 1) * scale;
  });

function buildModel() {
  const g = new OnnxGraphBuilder();
  const key = g.addInput('customer_id', 'INT64', ['batch', 1]);
  const vocab = BigInt64Array.from({ length: 100_000 }, (_, i) => BigInt(i * 7 + 3));
  const emb = squeeze(g, keyedEmbedding(g, key, { vocab, table: { data: rand(100_000 * 64), rows: 100_000, dim: 64 }, fallback: 'mean' }), [1]);
  const h = dense(g, emb, { kernel: rand(64 * 128), bias: rand(128), inputDim: 64, units: 128, activation: 'relu' });
  const y = dense(g, h, { kernel: rand(128), bias: rand(1), inputDim: 128, units: 1, activation: 'sigmoid' });
  g.addOutput('prediction', 'FLOAT', ['batch', 1], { from: y });
  return g;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(fn, n = 1) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t0) / 1e6 / n;
}

const g = buildModel();
let bytes;
const encodeMs = [];
const decodeMs = [];
for (let r = 0; r < reps; r++) {
  encodeMs.push(time(() => (bytes = g.toBytes())));
  decodeMs.push(time(() => onnx.ModelProto.decode(bytes)));
}

const rti = 'transactions.customer_id->customers.customer_id->transactions.customer_id';
const config = {
  name: 'online-model',
  platform: 'onnxruntime_onnx',
  max_batch_size: 256,
  input: [
    { name: 'anchor_time', data_type: 'TYPE_INT64', dims: [1] },
    { name: 'transactions.customer_id', data_type: 'TYPE_STRING', dims: [1] },
    { name: `${rti}:price`, data_type: 'TYPE_FP32', dims: [-1, 1] },
    { name: `${rti}:t_dat`, data_type: 'TYPE_INT64', dims: [-1, 1] },
  ],
  output: [{ name: 'prediction', data_type: 'TYPE_FP32', dims: [1] }],
  dynamic_batching: { preferred_batch_size: [16, 64], max_queue_delay_microseconds: 500 },
  instance_group: [{ count: 1, kind: 'KIND_CPU' }],
  parameters: { [`pad_value:${rti}:t_dat`]: { string_value: '-9223372036854775808' } },
};
const text = writeModelConfig(config);
parseModelConfig(text); // warm-up: the schema is parsed once per process
const writeUs = [];
const parseUs = [];
for (let r = 0; r < reps; r++) {
  writeUs.push(time(() => writeModelConfig(config), 500) * 1000);
  parseUs.push(time(() => parseModelConfig(text), 500) * 1000);
}

console.log(
  JSON.stringify({
    dist,
    reps,
    onnx_model_bytes: bytes.length,
    onnx_encode_ms: +median(encodeMs).toFixed(1),
    onnx_decode_ms: +median(decodeMs).toFixed(1),
    pbtxt_bytes: text.length,
    pbtxt_write_us: +median(writeUs).toFixed(1),
    pbtxt_parse_us: +median(parseUs).toFixed(1),
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
  }),
);
