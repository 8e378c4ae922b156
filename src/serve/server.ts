/**
 * `gnnctl serve` as a library: load a model repository, listen, hot-reload, shut down gracefully.
 *
 * ```
 * ModelManager ── scans the repository, loads versions (SessionHost), swaps version tables, retires old ones
 *      │
 * InferenceHttpServer ── KServe V2 routes → parse → decode → ModelVersion.infer → DynamicBatcher → run
 *      │
 * ServerMetrics ── /metrics
 * ```
 *
 * `startServer` resolves once every model that can load has loaded and the port listens; `stop()` stops
 * accepting, answers everything in flight (queued batches included), releases the sessions and the
 * worker thread, and resolves; nothing is left holding the event loop.
 */
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { resolve as resolvePath } from 'node:path';
import { ArtifactError, UsageError } from '../core/errors.js';
import { BearerAuth } from './auth.js';
import { defaultMaxConnections, fdHeadroom, openFileLimit } from './fd_limit.js';
import { DEFAULT_KEY_PREFIX } from '../artifacts/online_store.js';
import { OnlineEmbeddingStore } from '../online_store/embedding_store.js';
import { InferenceGrpcServer } from './grpc_server.js';
import { InferenceHttpServer } from './http_server.js';
import { ModelManager, type IndexEntry } from './model_manager.js';
import { ServerMetrics } from './server_metrics.js';
import { InlineSessionHost, type SessionHost } from './session_host.js';
import { storeBindings, StoreInputs } from './store_inputs.js';
import { WorkerSessionHost } from './worker_host.js';

/** Where onnxruntime runs: on the main thread, or in a worker thread (see `session_host.ts`). */
export type OrtThread = 'main' | 'worker';

export interface ServeOptions {
  /** The Triton model repository folder. */
  modelRepository: string;
  /** Default 8000; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Also serve KServe V2 over gRPC on this port (`grpc_server.ts`); 0 picks a free port; undefined: HTTP only. */
  grpcPort?: number;
  /**
   * Fill store-backed embedding inputs from Redis (`store_inputs.ts`): the URL, key prefix, LRU entries
   * and per-request deadline in ms.
   */
  onlineStore?: { url: string; keyPrefix?: string; lruSize?: number; deadlineMs?: number; pollMs?: number };
  /** Milliseconds between repository scans for new versions; 0 disables hot reload. Default 2000. */
  pollIntervalMs?: number;
  /** Largest request body in bytes. Default 4 MiB. */
  maxBodyBytes?: number;
  /** Default `worker`: keeps the main thread for HTTP and JSON, and model loads off it. */
  ortThread?: OrtThread;
  /** onnxruntime intra-op threads per session. Default 1. */
  intraOpThreads?: number;
  /** How long `stop()` waits for in-flight requests before cutting connections. Default 30 s. */
  shutdownTimeoutMs?: number;
  /**
   * How long `stop()` keeps accepting new connections at most, while they keep arriving, answering them
   * with `Connection: close` (`connection_guard.ts`); 0 closes the listener at once. Default 5 s.
   */
  drainDelayMs?: number;
  /**
   * Deadline of an inference request unless it sets Triton's `timeout` parameter; 0 disables.
   * Default 10 s: far above any healthy answer, and a bound on what a stuck batch can hold.
   */
  requestTimeoutMs?: number;
  /**
   * Cap on every variable input dimension (RTI sequence length) of inputs without their own
   * `max_sequence_length:<input>` parameter. Default 1024: 32× the bundled configs' 32, and a bound on what
   * one request can make the server decode and pad. 0 disables.
   */
  maxSequenceLength?: number;
  /** Bearer tokens every request must present (`Authorization: Bearer <token>`); undefined: no auth. */
  authTokens?: readonly string[];
  /** Or a file of tokens, one per line, re-read when it changes (`auth.ts`). */
  authTokenFile?: string;
  /** With `authTokens`: leave `/v2/health/live` and `/v2/health/ready` open (Kubernetes probes). */
  authOpenHealth?: boolean;
  /** With `authTokens`: leave `/metrics` open (scrapers discovered without credentials). */
  authOpenMetrics?: boolean;
  /**
   * Open connections at most (`connection_guard.ts`): beyond it the oldest connection that has not sent a
   * request is dropped. Default `defaultMaxConnections()`: below the process's open-file limit.
   */
  maxConnections?: number;
  /** Open connections per client address at most; default 0 (none: clients behind a proxy share one address). */
  maxConnectionsPerClient?: number;
  /** How long a new connection (or a request head) may take to arrive. Default 10 s. */
  headersTimeoutMs?: number;
  /** How long a keep-alive connection may stay idle between requests. Default 30 s. */
  idleTimeoutMs?: number;
  /** PEM certificate (chain) and private key: serve HTTPS. See `readTlsFiles`. */
  tls?: { cert: Buffer; key: Buffer };
  /** Event lines: loads at `info`; refusals and errors at `warn`. Default: none. */
  log?: (line: string, level: 'info' | 'warn') => void;
}

