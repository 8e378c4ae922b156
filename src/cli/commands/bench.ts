/**
 * `gnnctl bench serve`: open-loop load against a KServe V2 server (see `loadgen/`), printed as a
 * short report or one JSON object.
 */
import { UsageError } from '../../core/errors.js';
import { benchServe, type BenchServeResult } from '../../loadgen/bench_serve.js';
import { seconds } from './serve.js';
import type { CommandOutput } from '../run.js';

/** As commander passes them; checked here. */
export interface BenchServeCommandOptions {
  /** `--url URL` of the server (required). */
  url?: unknown;
  /** `--model NAME` (required). */
  model?: unknown;
  /** `--model-version V` (default: the server's latest). */
  modelVersion?: unknown;
  /** `--rate QPS` (required). */
  rate?: unknown;
  /** `--duration S`: measured seconds (required). */
  duration?: unknown;
  /** `--warmup S`: seconds of load before the measured window (default 0). */
  warmup?: unknown;
  /** `--concurrency N`: most connections open at once (default 64). */
  concurrency?: unknown;
  /** `--pool N`: distinct pre-built requests (default 512). */
  pool?: unknown;
  /** `--max-sequence N`: longest RTI sequence (default 32). */
  maxSequence?: unknown;
  /** `--keys FILE`: known keys, from an embeddings.parquet or a text file with one key per line. */
  keys?: unknown;
  /** `--known-key-rate R`: share of requests with a known key (default 0.9, with --keys). */
  knownKeyRate?: unknown;
  /** `--seed N` (default 1). */
  seed?: unknown;
  /** `--client raw|node`: the generator's HTTP client (default raw, the lean one; node = http.Agent). */
  client?: unknown;
  json?: boolean;
}

export async function benchServeCommand(opts: BenchServeCommandOptions): Promise<CommandOutput<BenchServeResult>> {
  if (typeof opts.url !== 'string' || !/^https?:\/\//.test(opts.url)) throw new UsageError('--url must be the server\'s base URL, e.g. http://127.0.0.1:8000', { value: opts.url });
  if (opts.url.startsWith('https:')) throw new UsageError('https is not supported by bench serve; use http', { value: opts.url });
  if (typeof opts.model !== 'string' || opts.model === '') throw new UsageError('--model is required', { value: opts.model });
  const rate = positive(opts.rate, '--rate');
  const durationS = seconds(opts.duration, '--duration', NaN);
  if (!(durationS > 0)) throw new UsageError('--duration is required and must be > 0', { value: opts.duration });
  const client = opts.client === undefined ? 'raw' : String(opts.client);
  if (client !== 'raw' && client !== 'node') throw new UsageError('--client must be "raw" or "node"', { value: opts.client });
  const result = await benchServe({
    url: opts.url,
    model: opts.model,
    version: opts.modelVersion === undefined ? undefined : String(opts.modelVersion),
    rate,
    durationS,
    warmupS: opts.warmup === undefined ? 0 : seconds(opts.warmup, '--warmup', 0),
    connections: opts.concurrency === undefined ? undefined : Math.round(positive(opts.concurrency, '--concurrency')),
    poolSize: opts.pool === undefined ? undefined : Math.max(2, Math.round(positive(opts.pool, '--pool'))),
    maxSequence: opts.maxSequence === undefined ? undefined : Math.round(nonNegative(opts.maxSequence, '--max-sequence')),
    keysFile: opts.keys === undefined ? undefined : ([] as unknown[]).concat(opts.keys).map(String),
    knownKeyRate: opts.knownKeyRate === undefined ? undefined : fraction(opts.knownKeyRate, '--known-key-rate'),
    seed: opts.seed === undefined ? undefined : Math.round(nonNegative(opts.seed, '--seed')),
    client,
  });
  return { result, text: formatBench(result) };
}

export function formatBench(r: BenchServeResult): string {
  const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '-');
  const l = r.latency_ms;
  const lines = [
    `gnnctl bench serve: model "${r.model}" at ${r.url}`,
    `  offered    ${r.offered_qps} req/s for ${r.duration_s.toFixed(1)} s (${r.sent} requests, up to ${r.connections} connections; pool of ${r.pool.size}, ${r.pool.mean_bytes} B, mean RTI length ${r.pool.mean_sequence.toFixed(1)}, ${(r.pool.known_key_share * 100).toFixed(0)}% known keys)`,
    `  achieved   ${r.achieved_qps.toFixed(1)} req/s: ${r.ok} ok, ${r.errors} errors${r.errors > 0 ? ` (${Object.entries(r.error_kinds).map(([k, n]) => `${k} ${n}`).join(', ')})` : ''}`,
    `  latency    p50 ${ms(l.p50)} ms  p90 ${ms(l.p90)} ms  p99 ${ms(l.p99)} ms  p99.9 ${ms(l.p999)} ms  max ${ms(l.max)} ms  (from the scheduled send time)`,
    `  generator  sent late by p99 ${ms(r.send_lag_ms.p99)} ms, max ${ms(r.send_lag_ms.max)} ms`,
  ];
  if (r.server) {
    const phases = Object.entries(r.server.phase_ms_per_request)
      .map(([k, v]) => `${k} ${v.toFixed(3)}`)
      .join(', ');
    lines.push(`  server     ${r.server.batches} batches, mean ${r.server.mean_batch_rows.toFixed(1)} rows; ms per request: ${phases}`);
    const extra: string[] = [];
    if (r.server.request_ms) extra.push(`time in server p50 ≤ ${ms(r.server.request_ms.p50)} ms, p99 ≤ ${ms(r.server.request_ms.p99)} ms`);
    if (r.server.event_loop_utilization !== undefined) extra.push(`main thread busy ${(r.server.event_loop_utilization * 100).toFixed(0)}%`);
    if (r.server.event_loop_delay_ms) extra.push(`event-loop delay p99 ${ms(r.server.event_loop_delay_ms.p99)} ms, max ${ms(r.server.event_loop_delay_ms.max)} ms`);
    if (extra.length > 0) lines.push(`             ${extra.join('; ')}`);
  }
  return lines.join('\n');
}

function positive(v: unknown, flag: string): number {
  const n = Number(v);
  if (v === undefined || !(n > 0) || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number > 0`, { value: v });
  return n;
}

function nonNegative(v: unknown, flag: string): number {
  const n = Number(v);
  if (!(n >= 0) || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number >= 0`, { value: v });
  return n;
}

function fraction(v: unknown, flag: string): number {
  const n = Number(v);
  if (!(n >= 0 && n <= 1)) throw new UsageError(`${flag} must be in [0, 1]`, { value: v });
  return n;
}
