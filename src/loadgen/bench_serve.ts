/**
 * `gnnctl bench serve`: an open-loop load test of a KServe V2 server (gnnctl's or Triton), in the manner
 * of Kumo's published online-serving benchmark: fixed offered rate, latency from the scheduled send
 * time, a pool of distinct pre-serialized requests built from the model's metadata.
 */
import { request } from 'node:http';
import { readFile } from 'node:fs/promises';
import { ArtifactError, UsageError } from '../core/errors.js';
import { grpcRequestBytes, grpcTransport } from './grpc_requests.js';
import { runOpenLoop, type OpenLoopResult, type Transport } from './open_loop.js';
import { buildRequestPool, readPayloads, type ModelMetadata } from './request_pool.js';
import { breakdown, scrapeMetrics, type ServerBreakdown } from './server_stats.js';

/** The pad value of time columns in the export contract. */
const INT64_MIN = -(2n ** 63n);

export interface BenchServeOptions {
  url: string;
  model: string;
  /** Model version to target; default the server's choice (latest). */
  version?: string;
  rate: number;
  durationS: number;
  warmupS?: number;
  /** Most sockets open at once. Default 64. */
  connections?: number;
  /** Distinct requests in the pool. Default 512. */
  poolSize?: number;
  maxSequence?: number;
  /** RTI sequence lengths to draw from (e.g. 4, 8, 16, 32), instead of 0..maxSequence. */
  sequenceLengths?: number[];
  /** Pre-generated request files (`readPayloads`): sent instead of a generated pool. */
  payloadsDir?: string;
  /**
   * Keys the model knows: embeddings.parquet files (each feeds the input named like its key column, e.g.
   * customer_id → transactions.customer_id) or a text file with one key per line (feeds the first key input).
   */
  keysFile?: string | string[];
  knownKeyRate?: number;
  seed?: number;
  timeoutMs?: number;
  /** Called right before the first request is sent (after the pool is built). */
  onStart?: () => void;
  /** Client of the generator: `raw` (default, lean) or `node` (http.Agent; grpc-js with --protocol grpc; see `open_loop.ts`, `grpc_requests.ts`). */
  client?: 'raw' | 'node';
  /**
   * `grpc`: send the same requests as KServe V2 gRPC `ModelInfer` calls to `grpcAddress` (metadata and
   * /metrics still come from `url`). Default `http`.
   */
  protocol?: 'http' | 'grpc';
  /** `host:port` of the gRPC endpoint (default: the URL's host, port 8001). */
  grpcAddress?: string;
  /** HTTP/2 connections the gRPC calls are spread over (default 4). */
  grpcChannels?: number;
}

export interface BenchServeResult extends OpenLoopResult {
  url: string;
  protocol: 'http' | 'grpc';
  model: string;
  pool: { size: number; mean_bytes: number; min_bytes: number; max_bytes: number; known_key_share: number; mean_sequence: number; from: 'generated' | 'payloads' };
  /** From the server's /metrics when it is a gnnctl server. */
  server?: ServerBreakdown;
}

/** The requests a run sends, built (or read) once: a sweep reuses them at every rate. */
export interface PreparedLoad {
  base: string;
  modelPath: string;
  bodies: Buffer[];
  pool: BenchServeResult['pool'];
  /** The bodies as serialized gRPC requests, made on first use by a gRPC run. */
  grpcBodies?: Buffer[];
}

export async function benchServe(options: BenchServeOptions): Promise<BenchServeResult> {
  return runPrepared(await prepareLoad(options), options, options.rate);
}

/** One step of a sweep: the offered rate and what came of it. */
export interface SweepStep {
  offered_qps: number;
  achieved_qps: number;
  ok: number;
  errors: number;
  latency_ms: OpenLoopResult['latency_ms'];
  /** Achieved ≥ 95% of offered, no errors, p99 within the target. */
  within_target: boolean;
  /** Mean rows per executed batch (gnnctl servers). */
  mean_batch_rows?: number;
}

export interface SweepResult {
  url: string;
  model: string;
  pool: BenchServeResult['pool'];
  p99_target_ms: number;
  duration_s: number;
  steps: SweepStep[];
  /** The highest offered rate that stayed within the target (0 when none did). */
  max_qps_within_target: number;
  /** The highest rate achieved at any step: where the server saturates. */
  saturation_qps: number;
}

/**
 * Steps the offered rate up and reports latency against load, in the manner of Kumo's published figure:
 * either the given rates, or (`rates` undefined) from `options.rate` up by ×1.5 per step until the server
 * falls behind (achieved < 90% of offered, or more than 1% errors), at most 12 steps. Each step runs
 * `options.warmupS` + `options.durationS` seconds on the same request pool.
 */
