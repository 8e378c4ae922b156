/**
 * KServe V2 over gRPC against HTTP on the same server: builds the serving benchmark's synthetic model
 * repository (100k string keys → 64-dim embeddings, RTI up to 32, a 3-layer MLP), starts
 * `gnnctl serve --grpc-port` in one child process, and runs `gnnctl bench serve` in another, alternating
 * `--protocol http` and `--protocol grpc` at the same offered rate and request pool (3 rounds each, so
 * drift on a shared machine hits both). Prints one JSON object with each run and the medians.
 *
 *   npm run build && node bench/grpc_serve.mjs [--rate 1500] [--duration 10] [--warmup 2] [--rounds 3]
 *
 * GNNCTL_ROOT=<folder> runs another build of gnnctl (its bin/ and dist/) than this checkout's.
 * A benchmark, not a test: it asserts nothing and is never run by `npm test`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, ROOT } from './common.mjs';

const rate = arg('rate', '1500');
const duration = arg('duration', '10');
const warmup = arg('warmup', '2');
const rounds = Number(arg('rounds', '3'));
const GNNCTL = process.env.GNNCTL_ROOT ?? ROOT;
const BIN = join(GNNCTL, 'bin', 'gnnctl.js');

const { writeSyntheticRepository } = await import(pathToFileURL(join(GNNCTL, 'dist', 'loadgen', 'synthetic_model.js')).href);
const repo = mkdtempSync(join(tmpdir(), 'gnnctl-grpc-bench-'));
writeSyntheticRepository(repo, { rows: 100_000, dim: 64, hidden: 128, maxBatchSize: 64, maxQueueDelayUs: 500 });

const server = spawn(process.execPath, [BIN, 'serve', '--model-repository', repo, '--port', '0', '--grpc-port', '0', '--poll-interval', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
const addresses = await new Promise((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (http:\/\/[^\s]+) and gRPC ([^\s]+) /.exec(err);
    if (m) resolve({ url: m[1], grpc: m[2] });
  });
  server.on('exit', (code) => reject(new Error(`gnnctl serve exited ${code}: ${err}`)));
});

function run(protocol) {
  const extra = protocol === 'grpc' ? ['--protocol', 'grpc', '--grpc-address', addresses.grpc] : [];
  const r = spawnSync(process.execPath, [BIN, 'bench', 'serve', '--url', addresses.url, '--model', 'online-model', '--rate', rate, '--duration', duration, '--warmup', warmup, '--json', ...extra], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`bench serve --protocol ${protocol} failed: ${r.stderr}`);
  const j = JSON.parse(r.stdout);
  return { protocol, offered_qps: j.offered_qps, achieved_qps: Math.round(j.achieved_qps), errors: j.errors, error_kinds: j.error_kinds, p50_ms: j.latency_ms.p50, p99_ms: j.latency_ms.p99, p999_ms: j.latency_ms.p999, mean_batch_rows: j.server?.mean_batch_rows };
}

const runs = [];
try {
  for (let i = 0; i < rounds; i++) for (const p of ['http', 'grpc']) runs.push(run(p));
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(repo, { recursive: true, force: true });
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = (p) => {
  const rs = runs.filter((r) => r.protocol === p);
  return { achieved_qps: median(rs.map((r) => r.achieved_qps)), p50_ms: median(rs.map((r) => r.p50_ms)), p99_ms: median(rs.map((r) => r.p99_ms)), errors: rs.reduce((n, r) => n + r.errors, 0) };
};
console.log(JSON.stringify({ offered_qps: Number(rate), duration_s: Number(duration), rounds, load_average: loadavg().map((x) => Math.round(x * 100) / 100), median: { http: summary('http'), grpc: summary('grpc') }, runs }, null, 2));
