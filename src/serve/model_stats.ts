/**
 * Per model version inference statistics, kept once and read two ways: as Triton's statistics extension
 * (`GET /v2/models[/{m}[/versions/{v}]]/stats`, server/docs/protocol/extension_statistics.md) and as
 * Triton's Prometheus counters (`nv_inference_*`, see `server_metrics.ts`), so dashboards, perf_analyzer
 * and model_analyzer built for Triton read gnnctl serve unchanged.
 *
 * What each figure counts, as Triton defines it:
 * - `inference_count`: rows (a request of batch 8 counts 8) of successful requests;
 *   `execution_count`: model runs (one dynamic batch counts 1).
 * - `success` / `fail`: requests and their time in the server, from the request head to the response.
 * - `queue`: per request, the wait in the dynamic batcher.
 * - `compute_input` / `compute_infer` / `compute_output`: per request, the time of its batch's input
 *   assembly (merging requests, padding), onnxruntime run (with `--ort-thread worker` the round trip to
 *   the worker) and output split. Every request of a batch is charged the whole batch's time, as in Triton.
 * - `batch_stats`: per executed batch size (rows), the count and the same three durations per batch.
 *
 * Durations are integers of nanoseconds. Cache figures are always zero: gnnctl serve has no response cache.
 */

/** Why a request failed, as Triton's `nv_inference_request_failure{reason}` names it. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

export interface DurationStat {
  count: number;
  ns: number;
}

interface BatchStat {
  count: number;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
}

/** The statistics of one model version, as the statistics extension's `$model_stat`. */
export interface ModelStatJson {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'fail' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output' | 'cache_hit' | 'cache_miss', DurationStat>;
  batch_stats: { batch_size: number; compute_input: DurationStat; compute_infer: DurationStat; compute_output: DurationStat }[];
}

const zero = (): DurationStat => ({ count: 0, ns: 0 });
const ns = (seconds: number): number => Math.round(seconds * 1e9);

export class VersionStats {
  lastInferenceMs = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success = zero();
  readonly fail = zero();
  readonly failByReason = new Map<FailureReason, number>();
  readonly queue = zero();
  readonly computeInput = zero();
  readonly computeInfer = zero();
  readonly computeOutput = zero();
  readonly batches = new Map<number, BatchStat>();

  constructor(
    readonly model: string,
    readonly version: string,
  ) {}

  /** A request answered 200 after `seconds` in the server, with `rows` rows. */
  succeeded(seconds: number, rows: number): void {
    this.success.count++;
    this.success.ns += ns(seconds);
    this.inferenceCount += rows;
    this.lastInferenceMs = Date.now();
  }

  /** A request that reached this version and failed. */
  failed(seconds: number, reason: FailureReason): void {
    this.fail.count++;
    this.fail.ns += ns(seconds);
    this.failByReason.set(reason, (this.failByReason.get(reason) ?? 0) + 1);
    this.lastInferenceMs = Date.now();
  }

  queued(seconds: number): void {
    this.queue.count++;
    this.queue.ns += ns(seconds);
  }

  /** One successful model run of `rows` rows serving `requests` requests. */
  executed(rows: number, requests: number, inputS: number, inferS: number, outputS: number): void {
    this.executionCount++;
    const [i, f, o] = [ns(inputS), ns(inferS), ns(outputS)];
    this.computeInput.count += requests;
    this.computeInput.ns += i * requests;
    this.computeInfer.count += requests;
    this.computeInfer.ns += f * requests;
    this.computeOutput.count += requests;
    this.computeOutput.ns += o * requests;
    let b = this.batches.get(rows);
    if (!b) this.batches.set(rows, (b = { count: 0, compute_input: zero(), compute_infer: zero(), compute_output: zero() }));
    b.count++;
    b.compute_input.count++;
    b.compute_input.ns += i;
    b.compute_infer.count++;
    b.compute_infer.ns += f;
    b.compute_output.count++;
    b.compute_output.ns += o;
  }

  toJson(): ModelStatJson {
    const copy = (d: DurationStat): DurationStat => ({ count: d.count, ns: d.ns });
    return {
      name: this.model,
      version: this.version,
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: copy(this.success),
        fail: copy(this.fail),
        queue: copy(this.queue),
        compute_input: copy(this.computeInput),
        compute_infer: copy(this.computeInfer),
        compute_output: copy(this.computeOutput),
        cache_hit: zero(),
        cache_miss: zero(),
      },
      batch_stats: [...this.batches.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([size, b]) => ({ batch_size: size, compute_input: copy(b.compute_input), compute_infer: copy(b.compute_infer), compute_output: copy(b.compute_output) })),
    };
  }
}

/**
 * The statistics of every model version served since the server started. A version's statistics
 * outlive its session (a reload of the same version keeps counting), as Triton's do.
 */
export class StatsTable {
  private readonly byKey = new Map<string, VersionStats>();

  of(model: string, version: string): VersionStats {
    const key = `${model}\u0000${version}`;
    let s = this.byKey.get(key);
    if (!s) this.byKey.set(key, (s = new VersionStats(model, version)));
    return s;
  }

  all(): IterableIterator<VersionStats> {
    return this.byKey.values();
  }
}
