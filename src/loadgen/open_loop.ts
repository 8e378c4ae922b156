/**
 * Open-loop constant-rate load, the way serving latency should be measured: request `i` is due at
 * `start + i / rate` whatever happened to earlier ones, and its latency runs from that due time to the
 * end of its response. A server that falls behind therefore shows its queueing in the latencies instead
 * of slowing the generator down (the "coordinated omission" a closed loop suffers from).
 *
 * Requests go over keep-alive connections, at most `connections` of them; when all are busy, requests
 * wait for a free one, and that wait counts too. By default the connections are `raw_http.ts`'s lean
 * HTTP/1.1 client (requests serialized once, up front); `client: 'node'` uses Node's `http.Agent`
 * instead. The generator reports how late it sent (`sendLagMs`), so a run where the generator itself
 * could not keep up is visible as such.
 */
import { Agent, request } from 'node:http';
import { buildPost, ConnectionPool } from './raw_http.js';

export interface OpenLoopOptions {
  /** Server base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Request path, e.g. `/v2/models/online-model/infer`. */
  path: string;
  /** Pre-serialized bodies, sent round-robin (so consecutive requests differ when there are ≥ 2). */
  bodies: readonly Buffer[];
  /** Requests per second offered. */
  rate: number;
  /** Seconds of measured load. */
  durationS: number;
  /** Seconds of load before the measured window (sent, not counted). Default 0. */
  warmupS?: number;
  /** Most sockets open at once. Default 64. */
  connections?: number;
  /** A response slower than this is an error of kind `timeout`. Default 10 s. */
  timeoutMs?: number;
  /** Called right before the first request is sent. */
  onStart?: () => void;
  /** Called when the warm-up ends, right before the first measured request is sent. */
  onWindowStart?: () => void;
  /** HTTP client: `raw` (default, lean keep-alive HTTP/1.1) or `node` (`http.Agent`). */
  client?: 'raw' | 'node';
  /** Sends request `i` some other way than HTTP (the gRPC transport, `grpc_requests.ts`); `bodies` then only count requests. */
  transport?: Transport;
}

/** A non-HTTP way to send request `i`; `done` gets undefined on success, else an error kind. */
export interface Transport {
  send(i: number, done: (error: string | undefined) => void): void;
  close(): void;
}

export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export interface OpenLoopResult {
  offered_qps: number;
  /** Successful responses per second over the measured window. */
  achieved_qps: number;
  duration_s: number;
  sent: number;
  ok: number;
  errors: number;
  /** Errors by kind: `http_<status>`, `timeout`, or the socket error code. */
  error_kinds: Record<string, number>;
  /** Of successful requests, from the due time to the response's end, in ms. */
  latency_ms: LatencySummary;
  /** How late requests were handed to the HTTP client, in ms (generator health). */
  send_lag_ms: { p99: number; max: number };
  connections: number;
}

export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const { rate, bodies } = options;
  if (!(rate > 0)) throw new RangeError(`rate must be > 0 (got ${rate})`);
  if (bodies.length === 0) throw new RangeError('no request bodies');
  const warmup = options.warmupS ?? 0;
  const connections = options.connections ?? 64;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const target = new URL(options.url);
  const port = Number(target.port || 80);
  const transport = options.transport;
  const raw = !transport && (options.client ?? 'raw') === 'raw';
  const agent = raw || transport ? undefined : new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  const pool = raw ? new ConnectionPool(target.hostname, port, connections, timeoutMs) : undefined;
  const requests = raw ? bodies.map((b) => buildPost(target.hostname, port, options.path, b)) : [];
  const total = Math.round((warmup + options.durationS) * rate);
  const warmupCount = Math.round(warmup * rate);
  const measured = total - warmupCount;
  const latencies = new Float64Array(measured);
  const lags = new Float64Array(total);
  let ok = 0;
  let errors = 0;
  const errorKinds: Record<string, number> = {};
  let outstanding = 0;
  let next = 0;
  let lastDone = 0;
  const interval = 1000 / rate;
  const start = performance.now() + 20;
  let allSent: () => void;
  const sentAll = new Promise<void>((r) => (allSent = r));
  let drained: (() => void) | undefined;

  const finish = (i: number, due: number, error: string | undefined): void => {
    outstanding--;
    const now = performance.now();
    if (i >= warmupCount) {
      lastDone = Math.max(lastDone, now);
      if (error === undefined) latencies[ok++] = now - due;
      else {
        errors++;
        errorKinds[error] = (errorKinds[error] ?? 0) + 1;
      }
    }
    if (outstanding === 0 && drained) drained();
  };

  const send = (i: number, due: number): void => {
    outstanding++;
    if (transport) {
      transport.send(i, (error) => finish(i, due, error));
      return;
    }
    if (pool) {
      pool.send(requests[i % requests.length]!, (status, error) => finish(i, due, error ?? (status === 200 ? undefined : `http_${status}`)));
      return;
    }
    const body = bodies[i % bodies.length]!;
    let done = false;
    const end = (error?: string) => {
      if (done) return;
      done = true;
      finish(i, due, error);
    };
    const req = request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: options.path,
        headers: { 'Content-Type': 'application/json', 'Content-Length': body.length },
        timeout: timeoutMs,
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => end(res.statusCode === 200 ? undefined : `http_${res.statusCode}`));
        res.on('error', (e) => end((e as NodeJS.ErrnoException).code ?? 'response_error'));
      },
    );
    req.on('timeout', () => {
      req.destroy();
      end('timeout');
    });
    req.on('error', (e) => end((e as NodeJS.ErrnoException).code ?? 'request_error'));
    req.end(body);
  };

  const tick = (): void => {
    const now = performance.now();
    while (next < total) {
      const due = start + next * interval;
      if (due > now) break;
      if (next === warmupCount) options.onWindowStart?.();
      lags[next] = now - due;
      send(next, due);
      next++;
    }
    if (next >= total) {
      allSent();
      return;
    }
    setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
  };
  options.onStart?.();
  setTimeout(tick, Math.max(0, start - performance.now()));
  await sentAll;
  const windowStart = start + warmupCount * interval;
  if (outstanding > 0) {
    await Promise.race([new Promise<void>((r) => (drained = r)), new Promise<void>((r) => setTimeout(r, timeoutMs + 1000))]);
  }
  agent?.destroy();
  pool?.close();
  transport?.close();
  // Anything still outstanding after the timeout counts as timed out.
  if (outstanding > 0) {
    errors += outstanding;
    errorKinds.timeout = (errorKinds.timeout ?? 0) + outstanding;
  }
  const windowS = Math.max(options.durationS, (lastDone - windowStart) / 1000);
  return {
    offered_qps: rate,
    achieved_qps: ok / windowS,
    duration_s: windowS,
    sent: measured,
    ok,
    errors,
    error_kinds: errorKinds,
    latency_ms: summarize(latencies.subarray(0, ok)),
    send_lag_ms: { p99: percentile(lags.slice().sort(), 0.99), max: lags.reduce((a, b) => Math.max(a, b), 0) },
    connections,
  };
}

export function summarize(values: Float64Array): LatencySummary {
  const sorted = values.slice().sort();
  const n = sorted.length;
  return {
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    max: n > 0 ? sorted[n - 1]! : NaN,
    mean: n > 0 ? sorted.reduce((a, b) => a + b, 0) / n : NaN,
  };
}

/** Nearest-rank percentile of ascending values (NaN when empty). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
}
