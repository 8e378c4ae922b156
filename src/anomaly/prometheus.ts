/**
 * Snapshots from a Prometheus HTTP API (`/api/v1/query_range`), for `anomaly watch --prometheus URL`.
 * The config's `anomaly.prometheus` maps each node feature column to a PromQL expression returning one
 * series per service (label `service_label`), and each edge column — the rate column and the edge
 * feature columns the run was fitted with — to one returning one series per call edge (labels
 * `source_label`, `destination_label`). Each evaluation step becomes one snapshot.
 */
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { ConfigError, DataError } from '../core/errors.js';
import type { Snapshot } from './source.js';

interface Matrix {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; values: [number, string][] }[] };
}

export interface PromReadSpec {
  prometheus: NonNullable<AnomalyConfig['prometheus']>;
  featureColumns: string[];
  rateColumn: string;
  edgeFeatureColumns: string[];
}

/** Checks that the config names a query for every column the run needs (before the first poll). */
export function checkPrometheusConfig(a: AnomalyConfig, featureColumns: string[], edgeFeatureColumns: string[]): PromReadSpec {
  const p = a.prometheus;
  if (!p) throw new ConfigError('`--prometheus` needs an `anomaly.prometheus` block', [], { where: 'anomaly.prometheus', hint: 'map each metrics column to a PromQL query: anomaly.prometheus.metrics: { request_rate: \'sum by (service) (rate(requests_total[1m]))\', … }' });
  const rateColumn = a.calls?.rate_column ?? 'requests_per_second';
  const problems = [
    ...featureColumns.filter((c) => !(c in p.metrics)).map((c) => ({ path: `anomaly.prometheus.metrics.${c}`, message: `the run uses node feature "${c}" but no query is given`, hint: `add ${c}: <PromQL returning one series per ${p.service_label}>` })),
    ...[rateColumn, ...edgeFeatureColumns].filter((c) => !(c in p.calls)).map((c) => ({ path: `anomaly.prometheus.calls.${c}`, message: `the run uses edge column "${c}" but no query is given`, hint: `add ${c}: <PromQL returning one series per (${p.source_label}, ${p.destination_label})>` })),
  ];
  if (problems.length) throw new ConfigError(`anomaly.prometheus does not cover the run's columns`, problems);
  return { prometheus: p, featureColumns, rateColumn, edgeFeatureColumns };
}

async function queryRange(base: string, query: string, start: number, end: number, step: number): Promise<NonNullable<Matrix['data']>['result']> {
  const url = new URL('api/v1/query_range', base.endsWith('/') ? base : `${base}/`);
  url.searchParams.set('query', query);
  url.searchParams.set('start', String(start));
  url.searchParams.set('end', String(end));
  url.searchParams.set('step', String(step));
  let body: Matrix;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    body = (await res.json()) as Matrix;
  } catch (e) {
    throw new DataError(`cannot query Prometheus at ${base}: ${(e as Error).message}`, { where: '--prometheus', hint: 'check the URL (e.g. http://127.0.0.1:9090) and that Prometheus is up' });
  }
  if (body.status !== 'success' || !body.data) throw new DataError(`Prometheus rejected the query ${JSON.stringify(query)}: ${body.error ?? 'no data'}`, { where: 'anomaly.prometheus', hint: 'try the query in the Prometheus UI' });
  return body.data.result;
}

/** Snapshots at start, start + step, …, end (aligned to the step), those with at least one service. */
export async function readPrometheus(base: string, spec: PromReadSpec, start: number, end: number): Promise<Snapshot[]> {
  const p = spec.prometheus;
  const step = p.step;
  const F = spec.featureColumns.length;
  const Fe = spec.edgeFeatureColumns.length;
  const nodes = new Map<number, Map<string, Float32Array>>();
  for (const [f, col] of spec.featureColumns.entries()) {
    for (const series of await queryRange(base, p.metrics[col]!, start, end, step)) {
      const svc = series.metric[p.service_label];
      if (svc === undefined) continue;
      for (const [t, v] of series.values) {
        let at = nodes.get(t);
        if (!at) nodes.set(t, (at = new Map()));
        let row = at.get(svc);
        if (!row) at.set(svc, (row = new Float32Array(F).fill(Number.NaN)));
        row[f] = Number(v);
      }
    }
  }
  const edgeCols = [spec.rateColumn, ...spec.edgeFeatureColumns];
  const edges = new Map<number, Map<string, Float32Array>>();
  for (const [f, col] of edgeCols.entries()) {
    for (const series of await queryRange(base, p.calls[col]!, start, end, step)) {
      const s = series.metric[p.source_label];
      const d = series.metric[p.destination_label];
      if (s === undefined || d === undefined) continue;
      for (const [t, v] of series.values) {
        let at = edges.get(t);
        if (!at) edges.set(t, (at = new Map()));
        const key = `${s}\u0000${d}`;
        let row = at.get(key);
        if (!row) at.set(key, (row = new Float32Array(1 + Fe).fill(Number.NaN)));
        row[f] = Number(v);
      }
    }
  }
  const out: Snapshot[] = [];
  for (const t of [...nodes.keys()].sort((x, y) => x - y)) {
    const at = nodes.get(t)!;
    const services = [...at.keys()].sort();
    const index = new Map(services.map((s, i) => [s, i]));
    const features = new Float32Array(services.length * F);
    services.forEach((s, i) => features.set(at.get(s)!, i * F));
    const src: number[] = [];
    const dst: number[] = [];
    const rate: number[] = [];
    const ef: number[] = [];
    for (const [key, row] of [...(edges.get(t) ?? new Map<string, Float32Array>())].sort(([x], [y]) => (x < y ? -1 : 1))) {
      const [s, d] = key.split('\u0000') as [string, string];
      const si = index.get(s);
      const di = index.get(d);
      if (si === undefined || di === undefined || si === di || !(row[0]! >= 0)) continue;
      src.push(si);
      dst.push(di);
      rate.push(row[0]!);
      for (let f = 0; f < Fe; f++) ef.push(row[1 + f]!);
    }
    out.push({ ts: t, services, features, src: Int32Array.from(src), dst: Int32Array.from(dst), rate: Float32Array.from(rate), edgeFeatures: Float32Array.from(ef) });
  }
  return out;
}
