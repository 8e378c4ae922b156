/**
 * `gnnctl serve`: serves a Triton model repository over KServe V2 HTTP until SIGTERM or SIGINT, then
 * shuts down gracefully and exits 0. The server itself is `serve/server.ts`; this file parses the
 * options, logs, and waits for the signal.
 */
import { UsageError } from '../../core/errors.js';
import { parseStoreUrl } from '../../artifacts/online_store.js';
import { readTokenFile } from '../../serve/auth.js';
import { readTlsFiles, startServer, type OrtThread, type RunningServer, type StopResult } from '../../serve/server.js';
import { info, isQuiet } from '../../core/log.js';
import { parseDuration } from '../../core/duration.js';
import type { CommandOutput } from '../run.js';

/** As commander passes them; checked here. */
export interface ServeCommandOptions {
  /** `--model-repository DIR` (required). */
  modelRepository?: unknown;
  /** `--port N` (default 8000; 0 picks a free port). */
  port?: unknown;
  /** `--grpc-port N`: also serve KServe V2 over gRPC (0 picks a free port). */
  grpcPort?: unknown;
  /** `--online-store URL`, `--online-store-prefix P`, `--online-store-lru N`, `--online-store-deadline T`. */
  onlineStore?: unknown;
  onlineStorePrefix?: unknown;
  onlineStoreLru?: unknown;
  onlineStoreDeadline?: unknown;
  /** `--host H` (default 127.0.0.1). */
  host?: unknown;
  /** `--poll-interval T`: seconds or a duration ("2", "500ms", "1 minute"); 0 turns hot reload off. Default 2 s. */
  pollInterval?: unknown;
  /** `--max-body-size N`: bytes, or with a unit ("4MB", "512KiB"). Default 4 MiB. */
  maxBodySize?: unknown;
  /** `--ort-thread worker|main` (default worker). */
  ortThread?: unknown;
  /** `--ort-threads N`: onnxruntime intra-op threads per session (default 1). */
  ortThreads?: unknown;
  /** `--shutdown-timeout T`: how long shutdown waits for in-flight requests (default 30 s). */
  shutdownTimeout?: unknown;
  /** `--drain-delay T`: how long shutdown keeps accepting new connections while they arrive (default 5 s). */
  drainDelay?: unknown;
  /** `--request-timeout T`: default deadline of an inference request (default 10 s; 0: none). */
  requestTimeout?: unknown;
  /** `--max-sequence-length N`: cap on variable input dimensions without their own (default 1024; 0: none). */
  maxSequenceLength?: unknown;
  /** `--max-connections N`: open connections at most (default: below the open-file limit). */
  maxConnections?: unknown;
  /** `--max-connections-per-client N`: per client address (default 0: no cap). */
  maxConnectionsPerClient?: unknown;
  /** `--headers-timeout T`: how long a request head may take to arrive (default 10 s). */
  headersTimeout?: unknown;
  /** `--idle-timeout T`: how long a keep-alive connection may stay idle (default 30 s). */
  idleTimeout?: unknown;
  /** `--auth-token-file FILE`: bearer tokens, one per line; every request must send one. */
  authTokenFile?: unknown;
  /** `--auth-open-health`: leave /v2/health/live and /v2/health/ready open (probes). */
  authOpenHealth?: unknown;
  /** `--auth-open-metrics`: leave /metrics open (scrapers without credentials). */
  authOpenMetrics?: unknown;
  /** `--tls-cert FILE` and `--tls-key FILE`: serve HTTPS. */
  tlsCert?: unknown;
  tlsKey?: unknown;
  json?: boolean;
  quiet?: boolean;
  /** For tests and embedding: stops the server like SIGTERM does. */
  signal?: AbortSignal;
  /** For tests and embedding: called once the server listens. */
  onListening?: (server: RunningServer) => void;
}

