/**
 * Baseline 1: static per-service thresholds, as a team would set them in Prometheus alerting rules —
 * every latency and error column above its warm-up 99th percentile, on any service. Each service's rule
 * alerts (and pages) on its own when max_c(value_c,i / τ_c,i) > 1. It knows nothing of the graph or of
 * planned changes. As a root-cause ranking it names the services by that ratio, largest first.
 */
import { quantile } from './threshold.js';
import type { Snapshot } from './source.js';

export interface StaticThresholds {
  /** the latency and error columns the rules watch, in feature order */
  columns: string[];
  /** service → threshold per column (0: the column was 0 throughout, no rule) */
  services: Record<string, number[]>;
}

/** Columns a static alerting rule is written on: latencies (p50…p99, durations) and errors/failures. */
const STATIC_COLUMN = /latency|duration|p\d{2}\b|p\d{2}[^a-z]|error|fail|5xx/i;

/** The latency and error columns among the node features, in feature order. */
export function staticColumns(featureColumns: string[]): string[] {
  return featureColumns.filter((c) => STATIC_COLUMN.test(c));
}

export function fitStatic(warmup: Snapshot[], featureColumns: string[], q = 0.99): StaticThresholds | null {
  const columns = staticColumns(featureColumns);
  if (columns.length === 0) return null;
  const idx = columns.map((c) => featureColumns.indexOf(c));
  const F = featureColumns.length;
  const values = new Map<string, number[][]>();
  for (const s of warmup) {
    s.services.forEach((name, i) => {
      let v = values.get(name);
      if (!v) values.set(name, (v = idx.map(() => [])));
      idx.forEach((f, c) => {
        const x = s.features[i * F + f]!;
        if (!Number.isNaN(x)) v[c]!.push(x);
      });
    });
  }
  const services: Record<string, number[]> = {};
  for (const [name, cols] of values) services[name] = cols.map((xs) => (xs.length ? quantile(xs, q) : 0));
  return { columns, services };
}

/** A run fitted with one latency and one error column (the older shape) read as the general one. */
function general(t: StaticThresholds | { latency_column: string | null; error_column: string | null; services: Record<string, [number, number]> }): StaticThresholds {
  if ('columns' in t) return t;
  return { columns: [t.latency_column!, t.error_column!], services: t.services };
}

/** Per service, the largest ratio of a watched column to its threshold (services without a rule: 0). */
export function staticRatios(thresholds: StaticThresholds, s: Snapshot, featureColumns: string[]): Float64Array {
  const t = general(thresholds);
  const F = featureColumns.length;
  const idx = t.columns.map((c) => featureColumns.indexOf(c));
  const out = new Float64Array(s.services.length);
  s.services.forEach((name, i) => {
    const th = t.services[name];
    if (!th) return; // a service born after the warm-up has no static rule yet
    let r = 0;
    idx.forEach((f, c) => {
      const x = s.features[i * F + f]!;
      if (f >= 0 && th[c]! > 0 && x / th[c]! > r) r = x / th[c]!;
    });
    out[i] = r;
  });
  return out;
}

/** The static detector on one snapshot: the worst ratio to a threshold, and the services above theirs. */
export function staticAlerts(t: StaticThresholds, s: Snapshot, featureColumns: string[]): { score: number; services: string[] } {
  const r = staticRatios(t, s, featureColumns);
  let worst = 0;
  const over: string[] = [];
  s.services.forEach((name, i) => {
    if (r[i]! > worst) worst = r[i]!;
    if (r[i]! > 1) over.push(name);
  });
  return { score: worst, services: over };
}
