/**
 * Serving benchmark: builds a representative distilled-model repository (100k string keys → 64-dim
 * embeddings via LabelEncoder + Gather, masked mean and attention pooling over RTI sequences up to 32, a
 * 3-layer MLP), starts `gnnctl serve` on it in one child process, runs `gnnctl bench serve`'s open-loop
 * load generator in another, and prints one JSON object: the client's view (offered and achieved QPS,
 * latency percentiles from the scheduled send time, errors by kind) and the server's (mean time per
 * request in each phase, batch sizes, main-thread utilisation, from its /metrics).
 *
 *   npm run build && node bench/serve.mjs [--rate 2000] [--duration 30] [--warmup 3]
 *       [--ort-thread worker|main] [--delay-us 500] [--max-batch 64] [--instances 1] [--connections 64]
 *       [--rows 100000] [--dim 64] [--hidden 128] [--known-key-rate 0.9] [--server-profile DIR]
 *       [--reload-at S] [--kumo] [--rti-columns K] [--payloads DIR] [--sweep auto|R1,R2,…]
 *       [--p99-target MS]
 *
 * --instances N sets the model's instance_group count: batches in flight at once. With onnxruntime in the
 * worker thread, 2 keeps the next batch queued at the worker while one runs, so the worker does not wait
 * for the main thread to see the answer and form the next batch.
 * --reload-at S writes version 2 of the model into the repository S seconds into the measured window
 * (built before the load starts), so the run includes a hot reload.
 * --kumo runs Kumo's published benchmark shape: the model takes 24 extra numeric RTI columns
 * (--rti-columns), and the load is 128 pre-generated request files (written to a temp folder, sent with
 * --payloads) with RTI lengths N ∈ {4, 8, 16, 32}, about 4.5–10 KB each.
 * --rollout moves the served model through a canary rollout during the measured window, through
 * rollout.json as `gnnctl rollout` writes it: at 20% canary version 2 at 50%, at 40% promote it, at 60%
 * canary version 3 at 50%, at 80% roll it back. The report counts requests per version and failures.
 * --payloads DIR sends those request files instead (they must fit the model: see --rti-columns).
 * --sweep steps the offered rate (auto: from --rate ×1.5 until the server falls behind; or a list), each
 * step --warmup + --duration seconds, and prints the latency-against-load table (p99 target --p99-target,
 * default 10 ms); --chart FILE.svg also draws it.
 *
 * GNNCTL_DIST=<folder> runs another build of gnnctl than ../dist. A benchmark, not a test: it asserts
 * nothing and is never run by `npm test`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL, fileURLToPath } from 'node:url';

const { values: args } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    repo: { type: 'string' },
    url: { type: 'string' },
    'payload-dir': { type: 'string' },
    'server-pid': { type: 'string' },
    keys: { type: 'string' },
    rate: { type: 'string', default: '2000' },
    duration: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '3' },
    'ort-thread': { type: 'string', default: 'worker' },
    'ort-threads': { type: 'string', default: '1' },
    'delay-us': { type: 'string', default: '500' },
    'max-batch': { type: 'string', default: '64' },
    instances: { type: 'string', default: '1' },
    connections: { type: 'string', default: '64' },
    rows: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '64' },
    hidden: { type: 'string', default: '128' },
    'known-key-rate': { type: 'string', default: '0.9' },
    'server-profile': { type: 'string' },
    'reload-at': { type: 'string' },
    kumo: { type: 'boolean', default: false },
    rollout: { type: 'boolean', default: false },
    'rti-columns': { type: 'string' },
    payloads: { type: 'string' },
    sweep: { type: 'string' },
    'p99-target': { type: 'string', default: '10' },
    chart: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  // The usage is this file's doc comment.
  const { readFileSync } = await import('node:fs');
  const doc = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(new URL(import.meta.url), 'utf8'))[1];
  process.stdout.write(`${doc.split('\n').map((l) => l.replace(/^ \* ?/, '')).join('\n').trim()}\n`);
  process.exit(0);
}
const rtiColumns = Number(args['rti-columns'] ?? (args.kumo ? 24 : 0));

const dist = process.env.GNNCTL_DIST ? pathToFileURL(`${process.env.GNNCTL_DIST.replace(/\/$/, '')}/`) : new URL('../dist/', import.meta.url);
const self = fileURLToPath(import.meta.url);

if (args.role === 'server') await serverRole();
else if (args.role === 'client') await clientRole();
else await main();

/** Child 1: gnnctl serve on an ephemeral port; prints {"url"} once listening, the stop result at exit. */
async function serverRole() {
  const { startServer } = await import(new URL('serve/server.js', dist));
  const server = await startServer({
    modelRepository: args.repo,
    port: 0,
    pollIntervalMs: 2000,
    ortThread: args['ort-thread'],
    intraOpThreads: Number(args['ort-threads']),
    log: (line) => process.stderr.write(`[server] ${line}\n`),
  });
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
  // CPU time of the load window only (SIGUSR2 marks its start): loading the model is not serving.
  let cpu0 = process.cpuUsage();
  process.on('SIGUSR2', () => (cpu0 = process.cpuUsage()));
  await new Promise((resolve) => process.once('SIGTERM', resolve));
  const cpu = process.cpuUsage(cpu0);
  const versions = [...server.metrics.stats.all()].map((v) => ({ version: v.version, success: v.success.count, fail: v.fail.count }));
  const result = await server.stop();
  process.stdout.write(`${JSON.stringify({ stopped: result, cpu_ms: (cpu.user + cpu.system) / 1000, versions })}\n`);
}

