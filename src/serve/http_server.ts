/**
 * The KServe V2 HTTP/REST protocol as Triton serves it, on Node's `http` module:
 *
 * | route                                                   | method | answer                                    |
 * |---------------------------------------------------------|--------|-------------------------------------------|
 * | `/v2/health/live`, `/v2/health/ready`                   | GET    | 200, or 400 when not ready (empty body)   |
 * | `/v2`                                                   | GET    | server metadata                           |
 * | `/v2/models/{m}[/versions/{v}]`                         | GET    | model metadata                            |
 * | `/v2/models/{m}[/versions/{v}]/ready`                   | GET    | 200, or 400 with the reason               |
 * | `/v2/models/{m}[/versions/{v}]/config`                  | GET    | the model configuration as JSON           |
 * | `/v2/models/{m}[/versions/{v}]/infer`                   | POST   | inference                                 |
 * | `/v2/models[/{m}[/versions/{v}]]/stats`                 | GET    | statistics extension (`model_stats.ts`)   |
 * | `/v2/repository/index`                                  | POST   | models and versions with their state      |
 * | `/metrics`                                              | GET    | Prometheus text format 0.0.4              |
 *
 * Errors are `{"error": "..."}` with 400 (bad request), 404 (unknown model, version or route), 405 (wrong
 * method, with `Allow`), 413 (body over the limit), 415 (unknown content encoding), 503 (not ready, queue
 * full or shutting down), 504 (the request's deadline passed: Triton's `timeout` parameter or
 * `--request-timeout`). Request bodies may be gzip or deflate compressed, as Triton accepts. Inference requests
 * and responses may carry binary tensor data after the JSON (`binary.ts`, with `Inference-Header-Content-Length`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';
import { VERSION } from '../core/version.js';
import { HEADER_LENGTH_HEADER, splitBody } from './binary.js';
import type { BearerAuth } from './auth.js';
import { ConnectionGuard, type ConnectionLimits } from './connection_guard.js';
import type { HostTensor } from './datatypes.js';
import { decodeInferRequest, decodeRawBinaryRequest, type InferRequest } from './decode.js';
import { encodeInferResponse, type EncodedResponse } from './encode.js';
import { HttpError } from './http_error.js';
import { parseJsonBody } from './json_body.js';
import type { ModelManager } from './model_manager.js';
import type { FailureReason } from './model_stats.js';
import type { ModelVersion } from './model_version.js';
import type { ServerMetrics } from './server_metrics.js';
import type { StoreInputs } from './store_inputs.js';

export interface HttpServerOptions {
  manager: ModelManager;
  metrics: ServerMetrics;
  /** Largest accepted request body in bytes (after decompression too). */
  maxBodyBytes: number;
  /** Whether the server is ready (models loaded, not shutting down). */
  isReady: () => boolean;
  /**
   * Default deadline of an inference request in milliseconds, from its request head to its answer; a
   * request's own `parameters.timeout` (µs, Triton's) overrides it. 0: none.
   */
  requestTimeoutMs?: number;
  /** Cap on variable input dimensions without their own `max_sequence_length:<input>`; undefined: none. */
  maxSequenceLength?: number;
  /** Bearer-token authentication of every route (`auth.ts`); undefined: open. */
  auth?: BearerAuth;
  /** With `auth`: leave `/v2/health/live` and `/v2/health/ready` open for probes that cannot send a token. */
  authOpenHealth?: boolean;
  /** With `auth`: leave `/metrics` open for scrapers discovered without credentials. */
  authOpenMetrics?: boolean;
  /** PEM certificate chain and private key: serve HTTPS instead of HTTP. */
  tls?: { cert: Buffer; key: Buffer };
  /** Connection cap, per-client cap and headers timeout (`connection_guard.ts`). */
  connections: ConnectionLimits;
  /** How long a keep-alive connection may sit idle between requests, in milliseconds. */
  idleTimeoutMs: number;
  log?: (line: string) => void;
  /** `--online-store`: fills store-backed embedding inputs after decoding (`store_inputs.ts`). */
  storeInputs?: StoreInputs;
}

type Route =
  | { kind: 'live' | 'ready' | 'server' | 'metrics' | 'index' }
  | { kind: 'model' | 'model_ready' | 'model_config' | 'infer'; model: string; version?: string }
  | { kind: 'stats'; model?: string; version?: string };

