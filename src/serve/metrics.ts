/**
 * A minimal Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format 0.0.4 (`# HELP`, `# TYPE`, one sample per line, histograms as cumulative `_bucket`
 * series with `le`, plus `_sum` and `_count`). No dependency, and cheap on the hot path: a sample is an
 * array lookup by a label key built once per series.
 */

export type Labels = Record<string, string>;

abstract class Metric {
  readonly series = new Map<string, { labels: Labels }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}

  abstract renderSeries(out: string[]): void;

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`);
    out.push(`# TYPE ${this.name} ${this.type}`);
    this.renderSeries(out);
  }
}

export class Counter extends Metric {
  declare readonly series: Map<string, { labels: Labels; value: number }>;

  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }

  inc(labels: Labels = {}, by = 1): void {
    this.seriesFor(labels).value += by;
  }

  /** The incrementer of one series, for hot paths (skips building the label key each time). */
  child(labels: Labels = {}): (by?: number) => void {
    const s = this.seriesFor(labels);
    return (by = 1) => {
      s.value += by;
    };
  }

  get(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.value ?? 0;
  }

  renderSeries(out: string[]): void {
    for (const s of this.series.values()) out.push(`${this.name}${formatLabels(s.labels)} ${formatNumber(s.value)}`);
  }

  private seriesFor(labels: Labels): { labels: Labels; value: number } {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels: { ...labels }, value: 0 }));
    return s;
  }
}

export class Gauge extends Metric {
  declare readonly series: Map<string, { labels: Labels; value: number }>;
  /** Called at scrape time to refresh values (e.g. event-loop utilisation). */
  private collector?: (g: Gauge) => void;

  constructor(name: string, help: string, collect?: (g: Gauge) => void) {
    super(name, help, 'gauge');
    this.collector = collect;
  }

  set(labels: Labels, value: number): void {
    const key = labelKey(labels);
    const s = this.series.get(key);
    if (s) s.value = value;
    else this.series.set(key, { labels: { ...labels }, value });
  }

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    const s = this.series.get(key);
    if (s) s.value += by;
    else this.series.set(key, { labels: { ...labels }, value: by });
  }

  dec(labels: Labels = {}, by = 1): void {
    this.inc(labels, -by);
  }

  remove(labels: Labels): void {
    this.series.delete(labelKey(labels));
  }

  get(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.value ?? 0;
  }

  override render(out: string[]): void {
    this.collector?.(this);
    super.render(out);
  }

  renderSeries(out: string[]): void {
    for (const s of this.series.values()) out.push(`${this.name}${formatLabels(s.labels)} ${formatNumber(s.value)}`);
  }
}

interface HistogramSeries {
  labels: Labels;
  counts: Float64Array;
  sum: number;
  count: number;
}

export class Histogram extends Metric {
  declare readonly series: Map<string, HistogramSeries>;
  readonly buckets: readonly number[];

  constructor(name: string, help: string, buckets: readonly number[]) {
    super(name, help, 'histogram');
    this.buckets = [...buckets].sort((a, b) => a - b);
  }

  /** The series for `labels`, for hot paths that observe many times (skips the label key). */
  child(labels: Labels = {}): (value: number) => void {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels: { ...labels }, counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const series = s;
    const buckets = this.buckets;
    return (value: number) => {
      // Non-cumulative counts; render() accumulates.
      let i = 0;
      while (i < buckets.length && value > buckets[i]!) i++;
      if (i < buckets.length) series.counts[i]!++;
      series.sum += value;
      series.count++;
    };
  }

  observe(labels: Labels, value: number): void {
    this.child(labels)(value);
  }

  /** Count and sum of a series (tests and the benchmark's breakdown). */
  stats(labels: Labels = {}): { count: number; sum: number } {
    const s = this.series.get(labelKey(labels));
    return { count: s?.count ?? 0, sum: s?.sum ?? 0 };
  }

  renderSeries(out: string[]): void {
    for (const s of this.series.values()) {
      let cum = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cum += s.counts[i]!;
        out.push(`${this.name}_bucket${formatLabels({ ...s.labels, le: formatNumber(this.buckets[i]!) })} ${cum}`);
      }
      out.push(`${this.name}_bucket${formatLabels({ ...s.labels, le: '+Inf' })} ${s.count}`);
      out.push(`${this.name}_sum${formatLabels(s.labels)} ${formatNumber(s.sum)}`);
      out.push(`${this.name}_count${formatLabels(s.labels)} ${s.count}`);
    }
  }
}

/** One sample of a collected metric. */
export interface Sample {
  labels: Labels;
  value: number;
}

/**
 * A counter or gauge whose samples are read from elsewhere at scrape time (e.g. the per-version
 * statistics behind Triton's `nv_inference_*` counters, or the process's CPU time), so the hot path
 * records each fact once.
 */
export class CollectedMetric extends Metric {
  constructor(
    name: string,
    help: string,
    type: 'counter' | 'gauge',
    private readonly collect: () => Iterable<Sample>,
  ) {
    super(name, help, type);
  }

  samples(): Sample[] {
    return [...this.collect()];
  }

  renderSeries(out: string[]): void {
    for (const s of this.collect()) out.push(`${this.name}${formatLabels(s.labels)} ${formatNumber(s.value)}`);
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  private readonly scrapeHooks: (() => void)[] = [];

  /** Runs `fn` once at the start of every render, before any metric is read. */
  onScrape(fn: () => void): void {
    this.scrapeHooks.push(fn);
  }

  /** A counter or gauge read from `collect` at each scrape. */
  collected(name: string, help: string, type: 'counter' | 'gauge', collect: () => Iterable<Sample>): CollectedMetric {
    return this.add(new CollectedMetric(name, help, type, collect));
  }

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }

  gauge(name: string, help: string, collect?: (g: Gauge) => void): Gauge {
    return this.add(new Gauge(name, help, collect));
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, buckets));
  }

  /** The exposition text (`Content-Type: text/plain; version=0.0.4`). */
  render(): string {
    for (const h of this.scrapeHooks) h();
    const out: string[] = [];
    for (const m of this.metrics) m.render(out);
    return `${out.join('\n')}\n`;
  }

  private add<M extends Metric>(m: M): M {
    if (this.metrics.some((x) => x.name === m.name)) throw new Error(`metric ${m.name} is registered twice`);
    this.metrics.push(m);
    return m;
  }
}

/** Latency buckets in seconds: 50 µs to 10 s. */
export const LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Batch-size buckets: powers of two up to 1024. */
export const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

function labelKey(labels: Labels): string {
  let k = '';
  for (const name in labels) k += `${name}\u0001${labels[name]}\u0002`;
  return k;
}

function formatLabels(labels: Labels): string {
  const parts: string[] = [];
  for (const name in labels) parts.push(`${name}="${labels[name]!.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function formatNumber(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
