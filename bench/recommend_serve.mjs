#!/usr/bin/env node
/**
 * The session recommender served: `gnnctl serve` answering full-catalogue top-12 requests (the customer's
 * key, the request time and the last 16 purchases; no candidates) under open-loop constant-rate load from
 * `src/loadgen` (latency from each request's due time, so queueing shows). Also onnxruntime's own batch-1
 * latency on the same requests (no HTTP), to separate model time from server time. One JSON object.
 *
 *   npm run build && node bench/recommend_serve.mjs --size medium [--rate 500] [--duration 20]
 *   node bench/recommend_serve.mjs --config FILE --run RUN   # an existing session recommender run
 *
 * Without --run, the runs are trained briefly first (not timed: latency depends on the model's shape and
 * the catalogue size, not on how well it was trained). The machine's load average is reported alongside:
 * on a shared 2-core machine the tail is partly other people's jobs.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { arg, benchConfig, dataset, peakRssMb, ROOT } from './common.mjs';

const size = arg('size', 'medium');
const rate = Number(arg('rate', '500'));
const duration = Number(arg('duration', '20'));
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { distillSession } = await import('../dist/distill/distill.js');
const { exportSessionRecommender, lastActiveUsers, sessionRequests, sessionFeeds } = await import('../dist/export/session_export.js');
const { readModelJson, resolveRun } = await import('../dist/artifacts/run_store.js');
const { SESSION_SPEC_FILE } = await import('../dist/distill/session/session_kind.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { Graph } = await import('../dist/graph/graph.js');
const { sessionInferBody } = await import('../dist/loadgen/session_requests.js');
const { runOpenLoop, summarize } = await import('../dist/loadgen/open_loop.js');
const { setQuiet } = await import('../dist/core/log.js');
const ort = await import('onnxruntime-node');
setQuiet(true);

const cfg = loadConfig(arg('config', null) ?? benchConfig(size, await dataset(size)));
let run = arg('run', null);
if (!run) {
  for (const task of ['churn', 'item_sales']) {
    cfg.taskSpecs[task].model = { ...cfg.taskSpecs[task].model, max_steps_per_epoch: 50 };
    await train({ cfg, task, epochs: 1, skip_baseline: true });
  }
  cfg.session_recommender = { ...cfg.session_recommender, max_train_examples: 20_000, train_anchors: 2 };
  run = (await distillSession({ cfg, epochs: 1 })).runId;
}
const repo = join(cfg.artifactsDir, 'bench-recommender-repository');
const exported = await exportSessionRecommender({ cfg, run, out: repo });
const spec = readModelJson(resolveRun(cfg.artifactsDir, run, { kind: 'distill' }).dir, SESSION_SPEC_FILE);
const graph = Graph.load((await buildGraph(cfg)).dir);
const reqs = await sessionRequests(graph, cfg.sessionTarget, spec, lastActiveUsers(graph, cfg.sessionTarget, Number(arg('pool', '256'))), graph.manifest.time_range[1], cfg.session_recommender.real_time_offset);

// onnxruntime alone, batch 1, one thread (what the server's worker runs per request).
const session = await ort.InferenceSession.create(join(exported.dir, 'model.onnx'), { intraOpNumThreads: 1 });
const times = [];
for (let i = 0; i < 2000; i++) {
  const feeds = sessionFeeds(spec, [reqs[i % reqs.length]]);
  const t = performance.now();
  await session.run(feeds);
  if (i >= 200) times.push(performance.now() - t);
}
await session.release();
const onnx = summarize(Float64Array.from(times));

const port = Number(arg('port', '18766'));
const load = [loadavg()[0]];
const server = spawn(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'serve', '--model-repository', repo, '--port', String(port), '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
let served;
try {
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; !(await fetch(`${url}/v2/health/ready`).then((x) => x.ok, () => false)); i++) {
    if (i > 600) throw new Error('gnnctl serve did not become ready in 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const bodies = reqs.map((r) => Buffer.from(sessionInferBody(spec, r)));
  served = await runOpenLoop({ url, path: `/v2/models/${exported.model}/infer`, bodies, rate, durationS: duration, warmupS: 3 });
  load.push(loadavg()[0]);
} finally {
  server.kill('SIGTERM');
}
const round = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    bench: 'recommend_serve',
    size,
    run,
    catalogue_items: exported.items,
    users: exported.users,
    k: spec.k,
    session_length: spec.session.max_length,
    model_onnx_mib: round(exported.model_bytes / 2 ** 20),
    rate,
    duration_s: duration,
    served: { offered_qps: served.offered_qps, achieved_qps: served.achieved_qps, ok: served.ok, errors: served.errors, error_kinds: served.error_kinds, latency_ms: served.latency_ms, send_lag_ms: served.send_lag_ms },
    onnxruntime_batch1_ms: { p50: round(onnx.p50), p99: round(onnx.p99), runs: times.length },
    target: { p99_ms: 5, rate_qps: 500, met: served.errors === 0 && served.latency_ms.p99 <= 5 },
    load_average_1m: { before: round(load[0]), after: round(load[1] ?? NaN) },
    peak_rss_mb: peakRssMb(),
  }),
);
