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
import { BATCH_BUCKETS, LATENCY_BUCKETS, Registry, type Counter, type Gauge, type Histogram } from './metrics.js';

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
    this.modelLoads = r.counter('gnnctl_model_loads_total', 'Model version loads by model and outcome (loaded or refused).');
    this.loopDelay = monitorEventLoopDelay({ resolution: 10 });
    this.loopDelay.enable();
    r.gauge('gnnctl_event_loop_utilization', 'Share of time the main thread was busy since the previous scrape.', (g) => {
      const now = perf.eventLoopUtilization();
      g.set({}, perf.eventLoopUtilization(now, this.eluLast).utilization);
      this.eluLast = now;
    });
    r.gauge('gnnctl_event_loop_delay_seconds', 'Event-loop delay percentiles since the previous scrape.', (g) => {
      for (const p of [50, 99]) g.set({ quantile: String(p / 100) }, this.loopDelay.percentile(p) / 1e9);
      g.set({ quantile: '1' }, this.loopDelay.max / 1e9);
      this.loopDelay.reset();
    });
    this.inflight.set({}, 0);
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
    return {
      queue: (s) => {
        queue(s);
        this.phase('queue', s);
      },
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
