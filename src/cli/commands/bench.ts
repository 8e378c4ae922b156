/**
 * `gnnctl bench serve`: open-loop load against a KServe V2 server (see `loadgen/`), printed as a
 * short report or one JSON object.
 */
import { UsageError } from '../../core/errors.js';
import { benchServe, benchServeSweep, prepareLoad, type BenchServeResult, type SweepResult } from '../../loadgen/bench_serve.js';
import { writePayloads } from '../../loadgen/request_pool.js';
import { sweepChartSvg } from '../../loadgen/sweep_chart.js';
import { writeFileAtomic } from '../../core/atomic.js';
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
  /** `--protocol http|grpc` (default http). */
  protocol?: unknown;
  /** `--grpc-address HOST:PORT`: with --protocol grpc (default: the --url host, port 8001). */
  grpcAddress?: unknown;
  /** `--payloads DIR`: pre-generated request files (*.json) to send instead of a generated pool. */
  payloads?: unknown;
  /** `--sequence-lengths 4,8,16,32`: RTI lengths of the generated pool, instead of 0..--max-sequence. */
  sequenceLengths?: unknown;
  /** `--write-payloads DIR`: write the generated pool as request files and exit (no load). */
  writePayloads?: unknown;
  /** `--sweep auto|R1,R2,…`: step the offered rate (auto: from --rate ×1.5 until the server falls behind). */
  sweep?: unknown;
  /** `--p99-target MS`: a sweep step counts as within target at or below this p99 (default 10). */
  p99Target?: unknown;
  /** `--chart FILE.svg`: with --sweep, also write the latency-against-load chart. */
  chart?: unknown;
  json?: boolean;
}

export async function benchServeCommand(opts: BenchServeCommandOptions): Promise<CommandOutput<BenchServeResult | SweepResult | WrittenPayloads>> {
  if (typeof opts.url !== 'string' || !/^https?:\/\//.test(opts.url)) throw new UsageError('--url must be the server\'s base URL, e.g. http://127.0.0.1:8000', { value: opts.url });
  if (opts.url.startsWith('https:')) throw new UsageError('https is not supported by bench serve; use http', { value: opts.url });
  if (typeof opts.model !== 'string' || opts.model === '') throw new UsageError('--model is required', { value: opts.model });
  // Writing payloads, or a sweep with its own list of rates, needs no --rate; everything else does.
  const rateUnused = opts.writePayloads !== undefined || (opts.sweep !== undefined && String(opts.sweep).trim() !== 'auto');
  const rate = opts.rate === undefined && rateUnused ? 1 : positive(opts.rate, '--rate');
  const durationS = seconds(opts.duration, '--duration', NaN);
  if (!(durationS > 0)) throw new UsageError('--duration is required and must be > 0', { value: opts.duration });
  const client = opts.client === undefined ? 'raw' : String(opts.client);
  if (client !== 'raw' && client !== 'node') throw new UsageError('--client must be "raw" or "node"', { value: opts.client });
  const protocol = opts.protocol === undefined ? 'http' : String(opts.protocol);
  if (protocol !== 'http' && protocol !== 'grpc') throw new UsageError('--protocol must be "http" or "grpc"', { value: opts.protocol });
  if (opts.grpcAddress !== undefined && protocol !== 'grpc') throw new UsageError('--grpc-address goes with --protocol grpc', { value: opts.grpcAddress });
  if (opts.grpcAddress !== undefined && !/^[^:]+:\d+$|^\[[^\]]+\]:\d+$/.test(String(opts.grpcAddress))) throw new UsageError('--grpc-address must be host:port, e.g. 127.0.0.1:8001', { value: opts.grpcAddress });
  const sequenceLengths = opts.sequenceLengths === undefined ? undefined : lengthList(opts.sequenceLengths);
  if (opts.payloads !== undefined && (sequenceLengths !== undefined || opts.keys !== undefined)) {
    throw new UsageError('--payloads sends the files as they are; --sequence-lengths and --keys shape a generated pool', { hint: 'leave those out, or drop --payloads' });
  }
  const base = {
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
    protocol,
    grpcAddress: opts.grpcAddress === undefined ? undefined : String(opts.grpcAddress),
    sequenceLengths,
    payloadsDir: opts.payloads === undefined ? undefined : String(opts.payloads),
  } as const;
  if (opts.writePayloads !== undefined) {
    const dir = String(opts.writePayloads);
    const prepared = await prepareLoad(base);
    const files = writePayloads({ bodies: prepared.bodies, meanBytes: prepared.pool.mean_bytes, knownKeyShare: prepared.pool.known_key_share, meanSequence: prepared.pool.mean_sequence }, dir);
    const result: WrittenPayloads = { dir, files: files.length, mean_bytes: prepared.pool.mean_bytes, min_bytes: prepared.pool.min_bytes, max_bytes: prepared.pool.max_bytes, mean_sequence: prepared.pool.mean_sequence };
    return { result, text: `wrote ${files.length} requests to ${dir} (${result.min_bytes}–${result.max_bytes} B, mean ${result.mean_bytes} B, mean RTI length ${result.mean_sequence.toFixed(1)}); send them with --payloads ${dir}` };
  }
  if (opts.chart !== undefined && opts.sweep === undefined) throw new UsageError('--chart draws a sweep: add --sweep', { value: opts.chart });
  if (opts.sweep !== undefined) {
    const text = String(opts.sweep).trim();
    const rates = text === 'auto' ? undefined : rateList(text);
    const p99TargetMs = opts.p99Target === undefined ? 10 : positive(opts.p99Target, '--p99-target');
    if (opts.chart !== undefined && !String(opts.chart).endsWith('.svg')) throw new UsageError('--chart must name an .svg file', { value: opts.chart });
    const result = await benchServeSweep({ ...base, rates, p99TargetMs });
    if (opts.chart !== undefined) writeFileAtomic(String(opts.chart), sweepChartSvg(result));
    return { result, text: `${formatSweep(result)}${opts.chart !== undefined ? `\n  chart: ${String(opts.chart)}` : ''}` };
  }
  const result = await benchServe(base);
  return { result, text: formatBench(result) };
}

