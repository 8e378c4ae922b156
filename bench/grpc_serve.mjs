/**
 * KServe V2 over gRPC against HTTP on the same server: builds the serving benchmark's synthetic model
 * repository (100k string keys → 64-dim embeddings, RTI up to 32, a 3-layer MLP), starts
 * `gnnctl serve --grpc-port` in a child process, and runs the load generator (`gnnctl bench serve`'s
 * code, in this process) alternating HTTP and gRPC at each offered rate on the same request pool
 * (rounds alternate, so drift on a shared machine hits both). Prints one JSON object with each run and
 * the medians per protocol and rate.
 *
 * The comparison is fair by construction: both generators are lean clients on the same cores
 * (`raw_http.ts` HTTP/1.1 keep-alive over up to 64 connections, `raw_grpc.ts` HTTP/2 over
 * `--grpc-channels` connections, default 4), each sending pre-serialized requests, and each run reports
 * CPU per request of the server process (every thread, from its /metrics) and of the generator, which
 * unlike latency on a shared machine do not depend on what else runs. `--grpc-client node` measures
 * `@grpc/grpc-js`'s client instead.
 *
 *   npm run build && node bench/grpc_serve.mjs [--rates 1500[,3000,…]] [--duration 10] [--warmup 2] [--rounds 3] [--grpc-channels 4] [--grpc-client raw|node]
 *
 * GNNCTL_ROOT=<folder> runs another build of gnnctl (its bin/ and dist/) than this checkout's;
 * GNNCTL_SERVER_ROOT=<folder> serves with another build while this one generates the load (before/after).
 * A benchmark, not a test: it asserts nothing and is never run by `npm test`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, ROOT } from './common.mjs';

const rates = arg('rates', arg('rate', '1500')).split(',').map(Number);
const duration = Number(arg('duration', '10'));
const warmup = Number(arg('warmup', '2'));
const rounds = Number(arg('rounds', '3'));
const grpcChannels = Number(arg('grpc-channels', '4'));
const grpcClient = arg('grpc-client', 'raw');
const GNNCTL = process.env.GNNCTL_ROOT ?? ROOT;
const SERVER = process.env.GNNCTL_SERVER_ROOT ?? GNNCTL;
const load = (file) => import(pathToFileURL(join(GNNCTL, 'dist', 'loadgen', file)).href);

const { writeSyntheticRepository } = await load('synthetic_model.js');
const { benchServe } = await load('bench_serve.js');
const { scrapeMetrics } = await load('server_stats.js');
const repo = mkdtempSync(join(tmpdir(), 'gnnctl-grpc-bench-'));
writeSyntheticRepository(repo, { rows: 100_000, dim: 64, hidden: 128, maxBatchSize: 64, maxQueueDelayUs: 500 });

const server = spawn(process.execPath, [join(SERVER, 'bin', 'gnnctl.js'), 'serve', '--model-repository', repo, '--port', '0', '--grpc-port', '0', '--poll-interval', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
const addresses = await new Promise((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (http:\/\/[^\s]+) and gRPC ([^\s]+) /.exec(err);
    if (m) resolve({ url: m[1], grpc: m[2] });
  });
  server.on('exit', (code) => reject(new Error(`gnnctl serve exited ${code}: ${err}`)));
});

const serverCpuS = async () => (await scrapeMetrics(addresses.url))?.samples.get('process_cpu_seconds_total') ?? NaN;

async function run(protocol, rate) {
  const cpu0 = await serverCpuS();
  const own0 = process.cpuUsage();
  const j = await benchServe({
    url: addresses.url,
    model: 'online-model',
    rate,
    durationS: duration,
    warmupS: warmup,
    ...(protocol === 'grpc' ? { protocol, grpcAddress: addresses.grpc, grpcChannels, client: grpcClient } : {}),
  });
  const own = process.cpuUsage(own0);
  const cpu1 = await serverCpuS();
  // Warm-up and measured requests both cost CPU; per request over all of them.
  const sent = Math.round((duration + warmup) * rate);
  return {
    protocol,
    offered_qps: rate,
    achieved_qps: Math.round(j.achieved_qps),
    errors: j.errors,
    error_kinds: j.error_kinds,
    p50_ms: j.latency_ms.p50,
    p99_ms: j.latency_ms.p99,
    p999_ms: j.latency_ms.p999,
    server_cpu_us_per_request: Math.round(((cpu1 - cpu0) * 1e6) / sent),
    generator_cpu_us_per_request: Math.round((own.user + own.system) / sent),
    send_lag_p99_ms: j.send_lag_ms.p99,
    mean_batch_rows: j.server?.mean_batch_rows,
  };
}

const runs = [];
try {
  for (const rate of rates) for (let i = 0; i < rounds; i++) for (const p of i % 2 === 0 ? ['http', 'grpc'] : ['grpc', 'http']) runs.push(await run(p, rate));
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(repo, { recursive: true, force: true });
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = (p, rate) => {
  const rs = runs.filter((r) => r.protocol === p && r.offered_qps === rate);
  const m = (k) => median(rs.map((r) => r[k]));
  return { achieved_qps: m('achieved_qps'), p50_ms: m('p50_ms'), p99_ms: m('p99_ms'), server_cpu_us_per_request: m('server_cpu_us_per_request'), generator_cpu_us_per_request: m('generator_cpu_us_per_request'), errors: rs.reduce((n, r) => n + r.errors, 0) };
};
const medians = rates.map((rate) => ({ offered_qps: rate, http: summary('http', rate), grpc: summary('grpc', rate) }));
console.log(JSON.stringify({ duration_s: duration, rounds, grpc_client: grpcClient, grpc_channels: grpcChannels, load_average: loadavg().map((x) => Math.round(x * 100) / 100), medians, runs }, null, 2));