export async function benchServeSweep(options: BenchServeOptions & { rates?: number[]; p99TargetMs?: number; onStep?: (s: SweepStep) => void }): Promise<SweepResult> {
  const prepared = await prepareLoad(options);
  const target = options.p99TargetMs ?? 10;
  const steps: SweepStep[] = [];
  const auto = options.rates === undefined;
  const rates = options.rates ?? [];
  for (let i = 0; auto ? i < 12 : i < rates.length; i++) {
    const rate = auto ? Math.round(options.rate * 1.5 ** i) : rates[i]!;
    const r = await runPrepared(prepared, { ...options, onStart: i === 0 ? options.onStart : undefined }, rate);
    const step: SweepStep = {
      offered_qps: r.offered_qps,
      achieved_qps: r.achieved_qps,
      ok: r.ok,
      errors: r.errors,
      latency_ms: r.latency_ms,
      within_target: r.achieved_qps >= 0.95 * r.offered_qps && r.errors === 0 && r.latency_ms.p99 <= target,
      ...(r.server ? { mean_batch_rows: r.server.mean_batch_rows } : {}),
    };
    steps.push(step);
    options.onStep?.(step);
    if (auto && (r.achieved_qps < 0.9 * r.offered_qps || r.errors > 0.01 * r.sent)) break;
  }
  return {
    url: prepared.base,
    model: options.model,
    pool: prepared.pool,
    p99_target_ms: target,
    duration_s: options.durationS,
    steps,
    max_qps_within_target: Math.max(0, ...steps.filter((s) => s.within_target).map((s) => s.offered_qps)),
    saturation_qps: Math.max(0, ...steps.map((s) => s.achieved_qps)),
  };
}

/** Fetches the model's metadata and builds (or reads) the request pool. */
export async function prepareLoad(options: BenchServeOptions): Promise<PreparedLoad> {
  const base = options.url.replace(/\/+$/, '');
  const modelPath = `/v2/models/${encodeURIComponent(options.model)}${options.version ? `/versions/${encodeURIComponent(options.version)}` : ''}`;
  const meta = await getJson<ModelMetadata>(base, modelPath);
  if (!meta.ok) {
    throw new UsageError(`cannot get the metadata of model "${options.model}" from ${base}${modelPath}: ${meta.error}`, { hint: 'is the server running, and is the model name right?' });
  }
  // Pad values tell which sequence inputs are time columns (padded with INT64 min).
  const config = await getJson<{ parameters?: Record<string, { string_value?: string }> }>(base, `${modelPath}/config`);
  const timeInputs = new Set<string>();
  if (config.ok) {
    for (const [k, v] of Object.entries(config.value.parameters ?? {})) {
      if (k.startsWith('pad_value:') && v.string_value?.trim() === String(INT64_MIN)) timeInputs.add(k.slice('pad_value:'.length));
    }
  }
  if (options.payloadsDir !== undefined) {
    const p = readPayloads(options.payloadsDir);
    return { base, modelPath, bodies: p.bodies, pool: { size: p.bodies.length, mean_bytes: Math.round(p.meanBytes), min_bytes: p.minBytes, max_bytes: p.maxBytes, known_key_share: p.knownKeyShare, mean_sequence: p.meanSequence, from: 'payloads' } };
  }
  const knownKeys = options.keysFile ? await knownKeysByInput(meta.value, typeof options.keysFile === 'string' ? [options.keysFile] : options.keysFile) : undefined;
  const pool = buildRequestPool(meta.value, {
    size: options.poolSize,
    seed: options.seed,
    knownKeys,
    knownKeyRate: options.knownKeyRate,
    maxSequence: options.maxSequence,
    sequenceLengths: options.sequenceLengths,
    timeInputs,
  });
  const sizes = pool.bodies.map((b) => b.length);
  return {
    base,
    modelPath,
    bodies: pool.bodies,
    pool: { size: sizes.length, mean_bytes: Math.round(pool.meanBytes), min_bytes: Math.min(...sizes), max_bytes: Math.max(...sizes), known_key_share: pool.knownKeyShare, mean_sequence: pool.meanSequence, from: 'generated' },
  };
}

