/**
 * The KServe V2 gRPC protocol (`inference.GRPCInferenceService`, Triton's declarations in
 * `artifacts/triton/grpc_service.proto`) on `@grpc/grpc-js`, beside the HTTP server and over the same
 * model manager, batcher, decoder, auth, statistics and metrics:
 *
 * | call                         | answer                                                                 |
 * |------------------------------|------------------------------------------------------------------------|
 * | ServerLive / ServerReady     | `live` / `ready` (false while loading or shutting down)                |
 * | ServerMetadata               | name, version, extensions (as `GET /v2`)                               |
 * | ModelReady                   | `ready` (false for an unknown model or version, as Triton answers)      |
 * | ModelMetadata / ModelConfig  | as `GET /v2/models/{m}` and `/config`                                  |
 * | ModelInfer                   | inputs from `raw_input_contents` or typed `contents`; outputs as raw   |
 * | ModelStatistics              | the statistics extension, per loaded version                           |
 * | RepositoryIndex              | models and versions with their state (`ready: true` keeps READY ones)  |
 *
 * An inference request is turned into the JSON request shape and checked by the same `decode.ts`, so the
 * two protocols accept and refuse exactly the same tensors. Errors carry the HTTP server's message with
 * the gRPC status KServe and Triton use: INVALID_ARGUMENT (bad request), NOT_FOUND (unknown model or
 * version), UNAVAILABLE (not ready, queue full, shutting down), DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED
 * (message too large), UNAUTHENTICATED (missing or wrong `authorization: Bearer <token>` metadata).
 *
 * Connections get the HTTP port's protection (`connection_guard.ts`): the port is a plain TCP listener
 * whose sockets the guard admits — at most `--max-connections` (past it the oldest connection that has
 * made no call is dropped), `--max-connections-per-client`, a first call within `--headers-timeout` —
 * before they are handed to grpc-js (`createConnectionInjector`). grpc-js then bounds each connection:
 * {@link GRPC_MAX_CONCURRENT_STREAMS} calls at once, `--max-body-size` per message, keepalive pings that
 * close dead peers, GOAWAY after `--idle-timeout` without a call and after {@link GRPC_MAX_CONNECTION_AGE_MS}.
 */
import * as grpc from '@grpc/grpc-js';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { ConnectionGuard, type ConnectionLimits } from './connection_guard.js';
import { GRPC_SERVICE_NAME, grpcPackageDefinition } from '../artifacts/triton/grpc_service.js';
import { VERSION } from '../core/version.js';
import { encodeBinaryTensor } from './binary.js';
import { decodeModelInferRequest, encodeModelInferResponse, type InferParameter, type ModelInferRequest, type ModelInferResponse, type TensorContents } from './grpc_infer_codec.js';
import type { BearerAuth } from './auth.js';
import type { V2Datatype } from './datatypes.js';
import { decodeInferRequest } from './decode.js';
import { badRequest, HttpError } from './http_error.js';
import { EXTENSIONS, failureReason, withDeadline } from './http_server.js';
import type { ModelManager } from './model_manager.js';
import type { ModelVersion } from './model_version.js';
import type { Counter } from './metrics.js';
import type { ServerMetrics } from './server_metrics.js';
import type { StoreInputs } from './store_inputs.js';

export interface GrpcServerOptions {
  manager: ModelManager;
  metrics: ServerMetrics;
  isReady: () => boolean;
  /** Largest request message in bytes (`--max-body-size`). */
  maxMessageBytes: number;
  /** Default deadline of an inference request in ms (0: none); a client's gRPC deadline or `timeout` parameter overrides it. */
  requestTimeoutMs?: number;
  maxSequenceLength?: number;
  auth?: BearerAuth;
  /** With `auth`: leave ServerLive and ServerReady open (probes). */
  authOpenHealth?: boolean;
  tls?: { cert: Buffer; key: Buffer };
  log?: (line: string) => void;
  /** `--online-store`: fills store-backed embedding inputs after decoding (`store_inputs.ts`). */
  storeInputs?: StoreInputs;
  /** The HTTP port's connection limits, applied to the gRPC port's own connections; undefined: none. */
  limits?: ConnectionLimits & { idleTimeoutMs: number };
}