/** What `--write-payloads` did. */
export interface WrittenPayloads {
  dir: string;
  files: number;
  mean_bytes: number;
  min_bytes: number;
  max_bytes: number;
  mean_sequence: number;
}

/** The latency-vs-load table of a sweep, with a bar per step (p99 on a log scale up to 1 s). */
export function formatSweep(r: SweepResult): string {
  const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '-');
  const bar = (p99: number) => {
    const w = Math.max(0, Math.min(30, Math.round((Math.log10(Math.max(p99, 0.1)) + 1) * 7.5)));
    return `${'█'.repeat(w)}${p99 > r.p99_target_ms ? ' ✗' : ''}`;
  };
  const lines = [
    `gnnctl bench serve --sweep: model "${r.model}" at ${r.url}; ${r.pool.size} ${r.pool.from} requests of ${r.pool.min_bytes}–${r.pool.max_bytes} B (mean ${r.pool.mean_bytes} B, mean RTI length ${r.pool.mean_sequence.toFixed(1)}); ${r.duration_s} s per step`,
    `  offered/s  achieved/s   errors     p50 ms     p99 ms   p99.9 ms  rows/batch  p99 (log scale, 0.1 ms–1 s; ✗ over ${r.p99_target_ms} ms)`,
    ...r.steps.map(
      (s) =>
        `  ${String(s.offered_qps).padStart(9)}  ${s.achieved_qps.toFixed(1).padStart(10)}  ${String(s.errors).padStart(7)}  ${ms(s.latency_ms.p50).padStart(9)}  ${ms(s.latency_ms.p99).padStart(9)}  ${ms(s.latency_ms.p999).padStart(9)}  ${s.mean_batch_rows === undefined ? '-'.padStart(10) : s.mean_batch_rows.toFixed(1).padStart(10)}  ${bar(s.latency_ms.p99)}`,
    ),
    `  within target (≥ 95% achieved, 0 errors, p99 ≤ ${r.p99_target_ms} ms) up to ${r.max_qps_within_target} req/s offered; saturation at ${r.saturation_qps.toFixed(0)} req/s achieved`,
  ];
  return lines.join('\n');
}

function rateList(text: string): number[] {
  const rates = text.split(',').map((x) => Number(x.trim()));
  if (rates.length === 0 || rates.some((x) => !(x > 0) || !Number.isFinite(x))) {
    throw new UsageError('--sweep must be "auto" or a list of rates, e.g. 250,500,1000,2000', { value: text });
  }
  return rates;
}

function lengthList(v: unknown): number[] {
  const text = String(v);
  const n = text.split(',').map((x) => Number(x.trim()));
  if (n.some((x) => !Number.isSafeInteger(x) || x < 0)) throw new UsageError('--sequence-lengths must be a list of lengths, e.g. 4,8,16,32', { value: v });
  return n;
}

export function formatBench(r: BenchServeResult): string {
  const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '-');
  const l = r.latency_ms;
  const lines = [
    `gnnctl bench serve: model "${r.model}" at ${r.url}${r.protocol === 'grpc' ? ' (requests over gRPC)' : ''}`,
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