/** One open-loop run of the prepared requests at `rate`, with the server's breakdown when it has one. */
async function runPrepared(prepared: PreparedLoad, options: BenchServeOptions, rate: number): Promise<BenchServeResult> {
  const { base, modelPath } = prepared;
  let transport: Transport | undefined;
  if (options.protocol === 'grpc') {
    prepared.grpcBodies ??= prepared.bodies.map((b) => grpcRequestBytes(b, options.model, options.version));
    transport = grpcTransport(options.grpcAddress ?? `${new URL(base).hostname}:8001`, prepared.grpcBodies, { timeoutMs: options.timeoutMs, client: options.client, channels: options.grpcChannels, maxInFlight: options.connections });
  }
  // Scraped again when the warm-up ends, so the server's breakdown covers the measured window only.
  let before = await scrapeMetrics(base);
  let windowScrape: Promise<void> | undefined;
  const result = await runOpenLoop({
    url: base,
    path: `${modelPath}/infer`,
    bodies: prepared.bodies,
    rate,
    durationS: options.durationS,
    warmupS: options.warmupS,
    connections: options.connections,
    timeoutMs: options.timeoutMs,
    onStart: options.onStart,
    onWindowStart: () => {
      if (before && (options.warmupS ?? 0) > 0) windowScrape = scrapeMetrics(base).then((s) => void (before = s ?? before));
    },
    client: options.client,
    transport,
  });
  await windowScrape;
  const after = before ? await scrapeMetrics(base) : undefined;
  return {
    url: base,
    protocol: options.protocol ?? 'http',
    model: options.model,
    ...result,
    pool: prepared.pool,
    ...(before && after ? { server: breakdown(before, after) } : {}),
  };
}

/** Input name → known keys, one entry per keys file. */
async function knownKeysByInput(meta: ModelMetadata, files: string[]): Promise<Map<string, (string | bigint)[]>> {
  const keyInputs = meta.inputs.filter((t) => !t.shape.slice(1).includes(-1) && /(^|_)id$/.test(t.name.split('.').pop() ?? ''));
  const out = new Map<string, (string | bigint)[]>();
  for (const file of files) {
    const { column, keys } = await readKeys(file);
    const numeric = keys.every((k) => /^-?\d+$/.test(k));
    const input = column !== undefined
      ? keyInputs.find((t) => t.name.split('.').pop() === column)
      : keyInputs.find((t) => (t.datatype === 'INT64' ? numeric : t.datatype === 'BYTES'));
    if (!input) {
      throw new ArtifactError(`no input of model "${meta.name}" takes the keys of ${file}${column ? ` (column ${column})` : ''}`, {
        hint: `key inputs: ${keyInputs.map((t) => `${t.name} (${t.datatype})`).join(', ') || 'none'}`,
      });
    }
    if (input.datatype === 'INT64' && !numeric) throw new ArtifactError(`the keys of ${file} are not integers, but ${input.name} is INT64`, { where: file });
    out.set(input.name, input.datatype === 'INT64' ? keys.map((k) => BigInt(k)) : keys);
  }
  return out;
}

/** The keys of an embeddings.parquet (and its key column's name) or of a text file (one per line). */
async function readKeys(file: string): Promise<{ column?: string; keys: string[] }> {
  let column: string | undefined;
  let keys: string[];
  if (file.endsWith('.parquet')) {
    const { withDuck, queryRows, q, lit } = await import('../data/duck.js');
    keys = await withDuck(async ({ conn }) => {
      const cols = await queryRows<{ column_name: string }>(conn, `DESCRIBE SELECT * FROM read_parquet(${lit(file)})`);
      column = cols.map((c) => c.column_name).find((c) => c !== 'embedding' && c !== 'anchor_time');
      if (!column) throw new ArtifactError('no key column in the embeddings file', { where: file });
      const rows = await queryRows<{ k: string }>(conn, `SELECT CAST(${q(column)} AS VARCHAR) AS k FROM read_parquet(${lit(file)}) WHERE ${q(column)} IS NOT NULL LIMIT 1000000`);
      return rows.map((r) => r.k);
    });
  } else {
    keys = (await readFile(file, 'utf8')).split('\n').map((l) => l.trim()).filter((l) => l !== '');
  }
  if (keys.length === 0) throw new ArtifactError('the keys file holds no key', { where: file });
  return { column, keys };
}

type JsonResult<T> = { ok: true; value: T } | { ok: false; error: string };

function getJson<T>(base: string, path: string): Promise<JsonResult<T>> {
  return new Promise((resolve) => {
    const req = request(`${base}${path}`, { method: 'GET', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve({ ok: false, error: `HTTP ${res.statusCode} ${body.slice(0, 300)}` });
        try {
          resolve({ ok: true, value: JSON.parse(body) as T });
        } catch (e) {
          resolve({ ok: false, error: `not JSON: ${(e as Error).message}` });
        }
      });
    });
    req.on('error', (e) => resolve({ ok: false, error: e.message }));
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}