const JSON_TYPE = 'application/json';
/** How much of an unwanted request body is drained (× --max-body-size) before the connection is closed instead. */
const DRAIN_FACTOR = 8;
const HEALTH_PATHS = new Set(['/v2/health/live', '/v2/health/ready']);

/**
 * The protocol extensions `GET /v2` reports: exactly those served in full. Not listed: `model_repository`
 * (only its index is served; models load by polling the repository, not by load/unload calls),
 * `classification`, `sequence`, shared memory, `trace`, `logging`.
 */
export const EXTENSIONS = ['binary_tensor_data', 'model_configuration', 'statistics'];

export class InferenceHttpServer {
  readonly server: Server;
  private readonly opts: HttpServerOptions;
  readonly guard: ConnectionGuard;
  private active = 0;
  private closing = false;

  constructor(options: HttpServerOptions) {
    this.opts = options;
    const handler = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    const { headersTimeoutMs } = options.connections;
    // Node applies headersTimeout to every request head (the guard only to a connection's first one) and
    // checks it every connectionsCheckingInterval, 30 s by default: far coarser than the timeout itself.
    const common = {
      keepAliveTimeout: options.idleTimeoutMs,
      headersTimeout: headersTimeoutMs,
      requestTimeout: Math.max(60_000, headersTimeoutMs),
      connectionsCheckingInterval: Math.min(1000, headersTimeoutMs),
    };
    this.server = options.tls ? createTlsServer({ ...common, cert: options.tls.cert, key: options.tls.key }, handler) : createServer(common, handler);
    this.guard = new ConnectionGuard(this.server, { ...options.connections, openGauge: options.metrics.connections, dropped: options.metrics.connectionsDropped, log: options.log });
  }

