/**
 * Serving from the online store: a model whose 64-dim customer embedding is an input (declared for
 * `serve --online-store` as docs/online_store.md shows), 100k embeddings published to a throwaway local
 * redis-server, `gnnctl serve --online-store` in one child process and `gnnctl bench serve --payloads`
 * (512 requests, 90% known keys) in another. With --kill-redis-at S, Redis is killed S seconds into the
 * measured load and restarted (empty, then republished) --redis-down seconds later, as the issue's
 * "Redis killed for 10 s" target. Prints one JSON object: the load generator's view and the server's
 * online-store row counts (lru / redis / miss / fallback) from /metrics.
 *
 *   npm run build && node bench/online_store_serve.mjs [--rate 3000] [--duration 20] [--warmup 3]
 *       [--kill-redis-at 5 --redis-down 10] [--deadline-ms 5]
 *
 * GNNCTL_ROOT=<folder> runs another build (its bin/ and dist/). A benchmark, not a test.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, ROOT } from './common.mjs';

const rate = arg('rate', '3000');
const duration = arg('duration', '20');
const warmup = arg('warmup', '3');
const killAt = arg('kill-redis-at');
const downS = Number(arg('redis-down', '10'));
const deadlineMs = arg('deadline-ms', '5');
const ROWS = 100_000;
const DIM = 64;
const GNNCTL = process.env.GNNCTL_ROOT ?? ROOT;
const BIN = join(GNNCTL, 'bin', 'gnnctl.js');
const mod = (p) => import(pathToFileURL(join(GNNCTL, 'dist', p)).href);
const { attr, floatScalar, int64s, OnnxGraphBuilder } = await mod('artifacts/onnx/index.js');
const { writeModelConfig } = await mod('artifacts/triton/pbtxt.js');
const { writeVersionFolder } = await mod('loadgen/synthetic_model.js');
const { publishValues } = await mod('online_store/publisher.js');

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const url = `redis://127.0.0.1:${port}`;
let redis;
const startRedis = async () => {
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => redis.stdout.on('data', (d) => String(d).includes('Ready to accept') && resolve()));
};
const publish = () =>
  publishValues(
    (async function* () {
      for (let s = 0; s < ROWS; s += 2048) {
        const n = Math.min(2048, ROWS - s);
        const flat = Float32Array.from({ length: n * DIM }, (_, i) => Math.sin(s * DIM + i) / 8);
        const b = Buffer.from(flat.buffer);
        yield { keys: Array.from({ length: n }, (_, i) => `c${s + i}`), values: Array.from({ length: n }, (_, i) => b.subarray(i * DIM * 4, (i + 1) * DIM * 4)) };
      }
    })(),
    { target: { url, keyPrefix: 'gnnctl', ttlSeconds: 3600 }, model: 'customers', version: `v${Date.now()}`, kind: 'embedding', dim: DIM, runId: 'bench', anchorTime: new Date().toISOString() },
  );

const work = mkdtempSync(join(tmpdir(), 'gnnctl-store-bench-'));
const repo = join(work, 'repo');
const EMB = 'entity.customers.embedding';
const MISSING = 'entity.customers.missing';
const KEY = 'transactions.customer_id';
{
  // A small head over [embedding, missing]: the model's fallback row is selected by the missing flag.
  const g = new OnnxGraphBuilder();
  g.addInput(KEY, 'STRING', ['batch', 1]);
  const emb = g.addInput(EMB, 'FLOAT', ['batch', DIM]);
  const missing = g.addInput(MISSING, 'FLOAT', ['batch', 1]);
  const sum = g.op('ReduceSum', [emb, int64s(g, [1], 'axes')], { keepdims: attr.int(1) });
  g.addOutput('probability', 'FLOAT', ['batch', 1], { from: g.op('Sigmoid', [g.op('Add', [sum, g.op('Mul', [missing, floatScalar(g, -1, 'fallback')])])]) });
  const dir = join(repo, 'store-model');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.pbtxt'), writeModelConfig({
    name: 'store-model', platform: 'onnxruntime_onnx', max_batch_size: 64,
    input: [{ name: KEY, data_type: 'TYPE_STRING', dims: [1] }, { name: EMB, data_type: 'TYPE_FP32', dims: [DIM], optional: true }, { name: MISSING, data_type: 'TYPE_FP32', dims: [1], optional: true }],
    output: [{ name: 'probability', data_type: 'TYPE_FP32', dims: [1] }],
    dynamic_batching: { max_queue_delay_microseconds: 500 },
    parameters: { [`online_store:${EMB}`]: { string_value: JSON.stringify({ table: 'customers', key: KEY, missing: MISSING }) }, [`missing_value:${EMB}`]: { string_value: '0' }, [`missing_value:${MISSING}`]: { string_value: '1' } },
  }));
  writeVersionFolder(dir, 1, g.toBytes());
}
const payloads = join(work, 'payloads');
mkdirSync(payloads);
for (let i = 0; i < 512; i++) {
  const key = i % 10 === 0 ? `unknown-${i}` : `c${(i * 7919) % ROWS}`;
  writeFileSync(join(payloads, `payload-${String(i).padStart(5, '0')}.json`), JSON.stringify({ id: String(i), inputs: [{ name: KEY, datatype: 'BYTES', shape: [1, 1], data: [key] }] }));
}

await startRedis();
const published = await publish();
const server = spawn(process.execPath, [BIN, 'serve', '--model-repository', repo, '--port', '0', '--poll-interval', '0', '--online-store', url, '--online-store-deadline', `${deadlineMs}ms`], { stdio: ['ignore', 'ignore', 'pipe'] });
const serverUrl = await new Promise((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (http:\/\/[^\s]+?)[\s(]/.exec(err);
    if (m) resolve(m[1]);
  });
  server.on('exit', (code) => reject(new Error(`gnnctl serve exited ${code}: ${err}`)));
});
const rows = async () => {
  const text = await (await fetch(`${serverUrl}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/gnnctl_online_store_rows_total\{model="store-model",source="(\w+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]));
};
let killed;
try {
  if (killAt !== undefined) {
    killed = (async () => {
      await new Promise((r) => setTimeout(r, (Number(warmup) + Number(killAt)) * 1000));
      redis.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, downS * 1000));
      await startRedis();
      await publish();
    })();
  }
  const r = await new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [BIN, 'bench', 'serve', '--url', serverUrl, '--model', 'store-model', '--payloads', payloads, '--rate', rate, '--duration', duration, '--warmup', warmup, '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`bench serve exited ${code}`))));
  });
  await killed;
  console.log(JSON.stringify({
    offered_qps: r.offered_qps, achieved_qps: Math.round(r.achieved_qps), errors: r.errors, error_kinds: r.error_kinds, latency_ms: r.latency_ms,
    redis_killed: killAt === undefined ? null : { at_s: Number(killAt), down_s: downS },
    online_store_rows: await rows(), publish_seconds: published.seconds, deadline_ms: Number(deadlineMs),
    load_average: loadavg().map((x) => Math.round(x * 100) / 100),
  }, null, 2));
} finally {
  server.kill('SIGTERM');
  redis.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
