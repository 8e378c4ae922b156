/**
 * The metrics `gnnctl serve` exports on `GET /metrics`, and the hooks that feed them.
 *
 * `gnnctl_request_phase_seconds_total{phase}` answers "where does the time go": summed over requests
 * (batch phases over batches), divided by `gnnctl_inference_requests_total` it is the mean time per
 * request in each of: `read` (body bytes arriving), `parse` (JSON), `decode` (validation and typed
 * arrays), `queue` (waiting for a batch), `merge`, `compute` (onnxruntime; with `--ort-thread worker` the
 * round trip to the worker thread), `split`, `respond` (response JSON and the socket write). `read` and
 * `queue` are waiting, not work; the rest is main-thread time.
 */
import { monitorEventLoopDelay, performance as perf, type IntervalHistogram } from 'node:perf_hooks';
import type { BatcherObserver } from './batcher.js';
import { BATCH_BUCKETS, LATENCY_BUCKETS, Registry, type Counter, type Gauge, type Histogram, type Sample } from './metrics.js';
import { StatsTable, type DurationStat, type VersionStats } from './model_stats.js';
import { registerProcessMetrics } from './process_metrics.js';

/** When a served version's embeddings were computed (the export manifest's `embeddings[].anchor_time`). */
export interface EmbeddingAnchor {
  table: string;
  /** Unix seconds. */
  anchorSeconds: number;
}

export type Phase = 'read' | 'parse' | 'decode' | 'queue' | 'merge' | 'compute' | 'split' | 'respond';