/** Child 2: the open-loop load generator (what `gnnctl bench serve --json` runs). */
async function clientRole() {
  const { benchServe, benchServeSweep, prepareLoad } = await import(new URL('loadgen/bench_serve.js', dist));
  const { writePayloads } = await import(new URL('loadgen/request_pool.js', dist));
  let cpu0;
  const options = {
    url: args.url,
    model: 'online-model',
    rate: Number(args.rate),
    durationS: Number(args.duration),
    warmupS: Number(args.warmup),
    connections: Number(args.connections),
    keysFile: args.keys,
    knownKeyRate: Number(args['known-key-rate']),
    payloadsDir: args.payloads,
    onStart: () => {
      cpu0 = process.cpuUsage();
      process.kill(Number(args['server-pid']), 'SIGUSR2');
      process.stdout.write('{"started":true}\n');
    },
  };
  if (args.kumo && !args.payloads) {
    // Kumo's shape: 128 pre-generated files, N ∈ {4, 8, 16, 32}; written, then read back like --payloads.
    const dir = join(args['payload-dir'], 'payloads');
    const prepared = await prepareLoad({ ...options, poolSize: 128, sequenceLengths: [4, 8, 16, 32] });
    writePayloads({ bodies: prepared.bodies }, dir);
    options.payloadsDir = dir;
  }
  const result = args.sweep
    ? await benchServeSweep({ ...options, rates: args.sweep === 'auto' ? undefined : args.sweep.split(',').map(Number), p99TargetMs: Number(args['p99-target']) })
    : await benchServe(options);
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`${JSON.stringify({ ...result, clientCpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
}

async function main() {
  const { writeSyntheticRepository, syntheticKey, buildSyntheticModel, writeVersionFolder } = await import(new URL('loadgen/synthetic_model.js', dist));
  const dir = mkdtempSync(join(tmpdir(), 'gnnctl-bench-serve-'));
  try {
    const rows = Number(args.rows);
    const t0 = performance.now();
    const repo = join(dir, 'repo');
    const modelOptions = { rows, dim: Number(args.dim), hidden: Number(args.hidden), rtiColumns };
    const instances = Number(args.instances);
    writeSyntheticRepository(repo, {
      ...modelOptions,
      maxBatchSize: Number(args['max-batch']),
      maxQueueDelayUs: Number(args['delay-us']),
      ...(instances !== 1 ? { config: { instance_group: [{ kind: 'KIND_CPU', count: instances }] } } : {}),
    });
    const buildMs = performance.now() - t0;
    const reloadAt = args['reload-at'] === undefined ? undefined : Number(args['reload-at']);
    const version2 = reloadAt === undefined ? undefined : buildSyntheticModel({ ...modelOptions, seed: 2 });
    const rolloutVersions = args.rollout ? [buildSyntheticModel({ ...modelOptions, seed: 2 }), buildSyntheticModel({ ...modelOptions, seed: 3 })] : undefined;
    const { rolloutCommand } = await import(new URL('cli/commands/rollout.js', dist));
    const rollout = (action, extra = {}) => rolloutCommand({ action, modelRepository: repo, model: 'online-model', ...extra });
    if (rolloutVersions) {
      // Pinned to version 1 first, so versions 2 and 3 wait for their canary.
      await rollout('pin');
      writeVersionFolder(join(repo, 'online-model'), 2, rolloutVersions[0]);
    }
    const keys = join(dir, 'keys.txt');
    writeFileSync(keys, `${Array.from({ length: rows }, (_, i) => syntheticKey(i)).join('\n')}\n`);

    const profile = args['server-profile'] ? ['--cpu-prof', `--cpu-prof-dir=${args['server-profile']}`] : [];
    const server = spawn(process.execPath, [...profile, self, '--role', 'server', '--repo', repo, '--ort-thread', args['ort-thread'], '--ort-threads', args['ort-threads']], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const serverOut = lines(server.stdout);
    const { url } = JSON.parse(await serverOut.next());
    const client = spawn(
      process.execPath,
      [
        self, '--role', 'client', '--url', url, '--server-pid', String(server.pid), '--keys', keys, '--rate', args.rate, '--duration', args.duration, '--warmup', args.warmup,
        '--connections', args.connections, '--known-key-rate', args['known-key-rate'], '--payload-dir', dir, '--p99-target', args['p99-target'],
        ...(args.kumo ? ['--kumo'] : []), ...(args.payloads ? ['--payloads', args.payloads] : []), ...(args.sweep ? ['--sweep', args.sweep] : []),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const clientOut = lines(client.stdout);
    await clientOut.next(); // {"started":true}: the load begins
    let reloadTimer;
    if (version2) reloadTimer = setTimeout(() => writeVersionFolder(join(repo, 'online-model'), 2, version2), (Number(args.warmup) + reloadAt) * 1000);
    const rolloutTimers = [];
    const rolloutLog = [];
    if (rolloutVersions) {
      const at = (share, step) => rolloutTimers.push(setTimeout(async () => {
        const r = await step();
        rolloutLog.push({ at_s: Math.round(share * Number(args.duration) * 10) / 10, rollout: r.result.rollout });
      }, (Number(args.warmup) + share * Number(args.duration)) * 1000));
      at(0.2, () => rollout('start', { canary: '2', weight: '0.5' }));
      at(0.4, () => rollout('promote'));
      at(0.6, () => {
        writeVersionFolder(join(repo, 'online-model'), 3, rolloutVersions[1]);
        return rollout('start', { canary: '3', weight: '0.5' });
      });
      at(0.8, () => rollout('rollback'));
    }
    const load = JSON.parse(await clientOut.next());
    clearTimeout(reloadTimer);
    for (const t of rolloutTimers) clearTimeout(t);
    server.kill('SIGTERM');
    const stopped = JSON.parse(await serverOut.next());
    const serverExit = await new Promise((resolve) => server.on('exit', (code) => resolve(code)));
    const r = load;
    if (r.steps) {
      const sweep = {
        machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
        model: { rows, dim: Number(args.dim), hidden: Number(args.hidden), rti_columns: rtiColumns, max_batch_size: Number(args['max-batch']), max_queue_delay_us: Number(args['delay-us']), instances: Number(args.instances) },
        server_options: { ort_thread: args['ort-thread'], ort_intra_op_threads: Number(args['ort-threads']) },
        pool: r.pool,
        step_duration_s: Number(args.duration),
        p99_target_ms: r.p99_target_ms,
        steps: r.steps.map((x) => ({ ...x, achieved_qps: Math.round(x.achieved_qps * 10) / 10, latency_ms: round(x.latency_ms), mean_batch_rows: x.mean_batch_rows === undefined ? undefined : Math.round(x.mean_batch_rows * 100) / 100 })),
        max_qps_within_target: r.max_qps_within_target,
        saturation_qps: Math.round(r.saturation_qps),
        server_exit_code: serverExit,
      };
      if (args.chart) {
        const { sweepChartSvg } = await import(new URL('loadgen/sweep_chart.js', dist));
        writeFileSync(args.chart, sweepChartSvg(r));
      }
      process.stdout.write(`${JSON.stringify(sweep, null, 2)}\n`);
      return;
    }
    const report = {
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, loadavg_before_exit: loadavg().map((x) => Math.round(x * 100) / 100), node: process.version },
      model: { rows, dim: Number(args.dim), hidden: Number(args.hidden), rti_columns: rtiColumns, build_ms: Math.round(buildMs), max_batch_size: Number(args['max-batch']), max_queue_delay_us: Number(args['delay-us']), instances: Number(args.instances) },
      hot_reload_at_s: reloadAt,
      ...(rolloutVersions ? { rollout: { steps: rolloutLog, requests_by_version: stopped.versions } } : {}),
      server_options: { ort_thread: args['ort-thread'], ort_intra_op_threads: Number(args['ort-threads']) },
      offered_qps: r.offered_qps,
      achieved_qps: Math.round(r.achieved_qps * 10) / 10,
      duration_s: Math.round(r.durationS * 10) / 10,
      requests: r.sent,
      ok: r.ok,
      errors: r.errors,
      error_kinds: r.error_kinds,
      latency_ms: round(r.latency_ms),
      generator_send_lag_ms: round(r.send_lag_ms),
      pool: r.pool,
      server: r.server && {
        requests: r.server.requests,
        batches: r.server.batches,
        mean_batch_rows: Math.round(r.server.mean_batch_rows * 100) / 100,
        ms_per_request: round(r.server.phase_ms_per_request, 4),
        main_thread_busy: r.server.event_loop_utilization === undefined ? undefined : Math.round(r.server.event_loop_utilization * 1000) / 1000,
        event_loop_delay_ms: r.server.event_loop_delay_ms && round(r.server.event_loop_delay_ms),
        in_server_ms_bucket_upper_bound: r.server.request_ms,
      },
      cpu_ms_per_request: {
        server: Math.round((stopped.cpu_ms / (r.sent + Math.round(Number(args.warmup) * r.offered_qps))) * 1000) / 1000,
        client: Math.round((r.clientCpuMs / (r.sent + Math.round(Number(args.warmup) * r.offered_qps))) * 1000) / 1000,
      },
      server_stop: stopped.stopped,
      server_exit_code: serverExit,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function round(obj, digits = 3) {
  const f = 10 ** digits;
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, typeof v === 'number' ? Math.round(v * f) / f : v]));
}

/** Reads a stream line by line: `next()` resolves with the next complete line. */
function lines(stream) {
  let buf = '';
  const queue = [];
  const waiters = [];
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (waiters.length > 0) waiters.shift().resolve(line);
      else queue.push(line);
    }
  });
  stream.on('end', () => {
    for (const w of waiters.splice(0)) w.reject(new Error('the child process ended without output'));
  });
  return {
    next: () => (queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((resolve, reject) => waiters.push({ resolve, reject }))),
  };
}