  /** Requests being handled right now. */
  get activeRequests(): number {
    return this.active;
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * Graceful close (`ConnectionGuard.drain`): answer every request already received and every request on
   * a connection accepted while new ones keep arriving (at most `drainDelayMs`), all with
   * `Connection: close`; then stop accepting, close keep-alive connections between requests, drop
   * connections that have not delivered a complete request within the grace period, and after
   * `timeoutMs` cut whatever is left.
   */
  async close(timeoutMs: number, drainDelayMs = 0): Promise<{ forced: boolean }> {
    this.closing = true;
    const closed = this.guard.drain(this.server, Math.min(drainDelayMs, timeoutMs));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const r = await Promise.race([closed.then(() => 'closed' as const), timedOut]);
    clearTimeout(timer);
    if (r === 'timeout') {
      this.guard.stopAccepting();
      this.server.closeAllConnections();
      this.guard.destroyAll();
      await closed;
    }
    this.server.close(); // stops http's own connection-checking timer (the listener is closed already)
    this.guard.dispose();
    return { forced: r === 'timeout' };
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const t0 = performance.now();
    this.active++;
    this.guard.requestStarted(req, res);
    res.once('close', () => this.active--);
    let route: Route | undefined;
    try {
      // Before routing: without a token a client learns nothing, not even which routes exist.
      if (this.opts.auth && !this.isOpen(pathOf(req.url))) this.opts.auth.check(req.headers.authorization);
      route = parseRoute(req.url ?? '/');
      if (!route) throw new HttpError(404, `unknown route ${req.method} ${req.url}; gnnctl serve speaks KServe V2 under /v2 (and /metrics)`);
      const method = route.kind === 'infer' || route.kind === 'index' ? 'POST' : 'GET';
      if (req.method !== method) throw new HttpError(405, `${req.method} is not allowed on ${pathOf(req.url)}; use ${method}`, { Allow: method });
      if (route.kind === 'infer') {
        void this.infer(req, res, route.model, route.version, t0);
        return;
      }
      req.resume();
      this.handleGet(route, req, res);
    } catch (e) {
      this.sendError(req, res, e, route?.kind ?? 'unknown');
    }
  }

  /** Paths left open under auth by --auth-open-health and --auth-open-metrics. */
  private isOpen(path: string): boolean {
    return (this.opts.authOpenHealth === true && HEALTH_PATHS.has(path)) || (this.opts.authOpenMetrics === true && path === '/metrics');
  }

  private handleGet(route: Exclude<Route, { kind: 'infer' }>, req: IncomingMessage, res: ServerResponse): void {
    const { manager, metrics } = this.opts;
    switch (route.kind) {
      case 'live':
        return this.send(req, res, 200, '', undefined, route.kind);
      case 'ready':
        return this.send(req, res, this.opts.isReady() && !this.closing ? 200 : 400, '', undefined, route.kind);
      case 'server':
        return this.sendJson(req, res, 200, { name: 'gnnctl', version: VERSION, extensions: EXTENSIONS }, route.kind);
      case 'metrics':
        return this.send(req, res, 200, metrics.registry.render(), 'text/plain; version=0.0.4; charset=utf-8', route.kind);
      case 'index':
        return this.sendJson(req, res, 200, manager.index(), route.kind);
      case 'model': {
        const { spec, versions, version } = manager.lookup(route.model, route.version);
        const listed = route.version ? [version!] : versions;
        return this.sendJson(
          req,
          res,
          200,
          {
            name: spec.name,
            versions: listed.map((v) => String(v.version)),
            platform: spec.platform,
            inputs: spec.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
            outputs: spec.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
          },
          route.kind,
        );
      }
      case 'model_ready': {
        let reason: string | undefined;
        try {
          const { version } = manager.lookup(route.model, route.version);
          if (!version || version.state !== 'ready') reason = `model "${route.model}" has no version ready`;
        } catch (e) {
          reason = (e as Error).message;
        }
        if (reason !== undefined) return this.sendJson(req, res, 400, { error: reason }, route.kind);
        return this.send(req, res, 200, '', undefined, route.kind);
      }
      case 'stats': {
        // Loaded versions, with zeros where nothing ran yet, as Triton lists them.
        const models = route.model === undefined ? manager.readyModels().sort() : [route.model];
        const model_stats = models.flatMap((name) => {
          const { versions, version } = manager.lookup(name, route.version);
          return (route.version ? [version!] : versions).map((v) => metrics.stats.of(name, String(v.version)).toJson());
        });
        return this.sendJson(req, res, 200, { model_stats }, route.kind);
      }
      case 'model_config': {
        const { spec } = manager.lookup(route.model, route.version);
        return this.sendJson(req, res, 200, { ...spec.config, name: spec.name, platform: spec.platform, max_batch_size: spec.maxBatchSize }, route.kind);
      }
    }
  }

  private async infer(req: IncomingMessage, res: ServerResponse, model: string, version: string | undefined, t0: number): Promise<void> {
    const { manager, metrics } = this.opts;
    metrics.inflight.inc();
    let mv: ModelVersion | undefined;
    let labels = { model, version: version ?? '' };
    try {
      manager.check(model, version); // unknown model or version: 404 before reading the body
      const body = await this.readBody(req);
      const t1 = performance.now();
      metrics.phase('read', (t1 - t0) / 1000);
      const split = splitBody(body, req.headers[HEADER_LENGTH_HEADER]);
      const parsed = split.raw ? undefined : parseJsonBody(split.json);
      const t2 = performance.now();
      metrics.phase('parse', (t2 - t1) / 1000);
      mv = manager.acquire(model, version);
      labels = { model, version: String(mv.version) };
      const decodeOptions = { sharedDims: mv.sharedDims, binary: split.binary, maxSequenceLength: this.opts.maxSequenceLength };
      const request = split.raw ? decodeRawBinaryRequest(split.raw, mv.spec, decodeOptions) : decodeInferRequest(parsed, mv.spec, decodeOptions);
      metrics.phase('decode', (performance.now() - t2) / 1000);
      if (this.opts.storeInputs) await this.opts.storeInputs.fill(mv.spec, request);
      // Triton's timeout 0 means no timeout; without the parameter the server's default applies.
      const timeoutMs = request.timeoutUs !== undefined ? request.timeoutUs / 1000 : (this.opts.requestTimeoutMs ?? 0);
      const outputs = timeoutMs > 0 ? await withDeadline(mv, request, t0 + timeoutMs, timeoutMs, request.timeoutUs !== undefined) : await mv.infer(request);
      const t3 = performance.now();
      this.sendInferResponse(req, res, encodeInferResponse(mv.name, mv.version, request.id, outputs, request.binaryOutputs));
      const t4 = performance.now();
      metrics.phase('respond', (t4 - t3) / 1000);
      metrics.inference(labels.model, labels.version, 'success');
      mv.observeDuration((t4 - t0) / 1000);
      metrics.stats.of(labels.model, labels.version).succeeded((t4 - t0) / 1000, request.batch);
    } catch (e) {
      metrics.inference(labels.model, labels.version, 'failure');
      this.sendError(req, res, e, 'infer');
      // Triton's statistics count the requests that reached a model version.
      if (mv) metrics.stats.of(labels.model, labels.version).failed((performance.now() - t0) / 1000, failureReason(e));
    } finally {
      mv?.release();
      metrics.inflight.dec();
    }
  }

  /** The request body's bytes, within the size limit, decompressed when it says so. */
  private readBody(req: IncomingMessage): Promise<Buffer> {
    const max = this.opts.maxBodyBytes;
    const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate') {
      return Promise.reject(new HttpError(415, `unsupported Content-Encoding "${encoding}" (use gzip, deflate or none)`));
    }
    const declared = Number(req.headers['content-length']);
    if (declared > max) return Promise.reject(tooLarge(declared, max));
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let failed = false;
      req.on('data', (chunk: Buffer) => {
        if (failed) return;
        size += chunk.length;
        if (size > max) {
          failed = true;
          reject(tooLarge(size, max));
          return;
        }
        chunks.push(chunk);
      });
      req.on('error', (e) => {
        failed = true;
        reject(new HttpError(400, `reading the request body failed: ${e.message}`));
      });
      // A client that hangs up mid-body: no 'end' will come.
      req.on('close', () => {
        if (failed || req.complete) return;
        failed = true;
        reject(new HttpError(400, 'the client closed the connection before sending the whole body'));
      });
      req.on('end', () => {
        if (failed) return;
        let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        try {
          if (encoding === 'gzip') buf = gunzipSync(buf, { maxOutputLength: max });
          else if (encoding === 'deflate') buf = inflateSync(buf, { maxOutputLength: max });
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          reject(code === 'ERR_BUFFER_TOO_LARGE' ? tooLarge(max + 1, max, 'decompressed ') : new HttpError(400, `cannot decompress the ${encoding} request body: ${(e as Error).message}`));
          return;
        }
        resolve(buf);
      });
    });
  }

  private sendError(req: IncomingMessage, res: ServerResponse, e: unknown, route: string): void {
    let status = 500;
    let message: string;
    let headers: Record<string, string> | undefined;
    if (e instanceof HttpError) {
      status = e.status;
      message = e.message;
      headers = e.headers;
    } else {
      message = `internal error: ${e instanceof Error ? e.message : String(e)}`;
      this.opts.log?.(`${req.method} ${req.url}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
    if (!req.complete) headers = this.discardBody(req, headers);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.send(req, res, status, JSON.stringify({ error: message }), JSON_TYPE, route, headers);
  }

  /**
   * The rest of a body answered before it was read (401, 404, 405, 413, …). It is read and dropped, so
   * the client, still writing, gets the answer instead of a reset and the connection stays usable; past
   * `DRAIN_FACTOR` × the body limit (declared, or counted as it arrives) the connection is closed
   * instead, so nobody makes the server read an unbounded body for nothing.
   */
  private discardBody(req: IncomingMessage, headers: Record<string, string> | undefined): Record<string, string> | undefined {
    const cap = DRAIN_FACTOR * this.opts.maxBodyBytes;
    req.resume();
    if (Number(req.headers['content-length']) > cap) return { ...headers, Connection: 'close' };
    let discarded = 0;
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > cap) req.socket.destroy();
    });
    return headers;
  }

  /** A JSON response, or the JSON header and binary tensors (application/octet-stream, as Triton answers). */
  private sendInferResponse(req: IncomingMessage, res: ServerResponse, r: EncodedResponse): void {
    if (!r.binary) return this.send(req, res, 200, r.json, JSON_TYPE, 'infer');
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/octet-stream',
      'Content-Length': r.length,
      'Inference-Header-Content-Length': r.headerLength,
    };
    if (this.closing) headers.Connection = 'close';
    res.writeHead(200, headers);
    res.write(r.json);
    for (let i = 0; i < r.binary.length; i++) {
      if (i === r.binary.length - 1) res.end(r.binary[i]);
      else res.write(r.binary[i]);
    }
    this.opts.metrics.http(req.method ?? '', 'infer', 200);
  }

  private sendJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, route: string): void {
    this.send(req, res, status, JSON.stringify(body), JSON_TYPE, route);
  }

  private send(req: IncomingMessage, res: ServerResponse, status: number, body: string, contentType: string | undefined, route: string, extra?: Record<string, string>): void {
    const headers: Record<string, string | number> = { 'Content-Length': Buffer.byteLength(body) };
    if (contentType) headers['Content-Type'] = contentType;
    if (this.closing) headers.Connection = 'close';
    if (extra) Object.assign(headers, extra);
    res.writeHead(status, headers);
    res.end(body);
    this.opts.metrics.http(req.method ?? '', route, status);
  }
}

/**
 * Runs the request, answering 504 once `deadline` passes whatever the model is doing: a queued request
 * is dropped by the batcher, a running one is left to finish and its result discarded. Never a hang.
 */
export function withDeadline(mv: ModelVersion, request: InferRequest, deadline: number, timeoutMs: number, fromRequest: boolean): Promise<Map<string, HostTensor>> {
  const what = fromRequest ? `parameters.timeout ${request.timeoutUs} µs` : `the server's --request-timeout`;
  const expired = () => new HttpError(504, `model "${mv.name}" version ${mv.version}: no answer within the request's deadline of ${timeoutMs} ms (${what})`, undefined, 'REJECTED');
  const left = deadline - performance.now();
  if (left <= 0) return Promise.reject(expired());
  const run = mv.infer(request, deadline);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(expired()), left);
    run.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e as Error);
      },
    );
  });
}