export interface ServeResult {
  url: string;
  /** With `--grpc-port`: `host:port` of the gRPC endpoint. */
  grpc_address?: string;
  models: { name: string; version?: string; state: string }[];
  stopped_by: string;
  forced_close: boolean;
  uptime_seconds: number;
  inference_requests: StopResult['inferRequests'];
}

export async function serveCommand(opts: ServeCommandOptions): Promise<CommandOutput<ServeResult>> {
  if (typeof opts.modelRepository !== 'string' || opts.modelRepository === '') {
    throw new UsageError('--model-repository is required', { hint: 'pass the folder `gnnctl export` writes (e.g. artifacts/model_repository)' });
  }
  const port = integer(opts.port, '--port', 8000, 0, 65535);
  const host = opts.host === undefined ? '127.0.0.1' : String(opts.host);
  const grpcPort = opts.grpcPort === undefined ? undefined : integer(opts.grpcPort, '--grpc-port', 8001, 0, 65535);
  const onlineStore =
    opts.onlineStore === undefined
      ? undefined
      : {
          url: parseStoreUrl(String(opts.onlineStore), '--online-store'),
          keyPrefix: opts.onlineStorePrefix === undefined ? undefined : String(opts.onlineStorePrefix),
          lruSize: integer(opts.onlineStoreLru, '--online-store-lru', 100_000, 0, 100_000_000),
          deadlineMs: seconds(opts.onlineStoreDeadline, '--online-store-deadline', 0.005) * 1000,
        };
  const pollIntervalMs = seconds(opts.pollInterval, '--poll-interval', 2) * 1000;
  const shutdownTimeoutMs = seconds(opts.shutdownTimeout, '--shutdown-timeout', 30) * 1000;
  const drainDelayMs = seconds(opts.drainDelay, '--drain-delay', 5) * 1000;
  const maxBodyBytes = bytes(opts.maxBodySize);
  const ortThread = (opts.ortThread ?? 'worker') as OrtThread;
  if (ortThread !== 'main' && ortThread !== 'worker') throw new UsageError('--ort-thread must be "main" or "worker"', { value: opts.ortThread });
  const intraOpThreads = integer(opts.ortThreads, '--ort-threads', 1, 1, 64);
  const requestTimeoutMs = seconds(opts.requestTimeout, '--request-timeout', 10) * 1000;
  const maxSequenceLength = integer(opts.maxSequenceLength, '--max-sequence-length', 1024, 0, 2 ** 31 - 1);
  const maxConnections = opts.maxConnections === undefined ? undefined : integer(opts.maxConnections, '--max-connections', 0, 1, 10_000_000);
  const maxConnectionsPerClient = integer(opts.maxConnectionsPerClient, '--max-connections-per-client', 0, 0, 10_000_000);
  const headersTimeoutMs = seconds(opts.headersTimeout, '--headers-timeout', 10) * 1000;
  const idleTimeoutMs = seconds(opts.idleTimeout, '--idle-timeout', 30) * 1000;
  if (headersTimeoutMs <= 0) throw new UsageError('--headers-timeout must be more than 0', { value: opts.headersTimeout, hint: 'e.g. 10 (seconds)' });
  for (const [flag, set] of [['--auth-open-health', opts.authOpenHealth], ['--auth-open-metrics', opts.authOpenMetrics]] as const) {
    if (set && opts.authTokenFile === undefined) throw new UsageError(`${flag} needs --auth-token-file`, { hint: 'without tokens every route is open already' });
  }
  const authTokenFile = opts.authTokenFile === undefined ? undefined : String(opts.authTokenFile);
  if (authTokenFile !== undefined) readTokenFile(authTokenFile); // a bad file: exit 2 before anything loads
  const tls = readTlsFiles(opts.tlsCert, opts.tlsKey);

  const log = (line: string, level: 'info' | 'warn') => {
    // Refusals and errors print even with --quiet/--json: an operator must see a refused export.
    if (level === 'warn' || !isQuiet()) process.stderr.write(`[${new Date().toISOString()}] ${line}\n`);
  };
  const server = await startServer({ modelRepository: opts.modelRepository, port, grpcPort, onlineStore, host, pollIntervalMs, maxBodyBytes, ortThread, intraOpThreads, shutdownTimeoutMs, drainDelayMs, requestTimeoutMs, maxSequenceLength, maxConnections, maxConnectionsPerClient, headersTimeoutMs, idleTimeoutMs, authTokenFile, authOpenHealth: Boolean(opts.authOpenHealth), authOpenMetrics: Boolean(opts.authOpenMetrics), tls, log });
  const models = server.manager.index();
  const grpcAddress = server.grpc ? `${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.grpc.port}` : undefined;
  info(`gnnctl serve: listening on ${server.url}${grpcAddress ? ` and gRPC ${grpcAddress}` : ''} (${models.filter((m) => m.state === 'READY').map((m) => `${m.name} v${m.version}`).join(', ')}; onnxruntime on the ${ortThread} thread; hot reload ${pollIntervalMs > 0 ? `every ${pollIntervalMs / 1000} s` : 'off'}; ${authTokenFile ? `bearer-token auth${opts.authOpenHealth ? ', health probes open' : ''}${opts.authOpenMetrics ? ', /metrics open' : ''}` : 'no auth'})`);

  const handlers: [NodeJS.Signals, () => void][] = [];
  const stoppedBy = await new Promise<string>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      const h = () => resolve(sig);
      handlers.push([sig, h]);
      process.once(sig, h);
    }
    if (opts.signal?.aborted) resolve('abort');
    opts.signal?.addEventListener('abort', () => resolve('abort'), { once: true });
    // Only now: whoever is told the server listens may signal it at once.
    opts.onListening?.(server);
  });
  for (const [sig, h] of handlers) process.off(sig, h);
  info(`gnnctl serve: ${stoppedBy} received; finishing in-flight requests (send SIGINT again to exit at once)`);
  const stop = await server.stop();
  const result: ServeResult = {
    url: server.url,
    ...(grpcAddress ? { grpc_address: grpcAddress } : {}),
    models,
    stopped_by: stoppedBy,
    forced_close: stop.forced,
    uptime_seconds: Math.round(stop.uptimeSeconds * 10) / 10,
    inference_requests: stop.inferRequests,
  };
  return {
    result,
    text: `gnnctl serve stopped (${stoppedBy}) after ${result.uptime_seconds} s: ${stop.inferRequests.success} inference requests answered, ${stop.inferRequests.failure} failed${stop.forced ? '; connections still open after the shutdown timeout were cut' : ''}`,
  };
}

function integer(v: unknown, flag: string, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be an integer in ${min}..${max}`, { value: v });
  return n;
}

/** Seconds from a number ("2", "0.5") or a duration ("500ms", "2s", "1 minute"). */
export function seconds(v: unknown, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  const text = String(v).trim();
  const ms = /^(\d+(?:\.\d+)?)\s*ms$/.exec(text);
  const s = ms ? Number(ms[1]) / 1000 : /^\d+(?:\.\d+)?$/.test(text) ? Number(text) : parseDuration(text);
  if (s === null || !(s >= 0)) throw new UsageError(`${flag} must be a number of seconds or a duration like "500ms" or "2s"`, { value: v });
  return s;
}

const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1e3, kib: 2 ** 10, k: 2 ** 10, mb: 1e6, mib: 2 ** 20, m: 2 ** 20, gb: 1e9, gib: 2 ** 30, g: 2 ** 30 };

function bytes(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(String(v));
  const unit = m ? BYTE_UNITS[(m[2] || 'b').toLowerCase()] : undefined;
  if (!m || unit === undefined || Number(m[1]) * unit < 1) throw new UsageError('--max-body-size must be a size like 4194304, "4MiB" or "8MB"', { value: v });
  return Math.floor(Number(m[1]) * unit);
}