/**
 * Concurrent calls per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). 100, the minimum RFC 9113
 * recommends: enough for a client's pipelined calls, and one connection cannot queue thousands.
 */
export const GRPC_MAX_CONCURRENT_STREAMS = 100;
/** Keepalive: the server pings a connection silent this long and closes it if no answer comes in GRPC_KEEPALIVE_TIMEOUT_MS. */
export const GRPC_KEEPALIVE_TIME_MS = 60_000;
export const GRPC_KEEPALIVE_TIMEOUT_MS = 20_000;
/**
 * A connection is asked to go (GOAWAY; the client reconnects) after 30 minutes, so long-lived channels
 * spread over new replicas behind a load balancer; calls in flight get GRPC_MAX_CONNECTION_AGE_GRACE_MS.
 */
export const GRPC_MAX_CONNECTION_AGE_MS = 30 * 60_000;
export const GRPC_MAX_CONNECTION_AGE_GRACE_MS = 30_000;

export type { ModelInferRequest };

const HEALTH_CALLS = new Set(['ServerLive', 'ServerReady']);

/** The typed-contents field that carries each datatype's elements (Triton's `InferTensorContents`). */
const CONTENTS_FIELD: Record<V2Datatype, keyof TensorContents> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
};

export class InferenceGrpcServer {
  readonly server: grpc.Server;
  private readonly opts: GrpcServerOptions;
  private closing = false;
  private active = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly calls: Counter;
  private readonly callCounters = new Map<string, (by?: number) => void>();
  private tcp: TcpServer | undefined;
  private guard: ConnectionGuard | undefined;