export function failureReason(e: unknown): FailureReason {
  if (!(e instanceof HttpError)) return 'OTHER';
  return e.reason ?? (e.status === 503 ? 'REJECTED' : 'OTHER');
}

function tooLarge(size: number, max: number, what = ''): HttpError {
  return new HttpError(413, `the ${what}request body is larger than the limit of ${max} bytes (got ${size > max + 1 ? size : `more than ${max}`}); raise --max-body-size`);
}

function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q < 0 ? u : u.slice(0, q);
}

/** The route of a request path, or undefined (404). Path segments are URL-decoded. */
export function parseRoute(url: string): Route | undefined {
  const path = pathOf(url);
  if (path === '/metrics') return { kind: 'metrics' };
  const raw = path.split('/').filter((s, i, a) => !(s === '' && (i === 0 || i === a.length - 1)));
  let seg: string[];
  try {
    seg = raw.map((s) => decodeURIComponent(s));
  } catch {
    throw new HttpError(400, `malformed percent-encoding in the path ${path}`);
  }
  if (seg[0] !== 'v2') return undefined;
  if (seg.length === 1) return { kind: 'server' };
  if (seg[1] === 'health' && seg.length === 3 && (seg[2] === 'live' || seg[2] === 'ready')) return { kind: seg[2] };
  if (seg[1] === 'repository' && seg.length === 3 && seg[2] === 'index') return { kind: 'index' };
  if (seg[1] !== 'models' || seg.length < 3 || seg[2] === '') return undefined;
  // `/v2/models/stats`: every model's statistics (as in Triton, a model named "stats" is shadowed here).
  if (seg.length === 3 && seg[2] === 'stats') return { kind: 'stats' };
  const model = seg[2]!;
  let rest = seg.slice(3);
  let version: string | undefined;
  if (rest[0] === 'versions') {
    if (rest.length < 2) return undefined;
    version = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length === 0) return { kind: 'model', model, version };
  if (rest.length > 1) return undefined;
  switch (rest[0]) {
    case 'ready':
      return { kind: 'model_ready', model, version };
    case 'config':
      return { kind: 'model_config', model, version };
    case 'infer':
      return { kind: 'infer', model, version };
    case 'stats':
      return { kind: 'stats', model, version };
    default:
      return undefined;
  }
}
