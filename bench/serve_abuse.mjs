/**
 * `gnnctl serve` under abuse, at full size (test/serve/abuse.e2e.test.ts asserts the same behaviour on
 * small floods). Prints one JSON object with three parts:
 *
 * - `flood`: ≥ 20,000 half-open connections (connected, half a request head, never finished) opened
 *   from helper processes against a server with the default --max-connections (derived from its
 *   `ulimit -n`) and a headers timeout longer than the run (so the cap, not the timeout, is tested), while a keep-alive client sends inference requests and probes open fresh connections
 *   to /v2/health/ready. Reports the well-behaved requests that failed (target 0), the server's open
 *   file descriptors and connections, the connections it dropped, and whether it logged EMFILE.
 * - `sigterm`: --trials runs of an open-loop client at --rate req/s, every other request over a
 *   keep-alive connection and the rest on a connection of its own, SIGTERM after 2 s. The client acts
 *   as a load balancer does: --reaction-ms (200) after the first sign of the drain (`Connection: close`
 *   on a keep-alive connection, or a refused connection) it stops sending. Counts every failed request
 *   (`failed`, target 0): dropped on a keep-alive connection, reset or refused on a new one; the new
 *   connections answered after the first sign (what the drain keeps open), and the time from the signal
 *   to the exit. `--client persist` keeps sending until a connection is refused instead: the server
 *   then serves for its whole --drain-delay and closes the listener under a stream of new connections.
 * - `stalled_shutdown`: --stalled connections with a request head and no body plus as many with half a
 *   head, then SIGTERM: the time to exit (target ≤ 5 s) with the default --shutdown-timeout of 30 s.
 *
 *   npm run build && node bench/serve_abuse.mjs [--flood 22000] [--rate 1000] [--trials 5] [--stalled 20]
 *       [--parts flood,sigterm,stalled] [--reaction-ms 200] [--client stop|persist]
 *
 * A benchmark, not a test: it asserts nothing. Timings on a shared machine are measured under load.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    port: { type: 'string' },
    count: { type: 'string' },
    flood: { type: 'string', default: '22000' },
    rate: { type: 'string', default: '1000' },
    trials: { type: 'string', default: '5' },
    stalled: { type: 'string', default: '20' },
    parts: { type: 'string', default: 'flood,sigterm,stalled' },
    'reaction-ms': { type: 'string', default: '200' },
    client: { type: 'string', default: 'stop' },
  },
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const MODEL = 'online-model';
const INFER = `/v2/models/${MODEL}/infer`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (args.role === 'flooder') await flooder(Number(args.port), Number(args.count));
else await main();

/** A helper process: opens `count` half-open connections, reports how many connected, holds them until killed. */
async function flooder(port, count) {
  let connected = 0;
  let closedByServer = 0;
  const sockets = [];
  setInterval(() => process.send?.({ connected, closedByServer }), 500);
  // Waves of 100: three helpers at once stay inside the listen backlog (511), so no SYN is dropped.
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - i) }, () => {
        const s = connect(port, '127.0.0.1');
        sockets.push(s);
        s.on('error', () => undefined);
        s.on('close', () => closedByServer++);
        return new Promise((resolve) => {
          s.once('connect', () => {
            connected++;
            s.write(`POST ${INFER} HTTP/1.1\r\nHost: x\r\n`);
            resolve();
          });
          s.once('close', resolve);
        });
      }),
    );
  }
  process.send?.({ connected, closedByServer, done: true });
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startServe(root, extra = []) {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--model-repository', root, '--port', String(port), '--poll-interval', '2', '--json', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (c) => (stderr += c));
  child.stdout.on('data', (c) => (stdout += c));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/v2/health/ready`)).status === 200) break;
    } catch {}
    if (i > 600) throw new Error(`serve did not start:\n${stderr}`);
    await sleep(100);
  }
  return { child, port, url, exited, out: () => ({ stdout, stderr }) };
}

function send(port, method, path, body, agent) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
      res.on('error', (e) => resolve({ error: e.code ?? e.message }));
    });
    req.on('error', (e) => resolve({ error: e.code ?? e.message, reused: req.reusedSocket }));
    req.end(body);
  });
}

async function metrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (prefix) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(prefix))
      .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    open_fds: read('process_open_fds'),
    max_fds: read('process_max_fds'),
    open_connections: read('gnnctl_http_connections '),
    dropped_limit: read('gnnctl_http_connections_dropped_total{reason="limit"}'),
    dropped_headers_timeout: read('gnnctl_http_connections_dropped_total{reason="headers_timeout"}'),
  };
}

async function main() {
  const { writeSyntheticRepository } = await import('../dist/loadgen/synthetic_model.js');
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-serve-abuse-'));
  try {
    writeSyntheticRepository(root, { version: 1 });
    const body = JSON.stringify(await sampleBody(root));
    const parts = new Set(args.parts.split(','));
    // the 1-minute load average at the start, so a reader can tell an idle run from one on a busy machine
    const out = { load_average_1m: Number(loadavg()[0].toFixed(2)) };
    if (parts.has('flood')) out.flood = await floodRun(root, body);
    if (parts.has('sigterm')) {
      out.sigterm = [];
      for (let t = 0; t < Number(args.trials); t++) out.sigterm.push(await sigtermRun(root, body));
    }
    if (parts.has('stalled')) out.stalled_shutdown = await stalledRun(root);
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** A valid request for the synthetic model, from its metadata (zeros, one RTI element). */
async function sampleBody(root) {
  const s = await startServe(root);
  try {
    const meta = await (await fetch(`${s.url}/v2/models/${MODEL}`)).json();
    const inputs = meta.inputs.map((t) => {
      const shape = t.shape.map((d) => (d < 0 ? 1 : d));
      const n = shape.reduce((a, b) => a * b, 1);
      const data = Array.from({ length: n }, () => (t.datatype === 'BYTES' ? 'c0000001' : t.datatype === 'INT64' ? 1_700_000_000_000_000_000 : 1.5));
      return { name: t.name, datatype: t.datatype, shape, data };
    });
    return { inputs };
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
}

async function floodRun(root, body) {
  // A headers timeout longer than the run: the flood is held, so the connection cap does the work.
  const s = await startServe(root, ['--headers-timeout', '600']);
  const total = Number(args.flood);
  const perHelper = 7500; // each helper process stays well inside its own open-file limit
  const helpers = [];
  const counts = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const client = { ok: 0, failed: 0, errors: {} };
  const probes = { ok: 0, failed: 0, errors: {} };
  const record = (tally, r) => {
    if (r.status === 200) tally.ok++;
    else {
      tally.failed++;
      const k = r.error ?? String(r.status);
      tally.errors[k] = (tally.errors[k] ?? 0) + 1;
    }
  };
  record(client, await send(s.port, 'POST', INFER, body, agent));
  let running = true;
  const clientLoop = (async () => {
    while (running) {
      record(client, await send(s.port, 'POST', INFER, body, agent));
      await sleep(10);
    }
  })();
  const probeLoop = (async () => {
    while (running) {
      record(probes, await send(s.port, 'GET', '/v2/health/ready'));
      await sleep(50);
    }
  })();
  const t0 = performance.now();
  for (let i = 0; i < total; i += perHelper) {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--role', 'flooder', '--port', String(s.port), '--count', String(Math.min(perHelper, total - i))], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const idx = helpers.length;
    helpers.push(child);
    counts.push({ connected: 0, closedByServer: 0, done: false });
    child.on('message', (m) => (counts[idx] = { ...counts[idx], ...m }));
  }
  // Until every helper has connected its share, then 5 s more of the flood at full size.
  while (counts.some((c) => !c.done) && performance.now() - t0 < 300_000) await sleep(200);
  const openedSeconds = (performance.now() - t0) / 1000;
  await sleep(5000);
  const during = await metrics(s.url);
  running = false;
  await Promise.all([clientLoop, probeLoop]);
  agent.destroy();
  for (const h of helpers) h.kill('SIGKILL');
  s.child.kill('SIGTERM');
  await s.exited;
  const { stderr } = s.out();
  return {
    half_open_connections_opened: counts.reduce((n, c) => n + c.connected, 0),
    seconds_to_open: Math.round(openedSeconds * 10) / 10,
    server_at_peak: during,
    established_client: client,
    probes,
    server_logged_emfile: /EMFILE/.test(stderr),
  };
}

async function sigtermRun(root, body) {
  const s = await startServe(root);
  const rate = Number(args.rate);
  const reactionMs = Number(args['reaction-ms']);
  const persist = args.client === 'persist';
  // No socket cap: a request counted as sent is on the wire at once, never queued in the agent to connect
  // after the client has stopped. Every other request on a connection of its own: what fills the kernel's
  // accept queue under load.
  const keepAlive = new Agent({ keepAlive: true });
  const fresh = new Agent({ keepAlive: false });
  const tally = { answered: 0, failed: 0, dropped_on_keep_alive: 0, failed_new_connection: 0, refused: 0, non_200: 0, new_connections_answered_after_first_sign: 0, errors: {} };
  let signalAt;
  let firstSign;
  let sentBeforeSignal = 0;
  let refusedSeen = false;
  const pending = [];
  const t0 = performance.now();
  for (let i = 0; ; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    // Always yield: a client behind schedule must still let its I/O run.
    await (wait > 1 ? sleep(wait) : new Promise((r) => setImmediate(r)));
    const now = performance.now();
    if (persist ? refusedSeen : firstSign !== undefined && now - firstSign > reactionMs) break;
    if (now - t0 > 15_000) break;
    if (signalAt === undefined && now - t0 >= 2000) {
      signalAt = now;
      sentBeforeSignal = i;
      s.child.kill('SIGTERM');
    }
    const onKeepAlive = i % 2 === 0;
    const afterSign = firstSign !== undefined;
    pending.push(
      send(s.port, 'POST', INFER, body, onKeepAlive ? keepAlive : fresh).then((r) => {
        if (r.status === 200) {
          tally.answered++;
          if (!onKeepAlive && afterSign) tally.new_connections_answered_after_first_sign++;
          // Connection: close on a keep-alive connection is the server's drain (a fresh one asks for it itself).
          if (onKeepAlive && r.connection === 'close') firstSign ??= performance.now();
          return;
        }
        tally.failed++;
        if (r.error === 'ECONNREFUSED') {
          tally.refused++;
          refusedSeen = true;
          firstSign ??= performance.now();
        } else if (r.error) {
          if (r.reused) tally.dropped_on_keep_alive++;
          else tally.failed_new_connection++;
          const k = `${r.error} on a ${r.reused ? 'reused' : 'new'} connection`;
          tally.errors[k] = (tally.errors[k] ?? 0) + 1;
        } else tally.non_200++;
      }),
    );
  }
  await Promise.all(pending);
  const code = await s.exited;
  const exitedAt = performance.now();
  keepAlive.destroy();
  fresh.destroy();
  const result = parseResult(s.out().stdout);
  const serverLog = s.out().stderr.split('\n').filter((l) => /shutdown: /.test(l)).map((l) => l.replace(/^\[[^\]]*\] /, ''));
  return { ...tally, ...(serverLog.length > 0 ? { server_log: serverLog } : {}), achieved_rate_before_signal: Math.round(sentBeforeSignal / 2), exit_code: code, forced_close: result.forced_close, seconds_signal_to_exit: Math.round(((exitedAt - signalAt) / 1000) * 100) / 100 };
}

async function stalledRun(root) {
  const s = await startServe(root);
  const n = Number(args.stalled);
  const sockets = [];
  for (let i = 0; i < n; i++) {
    for (const head of [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"inputs":`, `POST ${INFER} HTTP/1.1\r\nHost: x\r\n`]) {
      const sock = connect(s.port, '127.0.0.1');
      sock.on('error', () => undefined);
      await new Promise((r) => sock.once('connect', r));
      sock.write(head);
      sockets.push(sock);
    }
  }
  await sleep(200);
  const t0 = performance.now();
  s.child.kill('SIGTERM');
  const code = await s.exited;
  const seconds = (performance.now() - t0) / 1000;
  sockets.forEach((x) => x.destroy());
  const result = parseResult(s.out().stdout);
  return { stalled_connections: sockets.length, shutdown_timeout_seconds: 30, seconds_signal_to_exit: Math.round(seconds * 100) / 100, forced_close: result.forced_close, exit_code: code };
}

function parseResult(stdout) {
  try {
    return JSON.parse(stdout);
  } catch {
    return {};
  }
}
