/**
 * Baseline 1: static per-service thresholds, as a team would set them in Prometheus alerting rules —
 * p99 latency above its warm-up 99th percentile, or error rate above its warm-up 99th percentile, on
 * any service. Each service's rule alerts (and pages) on its own when max(latency_i / τ_lat,i,
 * errors_i / τ_err,i) > 1. It knows nothing of the graph or of planned changes.
 */
import { quantile } from './threshold.js';
import type { Snapshot } from './source.js';

export interface StaticThresholds {
  latency_column: string | null;
  error_column: string | null;
  /** service → [latency threshold, error threshold] */
  services: Record<string, [number, number]>;
}

/** The latency and error columns among the node features (p99 preferred), or null. */
export function staticColumns(featureColumns: string[]): { latency: number; error: number } | null {
  const find = (re: RegExp[]): number => {
    for (const r of re) {
      const i = featureColumns.findIndex((c) => r.test(c));
      if (i >= 0) return i;
    }
    return -1;
  };
  const latency = find([/p99/i, /latency/i]);
  const error = find([/error/i, /fail/i]);
  return latency < 0 || error < 0 ? null : { latency, error };
}

export function fitStatic(warmup: Snapshot[], featureColumns: string[], q = 0.99): StaticThresholds | null {
  const cols = staticColumns(featureColumns);
  if (!cols) return null;
  const F = featureColumns.length;
  const values = new Map<string, [number[], number[]]>();
  for (const s of warmup) {
    s.services.forEach((name, i) => {
      let v = values.get(name);
      if (!v) values.set(name, (v = [[], []]));
      const lat = s.features[i * F + cols.latency]!;
      const err = s.features[i * F + cols.error]!;
      if (!Number.isNaN(lat)) v[0].push(lat);
      if (!Number.isNaN(err)) v[1].push(err);
    });
  }
  const services: Record<string, [number, number]> = {};
  for (const [name, [lat, err]] of values) services[name] = [quantile(lat, q), quantile(err, q)];
  return { latency_column: featureColumns[cols.latency]!, error_column: featureColumns[cols.error]!, services };
}

/** The static detector on one snapshot: the worst ratio to a threshold, and the services above theirs. */
export function staticAlerts(t: StaticThresholds, s: Snapshot, featureColumns: string[]): { score: number; services: string[] } {
  const F = featureColumns.length;
  const li = featureColumns.indexOf(t.latency_column!);
  const ei = featureColumns.indexOf(t.error_column!);
  let worst = 0;
  const over: string[] = [];
  s.services.forEach((name, i) => {
    const th = t.services[name];
    if (!th) return; // a service born after the warm-up has no static rule yet
    const r = Math.max(th[0] > 0 ? s.features[i * F + li]! / th[0] : 0, th[1] > 0 ? s.features[i * F + ei]! / th[1] : 0);
    if (r > worst) worst = r;
    if (r > 1) over.push(name);
  });
  return { score: worst, services: over };
}