export interface StopResult {
  /** Whether connections had to be cut after the shutdown timeout. */
  forced: boolean;
  uptimeSeconds: number;
  inferRequests: { success: number; failure: number };
}

export interface RunningServer {
  /** `http://host:port` (`https://` with TLS). */
  url: string;
  host: string;
  port: number;
  manager: ModelManager;
  metrics: ServerMetrics;
  http: InferenceHttpServer;
  /** The gRPC server and its port, with `grpcPort`. */
  grpc?: { server: InferenceGrpcServer; port: number };
  /** Graceful shutdown (idempotent). */
  stop(): Promise<StopResult>;
}

export const DEFAULT_MAX_BODY_BYTES = 4 * 2 ** 20;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_SEQUENCE_LENGTH = 1024;
/** Generous for any client on a working link, and it bounds how long a slowloris connection holds a slot. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** Above the 5–15 s idle timeouts of common client pools, so the client, not the server, closes idle connections. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/**
 * Long enough for a load balancer or kube-proxy to stop routing new connections here after the signal
 * (endpoint removal takes about a second in a small cluster), short enough for a rolling update; the
 * listener closes sooner once connections stop arriving.
 */
export const DEFAULT_DRAIN_DELAY_MS = 5_000;

/**
 * Reads `--tls-cert` and `--tls-key` and checks that they make a TLS context (a certificate and the
 * private key that matches it), so a bad pair fails at start with the flags named, not at the first
 * handshake.
 */