  constructor(options: GrpcServerOptions) {
    this.opts = options;
    this.calls = options.metrics.registry.counter('gnnctl_grpc_requests_total', 'gRPC calls by method and status code (the HTTP routes count in gnnctl_http_requests_total).');
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxMessageBytes,
      'grpc.max_send_message_length': -1,
      'grpc.max_concurrent_streams': GRPC_MAX_CONCURRENT_STREAMS,
      'grpc.keepalive_time_ms': GRPC_KEEPALIVE_TIME_MS,
      'grpc.keepalive_timeout_ms': GRPC_KEEPALIVE_TIMEOUT_MS,
      'grpc.max_connection_age_ms': GRPC_MAX_CONNECTION_AGE_MS,
      'grpc.max_connection_age_grace_ms': GRPC_MAX_CONNECTION_AGE_GRACE_MS,
      ...(options.limits ? { 'grpc.max_connection_idle_ms': options.limits.idleTimeoutMs } : {}),
      // Channelz keeps per-call counters and a trace per server socket on every call; gnnctl exposes no
      // channelz service to read them, and it is a share of each call's CPU.
      'grpc.enable_channelz': 0,
    });
    const pkg = grpc.loadPackageDefinition(grpcPackageDefinition()) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } };
    const declared = pkg.inference.GRPCInferenceService.service;
    // The hot call's messages are read and written field by field (`grpc_infer_codec.ts`), not by reflection.
    const service: grpc.ServiceDefinition = {
      ...declared,
      ModelInfer: { ...declared.ModelInfer!, requestDeserialize: decodeModelInferRequest, responseSerialize: encodeModelInferResponse as (r: unknown) => Buffer },
    };
    this.server.addService(service, {
      ServerLive: this.unary('ServerLive', () => ({ live: true })),
      ServerReady: this.unary('ServerReady', () => ({ ready: this.ready() })),
      ServerMetadata: this.unary('ServerMetadata', () => ({ name: 'gnnctl', version: VERSION, extensions: EXTENSIONS })),
      ModelReady: this.unary('ModelReady', (req: { name: string; version: string }) => ({ ready: this.modelReady(req.name, req.version) })),
      ModelMetadata: this.unary('ModelMetadata', (req: { name: string; version: string }) => this.modelMetadata(req.name, req.version)),
      ModelConfig: this.unary('ModelConfig', (req: { name: string; version: string }) => {
        const { spec } = this.opts.manager.lookup(req.name, req.version);
        return { config: { ...spec.config, name: spec.name, platform: spec.platform, max_batch_size: spec.maxBatchSize } };
      }),
      ModelStatistics: this.unary('ModelStatistics', (req: { name: string; version: string }) => this.statistics(req.name, req.version)),
      RepositoryIndex: this.unary('RepositoryIndex', (req: { ready: boolean }) => ({
        models: this.opts.manager.index().filter((e) => !req.ready || e.state === 'READY'),
      })),
      ModelInfer: (call: grpc.ServerUnaryCall<ModelInferRequest, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        this.established(call);
        this.track(this.infer(call), 'ModelInfer', callback);
      },
    } satisfies grpc.UntypedServiceImplementation);
  }

  /** The full service name clients call (`/inference.GRPCInferenceService/<Call>`). */
  static readonly serviceName = GRPC_SERVICE_NAME;

  listen(port: number, host: string): Promise<number> {
    const credentials = this.opts.tls ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: this.opts.tls.cert, private_key: this.opts.tls.key }], false) : grpc.ServerCredentials.createInsecure();
    const { limits } = this.opts;
    if (!limits) {
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      return new Promise((resolve, reject) => {
        this.server.bindAsync(address, credentials, (err, bound) => (err ? reject(err) : resolve(bound)));
      });
    }
    const injector = this.server.createConnectionInjector(credentials);
    const tcp = createTcpServer();
    const registry = this.opts.metrics.registry;
    // The guard's 'connection' listener runs first and destroys the sockets it drops.
    this.guard = new ConnectionGuard(tcp, {
      ...limits,
      openGauge: registry.gauge('gnnctl_grpc_connections', 'Open gRPC client connections.'),
      dropped: registry.counter('gnnctl_grpc_connections_dropped_total', 'gRPC connections the server closed before their first call, by reason: limit (--max-connections reached; the oldest connection without a call goes), per_client, headers_timeout (no call within --headers-timeout), shutdown.'),
      log: (line) => this.opts.log?.(`gRPC: ${line}`),
    });
    tcp.on('connection', (socket) => {
      if (!socket.destroyed) injector.injectConnection(socket);
    });
    this.tcp = tcp;
    return new Promise((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(port, host, () => {
        tcp.off('error', reject);
        resolve((tcp.address() as AddressInfo).port);
      });
    });
  }

  /** A call's connection has made a request: the guard keeps it through a flood (`getPeer()` is "address:port"). */
  private established(call: { getPeer(): string }): void {
    if (!this.guard) return;
    const peer = call.getPeer();
    const at = peer.lastIndexOf(':');
    if (at > 0) this.guard.requestFrom(peer.slice(0, at).replace(/^\[|\]$/g, ''), Number(peer.slice(at + 1)));
  }

  /**
   * Graceful close: refuse new calls, let the in-flight ones answer, then shut the transport down; after
   * `timeoutMs` cut what is left.
   */
  async close(timeoutMs: number): Promise<{ forced: boolean }> {
    this.closing = true;
    // No new connections; the open ones finish their calls below.
    this.tcp?.close();
    const drained = this.active === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const r = await Promise.race([drained.then(() => 'drained' as const), timedOut]);
    const shut = new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    const r2 = await Promise.race([shut.then(() => 'shut' as const), timedOut]);
    if (r === 'timeout' || r2 === 'timeout') {
      this.server.forceShutdown();
      this.guard?.destroyAll();
    }
    this.guard?.dispose();
    clearTimeout(timer);
    return { forced: r === 'timeout' || r2 === 'timeout' };
  }

  private count(method: string, code: string): void {
    const key = `${method}\u0001${code}`;
    let c = this.callCounters.get(key);
    if (!c) this.callCounters.set(key, (c = this.calls.child({ method, code })));
    c();
  }

  private ready(): boolean {
    return this.opts.isReady() && !this.closing;
  }

  /** A unary handler: auth, the answer (sync), errors mapped to gRPC statuses, and the request counted. */
  private unary<Req>(name: string, answer: (req: Req) => unknown): grpc.handleUnaryCall<Req, unknown> {
    return (call, callback) => {
      this.established(call);
      try {
        this.authorize(call.metadata, name);
        const out = answer(call.request);
        this.count(name, 'OK');
        callback(null, out);
      } catch (e) {
        this.fail(name, e, callback);
      }
    };
  }

  private authorize(metadata: grpc.Metadata, call: string): void {
    if (!this.opts.auth || (this.opts.authOpenHealth === true && HEALTH_CALLS.has(call))) return;
    const value = metadata.get('authorization')[0];
    this.opts.auth.check(typeof value === 'string' ? value : value?.toString('utf8'));
  }

  private fail(call: string, e: unknown, callback: grpc.sendUnaryData<unknown>): void {
    const code = grpcStatus(e);
    if (!(e instanceof HttpError)) this.opts.log?.(`gRPC ${call}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    this.count(call, grpc.status[code]);
    const message = e instanceof HttpError ? e.message : `internal error: ${e instanceof Error ? e.message : String(e)}`;
    callback({ code, details: message });
  }

  private track(run: Promise<unknown>, call: string, callback: grpc.sendUnaryData<unknown>): void {
    this.active++;
    run
      .then(
        (out) => {
          this.count(call, 'OK');
          callback(null, out);
        },
        (e: unknown) => this.fail(call, e, callback),
      )
      .finally(() => {
        this.active--;
        if (this.active === 0) for (const w of this.idleWaiters.splice(0)) w();
      });
  }

  private modelReady(name: string, version: string): boolean {
    try {
      const { version: v } = this.opts.manager.lookup(name, version);
      return v?.state === 'ready';
    } catch {
      return false;
    }
  }

  private modelMetadata(name: string, version: string): unknown {
    const { spec, versions, version: v } = this.opts.manager.lookup(name, version);
    const listed = version !== '' ? [v!] : versions;
    const tensor = (t: { name: string; datatype: string; shape: readonly number[] }) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(String) });
    return { name: spec.name, versions: listed.map((x) => String(x.version)), platform: spec.platform, inputs: spec.inputs.map(tensor), outputs: spec.outputs.map(tensor) };
  }

  private statistics(name: string, version: string): unknown {
    const { manager, metrics } = this.opts;
    const models = name === '' ? manager.readyModels().sort() : [name];
    const model_stats = models.flatMap((m) => {
      const { versions, version: v } = manager.lookup(m, version);
      return (version !== '' ? [v!] : versions).map((x) => metrics.stats.of(m, String(x.version)).toJson());
    });
    return { model_stats };
  }

  private async infer(call: grpc.ServerUnaryCall<ModelInferRequest, unknown>): Promise<ModelInferResponse> {
    const t0 = performance.now();
    const { manager, metrics } = this.opts;
    const req = call.request;
    const model = req.model_name;
    const version = req.model_version === '' ? undefined : req.model_version;
    metrics.inflight.inc();
    let mv: ModelVersion | undefined;
    let labels = { model, version: version ?? '' };
    try {
      this.authorize(call.metadata, 'ModelInfer');
      if (this.closing) throw new HttpError(503, 'the server is shutting down');
      manager.check(model, version);
      mv = manager.acquire(model, version);
      labels = { model, version: String(mv.version) };
      const { body, binary } = toJsonRequest(req);
      const request = decodeInferRequest(body, mv.spec, { sharedDims: mv.sharedDims, binary, maxSequenceLength: this.opts.maxSequenceLength });
      const t1 = performance.now();
      metrics.phase('decode', (t1 - t0) / 1000);
      if (this.opts.storeInputs) await this.opts.storeInputs.fill(mv.spec, request);
      // The tightest of the client's gRPC deadline, Triton's `timeout` parameter and the server default.
      const clientDeadline = call.getDeadline();
      const clientMs = clientDeadline instanceof Date ? clientDeadline.getTime() - Date.now() : Number.isFinite(clientDeadline) ? Number(clientDeadline) - Date.now() : Infinity;
      const paramMs = request.timeoutUs !== undefined && request.timeoutUs > 0 ? request.timeoutUs / 1000 : request.timeoutUs === 0 ? Infinity : (this.opts.requestTimeoutMs || Infinity);
      const timeoutMs = Math.min(clientMs, paramMs);
      const outputs = Number.isFinite(timeoutMs) ? await withDeadline(mv, request, t0 + timeoutMs, Math.max(0, Math.round(timeoutMs)), request.timeoutUs !== undefined && paramMs <= clientMs) : await mv.infer(request);
      const t2 = performance.now();
      const out: ModelInferResponse['outputs'] = [];
      const raw: Uint8Array[] = [];
      for (const [name, t] of outputs) {
        out.push({ name, datatype: t.datatype, shape: t.shape });
        raw.push(encodeBinaryTensor(t));
      }
      const response: ModelInferResponse = { model_name: mv.name, model_version: String(mv.version), id: request.id ?? '', outputs: out, raw_output_contents: raw };
      const t3 = performance.now();
      metrics.phase('respond', (t3 - t2) / 1000);
      metrics.inference(labels.model, labels.version, 'success');
      mv.observeDuration((t3 - t0) / 1000);
      metrics.stats.of(labels.model, labels.version).succeeded((t3 - t0) / 1000, request.batch);
      return response;
    } catch (e) {
      metrics.inference(labels.model, labels.version, 'failure');
      if (mv) metrics.stats.of(labels.model, labels.version).failed((performance.now() - t0) / 1000, failureReason(e));
      throw e;
    } finally {
      mv?.release();
      metrics.inflight.dec();
    }
  }
}

/**
 * A gRPC `ModelInferRequest` as the JSON request body `decode.ts` checks: typed contents become `data`,
 * raw contents become binary tensor data (`binary_data_size` per input, bytes concatenated in input
 * order, exactly the HTTP binary extension's layout), parameters become plain values.
 */
export function toJsonRequest(req: ModelInferRequest): { body: Record<string, unknown>; binary?: Uint8Array } {
  const raw = req.raw_input_contents;
  if (raw.length > 0 && raw.length !== req.inputs.length) {
    throw badRequest(`raw_input_contents has ${raw.length} entries but the request has ${req.inputs.length} inputs; send one per input, in the order of "inputs"`);
  }
  const inputs = req.inputs.map((t, i) => {
    const shape = t.shape.map(Number);
    const base = { name: t.name, datatype: t.datatype, shape };
    const hasContents = t.contents !== null && Object.values(t.contents).some((v) => (v as unknown[]).length > 0);
    if (raw.length > 0) {
      if (hasContents) throw badRequest(`inference input "${t.name}" has both contents and raw_input_contents; send its elements one way only`);
      return { ...base, parameters: { binary_data_size: raw[i]!.length } };
    }
    const field = CONTENTS_FIELD[t.datatype as V2Datatype];
    // An unknown datatype: decode.ts names it against the model's; no contents field fits it.
    if (!field || !t.contents) return { ...base, data: [] };
    const values = t.contents[field] as unknown[];
    for (const [other, v] of Object.entries(t.contents)) {
      if (other !== field && (v as unknown[]).length > 0) {
        throw badRequest(`inference input "${t.name}" (${t.datatype}) carries its elements in contents.${other}; ${t.datatype} elements go in contents.${field}`);
      }
    }
    const data = field === 'bytes_contents' ? (values as Buffer[]).map((b) => b.toString('utf8')) : values;
    return { ...base, data };
  });
  const body: Record<string, unknown> = { inputs, parameters: plainParameters(req.parameters) };
  if (req.id !== '') body.id = req.id;
  if (req.outputs.length > 0) body.outputs = req.outputs.map((o) => ({ name: o.name }));
  return raw.length > 0 ? { body, binary: raw.length === 1 ? raw[0]! : Buffer.concat(raw) } : { body };
}

function plainParameters(params: Record<string, InferParameter>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(params)) {
    if (p.parameter_choice === 'bool_param') out[k] = p.bool_param;
    else if (p.parameter_choice === 'int64_param') out[k] = Number(p.int64_param);
    else if (p.parameter_choice === 'string_param') out[k] = p.string_param;
  }
  // Raw output contents are the only form gnnctl answers with; the HTTP-only switch is dropped.
  delete out.binary_data_output;
  return out;
}

/** The gRPC status of an error, as Triton maps its error codes. */
export function grpcStatus(e: unknown): grpc.status {
  if (!(e instanceof HttpError)) return grpc.status.INTERNAL;
  switch (e.status) {
    case 400:
      return grpc.status.INVALID_ARGUMENT;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.NOT_FOUND;
    case 413:
      return grpc.status.RESOURCE_EXHAUSTED;
    case 503:
      return grpc.status.UNAVAILABLE;
    case 504:
      return grpc.status.DEADLINE_EXCEEDED;
    default:
      return e.status >= 500 ? grpc.status.INTERNAL : grpc.status.INVALID_ARGUMENT;
  }
}