export class ServerMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter;
  readonly inferRequests: Counter;
  readonly requestDuration: Histogram;
  readonly queueDuration: Histogram;
  readonly computeDuration: Histogram;
  readonly batchSize: Histogram;
  readonly phaseSeconds: Counter;
  readonly inflight: Gauge;
  readonly modelInfo: Gauge;
  readonly modelLoads: Counter;
  readonly trafficWeight: Gauge;
  readonly filesDamaged: Gauge;
  readonly connections: Gauge;
  readonly connectionsDropped: Counter;
  /** Per model version statistics (the statistics extension and the `nv_inference_*` counters). */
  readonly stats = new StatsTable();
  /** `model\0version` → the version's embedding anchors, while it is loaded. */
  private readonly anchors = new Map<string, { model: string; version: string; anchors: EmbeddingAnchor[] }>();
  /** Reads the requests waiting in each version's batcher (set by the server once the manager exists). */
  pendingSource: () => { model: string; version: number; count: number }[] = () => [];
  private readonly loopDelay: IntervalHistogram;
  private readonly phaseChildren = new Map<Phase, (by?: number) => void>();
  private readonly cached = new Map<string, (by?: number) => void>();
  private eluLast = perf.eventLoopUtilization();

  constructor() {
    const r = this.registry;
    this.httpRequests = r.counter('gnnctl_http_requests_total', 'HTTP requests by method, route and status code.');
    this.inferRequests = r.counter('gnnctl_inference_requests_total', 'Inference requests by model, version and outcome (success or failure).');
    this.requestDuration = r.histogram('gnnctl_inference_request_duration_seconds', 'Inference request time in the server, from the request head to the response written.', LATENCY_BUCKETS);
    this.queueDuration = r.histogram('gnnctl_inference_queue_duration_seconds', 'Time a request waited in the dynamic batcher before its batch started.', LATENCY_BUCKETS);
    this.computeDuration = r.histogram('gnnctl_inference_compute_duration_seconds', 'Time of one onnxruntime run (one batch).', LATENCY_BUCKETS);
    this.batchSize = r.histogram('gnnctl_inference_batch_size', 'Rows per executed batch.', BATCH_BUCKETS);
    this.phaseSeconds = r.counter('gnnctl_request_phase_seconds_total', 'Seconds spent in each phase of inference, summed over requests (batch phases over batches).');
    this.inflight = r.gauge('gnnctl_inflight_requests', 'Inference requests received and not yet answered.');
    this.modelInfo = r.gauge('gnnctl_model_info', 'Loaded model versions (value 1), with platform and the thread their sessions run on.');
    this.trafficWeight = r.gauge('gnnctl_model_traffic_weight', 'Share of the requests without a version that each loaded model version gets (a canary rollout splits it; see rollout.json).');
    this.filesDamaged = r.gauge('gnnctl_model_files_damaged', 'Loaded model versions whose files no longer load (value 1): they keep serving from memory until the files are repaired; alert on it.');
    this.connections = r.gauge('gnnctl_http_connections', 'Open client connections (HTTP or HTTPS).');
    this.connectionsDropped = r.counter('gnnctl_http_connections_dropped_total', 'Connections the server closed without answering a request, by reason: limit (--max-connections reached; the oldest connection without a request goes), per_client, headers_timeout, shutdown.');
    this.modelLoads = r.counter('gnnctl_model_loads_total', 'Model version loads by model and outcome (loaded or refused).');
    this.loopDelay = monitorEventLoopDelay({ resolution: 10 });
    this.loopDelay.enable();
    r.gauge('gnnctl_event_loop_utilization', 'Share of time the main thread was busy since the previous scrape.', (g) => {
      const now = perf.eventLoopUtilization();
      g.set({}, perf.eventLoopUtilization(now, this.eluLast).utilization);
      this.eluLast = now;
    });
    // Plain gauges named after the percentile, as Node's prom-client names them: a `quantile` label is
    // reserved for summaries, whose `_sum` and `_count` a windowed event-loop histogram cannot give.
    const delay = { p50: 0, p99: 0, max: 0 };
    r.onScrape(() => {
      delay.p50 = this.loopDelay.percentile(50) / 1e9;
      delay.p99 = this.loopDelay.percentile(99) / 1e9;
      delay.max = this.loopDelay.max / 1e9;
      this.loopDelay.reset();
    });
    r.collected('gnnctl_event_loop_delay_p50_seconds', 'Median event-loop delay since the previous scrape.', 'gauge', () => [{ labels: {}, value: delay.p50 }]);
    r.collected('gnnctl_event_loop_delay_p99_seconds', '99th percentile of the event-loop delay since the previous scrape.', 'gauge', () => [{ labels: {}, value: delay.p99 }]);
    r.collected('gnnctl_event_loop_delay_max_seconds', 'Largest event-loop delay since the previous scrape.', 'gauge', () => [{ labels: {}, value: delay.max }]);
    this.inflight.set({}, 0);

    r.collected('gnnctl_embedding_anchor_timestamp_seconds', 'Anchor time of the embeddings baked into each served model version (Unix seconds), per embedded table.', 'gauge', () =>
      this.anchorSamples((a) => a.anchorSeconds),
    );
    r.collected('gnnctl_embedding_age_seconds', 'Seconds since the anchor time of the embeddings each served model version uses, per embedded table: alert when the daily refresh stops.', 'gauge', () => {
      const now = Date.now() / 1000;
      return this.anchorSamples((a) => now - a.anchorSeconds);
    });

    const perVersion = (value: (s: VersionStats) => number) => (): Sample[] => [...this.stats.all()].map((s) => ({ labels: { model: s.model, version: s.version }, value: value(s) }));
    const us = (d: DurationStat) => Math.round(d.ns / 1000);
    r.collected('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', 'counter', perVersion((s) => s.success.count));
    r.collected('nv_inference_request_failure', 'Number of failed inference requests, all batch sizes', 'counter', () =>
      [...this.stats.all()].flatMap((s) => [...s.failByReason].map(([reason, n]) => ({ labels: { model: s.model, reason, version: s.version }, value: n }))),
    );
    r.collected('nv_inference_pending_request_count', 'Instantaneous number of pending requests awaiting execution per-model.', 'gauge', () =>
      this.pendingSource().map((p) => ({ labels: { model: p.model, version: String(p.version) }, value: p.count })),
    );
    r.collected('nv_inference_count', 'Number of inferences performed (does not include cached requests)', 'counter', perVersion((s) => s.inferenceCount));
    r.collected('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', 'counter', perVersion((s) => s.executionCount));
    r.collected('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', 'counter', perVersion((s) => us(s.success)));
    r.collected('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', 'counter', perVersion((s) => us(s.queue)));
    r.collected('nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', 'counter', perVersion((s) => us(s.computeInput)));
    r.collected('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', 'counter', perVersion((s) => us(s.computeInfer)));
    r.collected('nv_inference_compute_output_duration_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', 'counter', perVersion((s) => us(s.computeOutput)));
    registerProcessMetrics(r);
  }

  /** Records the embedding anchors of a version now serving (replacing any earlier ones). */
  setEmbeddingAnchors(model: string, version: string, anchors: EmbeddingAnchor[]): void {
    if (anchors.length === 0) this.anchors.delete(`${model}\u0000${version}`);
    else this.anchors.set(`${model}\u0000${version}`, { model, version, anchors });
  }

  /** Forgets a version's anchors once it no longer serves. */
  removeEmbeddingAnchors(model: string, version: string): void {
    this.anchors.delete(`${model}\u0000${version}`);
  }

  private anchorSamples(value: (a: EmbeddingAnchor) => number): Sample[] {
    return [...this.anchors.values()].flatMap((v) => v.anchors.map((a) => ({ labels: { model: v.model, version: v.version, table: a.table }, value: value(a) })));
  }

  phase(phase: Phase, seconds: number): void {
    let c = this.phaseChildren.get(phase);
    if (!c) this.phaseChildren.set(phase, (c = this.phaseSeconds.child({ phase })));
    c(seconds);
  }

  /** Counts one HTTP response. */
  http(method: string, route: string, status: number): void {
    const key = `h\u0001${method}\u0001${route}\u0001${status}`;
    let c = this.cached.get(key);
    if (!c) this.cached.set(key, (c = this.httpRequests.child({ method, route, status: String(status) })));
    c();
  }

  /** Counts one inference request by outcome. */
  inference(model: string, version: string, outcome: 'success' | 'failure'): void {
    const key = `i\u0001${model}\u0001${version}\u0001${outcome}`;
    let c = this.cached.get(key);
    if (!c) this.cached.set(key, (c = this.inferRequests.child({ model, version, outcome })));
    c();
  }

  /** Hooks for one model version's batcher. */
  batcherObserver(model: string, version: number): BatcherObserver {
    const labels = { model, version: String(version) };
    const queue = this.queueDuration.child(labels);
    const compute = this.computeDuration.child(labels);
    const batch = this.batchSize.child(labels);
    const stats = this.stats.of(model, String(version));
    return {
      queue: (s) => {
        queue(s);
        stats.queued(s);
        this.phase('queue', s);
      },
      executed: (rows, requests, input, infer, output) => stats.executed(rows, requests, input, infer, output),
      merge: (s) => this.phase('merge', s),
      compute: (s) => {
        compute(s);
        this.phase('compute', s);
      },
      split: (s) => this.phase('split', s),
      batch: (rows) => batch(rows),
    };
  }

  close(): void {
    this.loopDelay.disable();
  }
}