export function readTlsFiles(certPath: unknown, keyPath: unknown): { cert: Buffer; key: Buffer } | undefined {
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (typeof certPath !== 'string' || typeof keyPath !== 'string' || certPath === '' || keyPath === '') {
    throw new UsageError('--tls-cert and --tls-key go together', { hint: 'pass both: the PEM certificate (chain) and its private key' });
  }
  const read = (path: string, flag: string) => {
    try {
      return readFileSync(path);
    } catch (e) {
      throw new UsageError(`cannot read ${flag}: ${(e as Error).message}`, { value: path });
    }
  };
  const cert = read(certPath, '--tls-cert');
  const key = read(keyPath, '--tls-key');
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    throw new UsageError(`--tls-cert and --tls-key do not make a TLS context: ${(e as Error).message}`, {
      value: `${certPath}, ${keyPath}`,
      hint: 'pass a PEM certificate and the PEM private key that matches it',
    });
  }
  return { cert, key };
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const root = resolvePath(options.modelRepository);
  const st = await stat(root).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new ArtifactError('the model repository is not a folder', { value: options.modelRepository, hint: 'pass the folder `gnnctl export` wrote (artifacts/model_repository)' });
  }
  const port = options.port ?? 8000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be an integer in 0..65535', { value: options.port });
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => undefined);
  if (options.maxConnections !== undefined && options.maxConnections > openFileLimit() - fdHeadroom()) {
    log(`--max-connections ${options.maxConnections} leaves less than ${fdHeadroom()} of the ${openFileLimit()} file descriptors (ulimit -n) for model files and the repository scan; a flood may fail them with EMFILE`, 'warn');
  }
  const started = performance.now();

  // Before any thread or session exists: a bad token file fails without anything to clean up.
  const auth = options.authTokenFile !== undefined ? BearerAuth.fromFile(options.authTokenFile, log) : options.authTokens ? new BearerAuth(options.authTokens) : undefined;
  const sessionHost: SessionHost = options.ortThread === 'main' ? new InlineSessionHost() : new WorkerSessionHost();
  const metrics = new ServerMetrics();
  const manager = new ModelManager({
    root,
    host: sessionHost,
    metrics,
    sessionOptions: { intraOpThreads: options.intraOpThreads ?? 1 },
    pollIntervalMs: options.pollIntervalMs ?? 2000,
    log,
  });
  metrics.pendingSource = () => manager.pending();
  let loaded = false;
  const store = options.onlineStore
    ? new OnlineEmbeddingStore({ url: options.onlineStore.url, keyPrefix: options.onlineStore.keyPrefix ?? DEFAULT_KEY_PREFIX, lruSize: options.onlineStore.lruSize, deadlineMs: options.onlineStore.deadlineMs, pollMs: options.onlineStore.pollMs, log })
    : undefined;
  const storeInputs = store ? new StoreInputs(store, metrics.registry) : undefined;
  const http = new InferenceHttpServer({
    manager,
    metrics,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    maxSequenceLength: options.maxSequenceLength === 0 ? undefined : (options.maxSequenceLength ?? DEFAULT_MAX_SEQUENCE_LENGTH),
    auth,
    authOpenHealth: options.authOpenHealth,
    authOpenMetrics: options.authOpenMetrics,
    tls: options.tls,
    connections: {
      maxConnections: options.maxConnections ?? defaultMaxConnections(),
      maxConnectionsPerClient: options.maxConnectionsPerClient ?? 0,
      headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    },
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    isReady: () => loaded && manager.readyModels().length > 0,
    log: (line) => log(line, 'warn'),
    storeInputs,
  });
  const grpcServer =
    options.grpcPort === undefined
      ? undefined
      : new InferenceGrpcServer({
          manager,
          metrics,
          maxMessageBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
          requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
          maxSequenceLength: options.maxSequenceLength === 0 ? undefined : (options.maxSequenceLength ?? DEFAULT_MAX_SEQUENCE_LENGTH),
          auth,
          authOpenHealth: options.authOpenHealth,
          tls: options.tls,
          isReady: () => loaded && manager.readyModels().length > 0,
          log: (line) => log(line, 'warn'),
          storeInputs,
          limits: {
            maxConnections: options.maxConnections ?? defaultMaxConnections(),
            maxConnectionsPerClient: options.maxConnectionsPerClient ?? 0,
            headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
            idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
          },
        });
  if (options.grpcPort !== undefined && (!Number.isInteger(options.grpcPort) || options.grpcPort < 0 || options.grpcPort > 65535)) {
    throw new UsageError('--grpc-port must be an integer in 0..65535', { value: options.grpcPort });
  }
  let address;
  let grpcPort: number | undefined;
  try {
    await manager.start();
    if (manager.readyModels().length === 0) {
      const reasons = manager.index().filter((e: IndexEntry) => e.reason);
      throw new ArtifactError(`no model in ${root} could be loaded`, {
        hint: reasons.length > 0 ? reasons.map((r) => `${r.name}${r.version ? ` v${r.version}` : ''}: ${r.reason}`).join('\n  ') : 'each model needs <name>/config.pbtxt and <name>/<version>/model.onnx',
      });
    }
    if (store) await store.start([...new Set(manager.readyModels().flatMap((m) => storeBindings(manager.lookup(m).spec).map((b) => b.table)))]);
    loaded = true;
    address = await http.listen(port, host).catch((e: unknown) => {
      throw listenError(e, '--port', host, port);
    });
    if (grpcServer) {
      grpcPort = await grpcServer.listen(options.grpcPort!, host).catch((e: unknown) => {
        throw listenError(e, '--grpc-port', host, options.grpcPort!);
      });
    }
  } catch (e) {
    await http.close(0).catch(() => undefined);
    grpcServer?.server.forceShutdown();
    await store?.close();
    await manager.stop();
    await sessionHost.close();
    metrics.close();
    throw e;
  }
  const url = `${options.tls ? 'https' : 'http'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  let stopping: Promise<StopResult> | undefined;
  const stop = (): Promise<StopResult> =>
    (stopping ??= (async () => {
      manager.flushQueues();
      const timeout = options.shutdownTimeoutMs ?? 30_000;
      const [{ forced }, grpcClosed] = await Promise.all([http.close(timeout, options.drainDelayMs ?? DEFAULT_DRAIN_DELAY_MS), grpcServer?.close(timeout)]);
      await store?.close();
      await manager.stop();
      await sessionHost.close();
      metrics.close();
      const count = (outcome: string) =>
        [...metrics.inferRequests.series.values()].filter((s) => s.labels.outcome === outcome).reduce((n, s) => n + s.value, 0);
      return { forced: forced || grpcClosed?.forced === true, uptimeSeconds: (performance.now() - started) / 1000, inferRequests: { success: count('success'), failure: count('failure') } };
    })());

  return { url, host: address.address, port: address.port, manager, metrics, http, ...(grpcServer ? { grpc: { server: grpcServer, port: grpcPort! } } : {}), stop };
}

/**
 * A port that cannot be bound is the invocation's problem (exit 2 naming the flag), not a bug: EADDRINUSE
 * (another process listens there) and EACCES (a privileged port without the right) are the usual causes.
 */
function listenError(e: unknown, flag: string, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException).code ?? (/EADDRINUSE|address already in use/i.test(String((e as Error).message)) ? 'EADDRINUSE' : undefined);
  if (code === 'EADDRINUSE') {
    return new UsageError(`${host}:${port} is already in use by another process`, { where: flag, value: port, hint: `stop the other server or choose a free port with ${flag} (0 picks one)` });
  }
  if (code === 'EACCES') {
    return new UsageError(`not allowed to listen on ${host}:${port}`, { where: flag, value: port, hint: `use a port above 1023 with ${flag}, or grant the process CAP_NET_BIND_SERVICE` });
  }
  return e;
}
