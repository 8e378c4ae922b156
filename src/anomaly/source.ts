/**
 * The `anomaly:` sources → snapshots. A snapshot is one distinct value of the metrics table's time
 * column: the services scraped then (node features) and the calls between them (edges). Services may come
 * and go between snapshots; a call whose endpoint has no metrics row at that time is dropped (counted in
 * `dropped_edges`), since a node without features cannot be encoded.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { Config } from '../config/load.js';
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { ConfigError, DataError, suggest } from '../core/errors.js';
import { lit, q, queryRows, readColumns, readStrings } from '../data/duck.js';
import { firstLine } from '../data/source.js';
import { serviceSql } from './pod_service.js';
import { buildSpanCalls, SPAN_CALLS, type SpanCalls } from './spans.js';

export type SourceName = 'metrics' | 'calls' | 'spans' | 'events' | 'labels';

/** One snapshot with raw (not yet standardised) values. */
export interface Snapshot {
  /** epoch seconds */
  ts: number;
  services: string[];
  /** [services × feature columns], row-major; NaN where the scrape had no value */
  features: Float32Array;
  src: Int32Array;
  dst: Int32Array;
  rate: Float32Array;
  /** [edges × edge feature columns] */
  edgeFeatures: Float32Array;
}

export interface PlannedEvent {
  ts: number;
  service: string;
  kind: string;
}

export interface Incident {
  start: number;
  end: number;
  kind: string;
  /** the root-cause service, when the labels name one */
  root_cause?: string;
}

export interface LoadedSnapshots {
  snapshots: Snapshot[];
  featureColumns: string[];
  edgeFeatureColumns: string[];
  droppedEdges: number;
  /** snapshots with no call edge (their structure term sees only self-loops) */
  emptySnapshots: number;
  /** when the calls were built from spans */
  spans?: SpanCalls;
}

/** The config's anomaly block, or a config error saying how to add it. */
export function anomalyConfig(cfg: Config): AnomalyConfig {
  if (!cfg.anomaly) {
    throw new ConfigError(`${cfg.path || 'config'} has no \`anomaly:\` block`, [], {
      hint: 'add anomaly: { metrics: { path: metrics.csv }, calls: { path: calls.csv } } (see docs/config.md), or generate one with `gnnctl datasets synth-mesh`',
    });
  }
  return cfg.anomaly;
}

/** Creates the view `anomaly_<name>` over a source; returns its columns (name → DuckDB type). */
export async function openSource(conn: DuckDBConnection, cfg: Config, name: SourceName): Promise<Map<string, string>> {
  const a = anomalyConfig(cfg);
  const src = a[name];
  if (!src && name === 'calls' && a.spans) throw new ConfigError('anomaly.calls is built from anomaly.spans here', [], { where: 'anomaly.calls', hint: 'read calls through loadSnapshots' });
  if (!src) throw new ConfigError(`anomaly.${name} is not configured`, [], { where: `anomaly.${name}`, hint: `add anomaly.${name}: { path: … }` });
  const where = `anomaly.${name}`;
  const base = cfg.data.root ? resolve(dirname(cfg.path || '.'), cfg.data.root) : cfg.path ? dirname(cfg.path) : process.cwd();
  let from: string;
  if (src.database !== undefined) {
    const db = isAbsolute(src.database) ? src.database : resolve(base, src.database);
    if (!existsSync(db)) throw new DataError(`database file not found: ${db}`, { where: `${where}.database`, hint: 'relative paths resolve against data.root or the config file\'s folder' });
    await conn.run(`ATTACH IF NOT EXISTS ${lit(db)} AS ${q(`db_${name}`)} (READ_ONLY)`);
    from = `${q(`db_${name}`)}.${q(src.table ?? name)}`;
  } else {
    const paths = (Array.isArray(src.path) ? src.path : [src.path!]).map((p) => (isAbsolute(p) ? p : resolve(base, p)));
    for (const p of paths) {
      if (!/[*?[\]{}]/.test(p) && !existsSync(p)) {
        throw new DataError(`file not found: ${p}`, { where: `${where}.path`, hint: 'relative paths resolve against data.root or the config file\'s folder' });
      }
    }
    const list = `[${paths.map(lit).join(', ')}]`;
    const parquet = (src.format ?? (/\.parquet$/i.test(paths[0]!) ? 'parquet' : 'csv')) === 'parquet';
    const opts = Object.entries(src.csv ?? {}).map(([k, v]) => `${k} = ${Array.isArray(v) ? `[${v.map(lit).join(', ')}]` : typeof v === 'string' ? lit(v) : String(v)}`);
    from = parquet ? `read_parquet(${list}, union_by_name = true)` : `read_csv(${[list, 'union_by_name = true', ...opts].join(', ')})`;
  }
  try {
    await conn.run(`CREATE OR REPLACE VIEW ${q(`anomaly_${name}`)} AS SELECT * FROM ${from}`);
    const cols = await queryRows<{ name: string; type: string }>(conn, `SELECT column_name AS name, column_type AS type FROM (DESCRIBE ${q(`anomaly_${name}`)})`);
    return new Map(cols.map((c) => [c.name, c.type]));
  } catch (e) {
    throw new DataError(`cannot read ${where}: ${firstLine(e)}`, { where, hint: 'check the file; CSV reader options go under `csv:`' });
  }
}

/** The files behind a source (paths as configured, resolved; a glob stays a pattern), for the manifest. */
export function sourcePaths(cfg: Config, name: SourceName): string[] {
  const src = anomalyConfig(cfg)[name];
  if (!src) return [];
  const base = cfg.data.root ? resolve(dirname(cfg.path || '.'), cfg.data.root) : cfg.path ? dirname(cfg.path) : process.cwd();
  const raw = src.database !== undefined ? [src.database] : Array.isArray(src.path) ? src.path : [src.path!];
  return raw.map((p) => (isAbsolute(p) ? p : resolve(base, p)));
}

async function describe(conn: DuckDBConnection, view: string): Promise<[string, string][]> {
  const cols = await queryRows<{ name: string; type: string }>(conn, `SELECT column_name AS name, column_type AS type FROM (DESCRIBE ${q(view)})`);
  return cols.map((x) => [x.name, x.type]);
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|REAL|DECIMAL.*)$/;

function requireColumn(cols: Map<string, string>, col: string, where: string, field: string): string {
  if (!cols.has(col)) {
    throw new DataError(`column "${col}" not found`, { where: `${where}.${field}`, hint: `${suggest(col, [...cols.keys()])}; rename it with ${where}.${field}` });
  }
  return cols.get(col)!;
}

/** SQL for epoch seconds of a time column that holds timestamps, dates, ISO strings or epoch numbers. */
export function epochSql(col: string, type: string): string {
  if (NUMERIC.test(type)) return `${q(col)}::DOUBLE`;
  if (/^(TIMESTAMP|DATE)/.test(type)) return `epoch(${q(col)}::TIMESTAMP)::DOUBLE`;
  // Strings: a timestamp DuckDB parses, else the leading ISO date-time (Go's time.String() appends
  // " +0000 UTC m=+0.11" to it, which no cast accepts); read as UTC.
  return `coalesce(epoch(try_cast(${q(col)} AS TIMESTAMP)), epoch(try_cast(regexp_extract(${q(col)}::VARCHAR, '^\\s*(\\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d(:\\d\\d(\\.\\d+)?)?)', 1) AS TIMESTAMP)))::DOUBLE`;
}

export interface TimeRange {
  /** epoch seconds, inclusive */
  from?: number;
  /** epoch seconds, exclusive */
  until?: number;
}

function rangeSql(t: string, r: TimeRange): string {
  const parts = [r.from !== undefined ? `${t} >= ${r.from}` : '', r.until !== undefined ? `${t} < ${r.until}` : ''].filter(Boolean);
  return parts.length ? `WHERE ${parts.join(' AND ')}` : '';
}

/** Epoch seconds of a metrics row's snapshot: its time, floored to `snapshot_seconds` when set. */
function metricsTimeSql(a: AnomalyConfig, cols: Map<string, string>): string {
  const t = epochSql(a.metrics.ts_column, requireColumn(cols, a.metrics.ts_column, 'anomaly.metrics', 'ts_column'));
  return a.snapshot_seconds ? `(floor(${t} / ${a.snapshot_seconds}) * ${a.snapshot_seconds})` : t;
}

/** All snapshot times in the range (the metrics table's distinct times), ascending. */
export async function snapshotTimes(conn: DuckDBConnection, cfg: Config, range: TimeRange = {}): Promise<number[]> {
  const a = anomalyConfig(cfg);
  const cols = await openSource(conn, cfg, 'metrics');
  const t = metricsTimeSql(a, cols);
  const rows = await queryRows<{ t: number }>(conn, `SELECT DISTINCT ${t} AS t FROM anomaly_metrics ${rangeSql(t, range)} ORDER BY 1`);
  return rows.map((r) => Number(r.t));
}

/** The call table's columns: the configured ones, or those of the table built from spans. */
function callColumns(a: AnomalyConfig): { ts: string; source: string; destination: string; rate: string; features?: string[]; where: string } {
  if (a.calls) return { ts: a.calls.ts_column, source: a.calls.source_column, destination: a.calls.destination_column, rate: a.calls.rate_column, features: a.calls.feature_columns, where: 'anomaly.calls' };
  return { ...SPAN_CALLS, where: 'anomaly.spans' };
}

/** Reads the snapshots in a time range. Feature column lists come from the config, else from the data. */
export async function loadSnapshots(conn: DuckDBConnection, cfg: Config, range: TimeRange, fixed?: { featureColumns: string[]; edgeFeatureColumns: string[] }): Promise<LoadedSnapshots> {
  const a = anomalyConfig(cfg);
  const m = a.metrics;
  const c = callColumns(a);
  const mcols = await openSource(conn, cfg, 'metrics');
  const mt = metricsTimeSql(a, mcols);
  requireColumn(mcols, m.service_column, 'anomaly.metrics', 'service_column');
  const featureColumns = fixed?.featureColumns ?? m.feature_columns ?? [...mcols].filter(([k, v]) => k !== m.ts_column && k !== m.service_column && NUMERIC.test(v)).map(([k]) => k);
  for (const f of featureColumns) {
    const type = requireColumn(mcols, f, 'anomaly.metrics', 'feature_columns');
    if (!NUMERIC.test(type)) throw new DataError(`feature column "${f}" is ${type}, not numeric`, { where: 'anomaly.metrics.feature_columns', hint: 'list numeric columns only' });
  }
  if (featureColumns.length === 0) throw new DataError('the metrics table has no numeric columns to use as node features', { where: 'anomaly.metrics', hint: 'add numeric columns (request_rate, error_rate, latency, …) or list them in feature_columns' });
  // One row per (snapshot, service): pods of one service (replicas, or a replaced pod in the same
  // minute) and scrapes within one snapshot interval are averaged. A table, not a view: the queries below
  // read it three times, and a glob of CSV files costs seconds per scan.
  const svc = serviceSql(`${q(m.service_column)}::VARCHAR`, m.service_from);
  await conn.run(`CREATE OR REPLACE TEMP TABLE anomaly_metrics_snap AS
    SELECT ${mt} AS t, ${svc} AS service, ${featureColumns.map((f, k) => `avg(${q(f)}::DOUBLE) AS f${k}`).join(', ')}
    FROM anomaly_metrics WHERE ${q(m.service_column)} IS NOT NULL GROUP BY 1, 2`);

  let spans: SpanCalls | undefined;
  let ccols: Map<string, string>;
  if (a.spans) {
    await openSource(conn, cfg, 'spans');
    spans = await buildSpanCalls(conn, a, new Map(await describe(conn, 'anomaly_spans')), range, `anomaly_metrics_snap ${rangeSql('t', range)}`);
    ccols = new Map(await describe(conn, 'anomaly_calls'));
  } else {
    ccols = await openSource(conn, cfg, 'calls');
  }
  const ctRaw = epochSql(c.ts, requireColumn(ccols, c.ts, c.where, 'ts_column'));
  const ct = a.snapshot_seconds && a.calls ? `(floor(${ctRaw} / ${a.snapshot_seconds}) * ${a.snapshot_seconds})` : ctRaw;
  requireColumn(ccols, c.source, c.where, 'source_column');
  requireColumn(ccols, c.destination, c.where, 'destination_column');
  requireColumn(ccols, c.rate, c.where, 'rate_column');
  const edgeFeatureColumns = fixed?.edgeFeatureColumns ?? c.features ?? (spans ? spans.edgeColumns : ['latency_ms', 'error_rate'].filter((k) => NUMERIC.test(ccols.get(k) ?? '')));
  for (const f of edgeFeatureColumns) requireColumn(ccols, f, c.where, 'feature_columns');

  const num = (col: string): string => `coalesce(${q(col)}::DOUBLE, 'NaN'::DOUBLE)`;
  const mWhere = rangeSql('t', range);
  const mSql = `SELECT t, ${featureColumns.map((_, k) => num(`f${k}`)).join(', ')} FROM anomaly_metrics_snap ${mWhere} ORDER BY t, service`;
  const nM = Number((await queryRows<{ n: bigint }>(conn, `SELECT count(*) AS n FROM anomaly_metrics_snap ${mWhere}`))[0]!.n);
  const mNum = await readColumns(conn, mSql, nM, ['f64', ...featureColumns.map(() => 'f32' as const)]);
  const mSvc = await readStrings(conn, `SELECT service FROM anomaly_metrics_snap ${mWhere} ORDER BY t, service`);

  const cWhere = rangeSql(ct, range);
  const nC = Number((await queryRows<{ n: bigint }>(conn, `SELECT count(*) AS n FROM anomaly_calls ${cWhere}`))[0]!.n);
  const order = `ORDER BY t, ${q(c.source)}, ${q(c.destination)}`;
  const cSelect = [`${ct} AS t`, num(c.rate), ...edgeFeatureColumns.map(num)].join(', ');
  const cNum = await readColumns(conn, `SELECT ${cSelect} FROM anomaly_calls ${cWhere} ${order}`, nC, ['f64', 'f32', ...edgeFeatureColumns.map(() => 'f32' as const)]);
  const cSrc = await readStrings(conn, `SELECT ${q(c.source)}::VARCHAR, ${ct} AS t FROM anomaly_calls ${cWhere} ${order}`);
  const cDst = await readStrings(conn, `SELECT ${q(c.destination)}::VARCHAR, ${ct} AS t, ${q(c.source)} FROM anomaly_calls ${cWhere} ${order}`);

  const F = featureColumns.length;
  const Fe = edgeFeatureColumns.length;
  const mT = mNum[0] as Float64Array;
  const cT = cNum[0] as Float64Array;
  const snapshots: Snapshot[] = [];
  let dropped = 0;
  let ci = 0;
  for (let i = 0; i < nM; ) {
    const ts = mT[i]!;
    let j = i;
    while (j < nM && mT[j] === ts) j++;
    const services: string[] = [];
    const index = new Map<string, number>();
    const features = new Float32Array((j - i) * F);
    for (let r = i; r < j; r++) {
      const name = mSvc[r];
      if (name === null || name === undefined || index.has(name)) continue;
      index.set(name, services.length);
      for (let f = 0; f < F; f++) features[services.length * F + f] = (mNum[f + 1] as Float32Array)[r]!;
      services.push(name);
    }
    while (ci < nC && cT[ci]! < ts) {
      ci++;
      dropped++; // a call at a time with no metrics scrape
    }
    const src: number[] = [];
    const dst: number[] = [];
    const rate: number[] = [];
    const ef: number[] = [];
    for (; ci < nC && cT[ci] === ts; ci++) {
      const s = index.get(cSrc[ci] ?? '');
      const d = index.get(cDst[ci] ?? '');
      const r = (cNum[1] as Float32Array)[ci]!;
      if (s === undefined || d === undefined || s === d || !(r >= 0)) {
        dropped++;
        continue;
      }
      src.push(s);
      dst.push(d);
      rate.push(r);
      for (let f = 0; f < Fe; f++) ef.push((cNum[f + 2] as Float32Array)[ci]!);
    }
    snapshots.push({
      ts,
      services,
      features: features.subarray(0, services.length * F),
      src: Int32Array.from(src),
      dst: Int32Array.from(dst),
      rate: Float32Array.from(rate),
      edgeFeatures: Float32Array.from(ef),
    });
    i = j;
  }
  dropped += nC - ci;
  const emptySnapshots = snapshots.filter((x) => x.src.length === 0).length;
  return { snapshots, featureColumns, edgeFeatureColumns, droppedEdges: dropped, emptySnapshots, ...(spans ? { spans } : {}) };
}

/**
 * Planned events in a range (the kinds the config lets suppress), ascending by time; with
 * `metrics.service_from`, also a `pod_replaced` event wherever a service's pod name first appears after
 * the service's first scrape (a redeploy: its memory and node-level columns shift with the new pod).
 */
export async function loadEvents(conn: DuckDBConnection, cfg: Config, range: TimeRange): Promise<PlannedEvent[]> {
  const a = anomalyConfig(cfg);
  const out = a.metrics.service_from ? await podReplacements(conn, cfg, range) : [];
  if (!a.events) return out;
  const e = a.events;
  const cols = await openSource(conn, cfg, 'events');
  const t = epochSql(e.ts_column, requireColumn(cols, e.ts_column, 'anomaly.events', 'ts_column'));
  requireColumn(cols, e.service_column, 'anomaly.events', 'service_column');
  requireColumn(cols, e.kind_column, 'anomaly.events', 'kind_column');
  const kinds = e.kinds ? `AND ${q(e.kind_column)}::VARCHAR IN (${e.kinds.map(lit).join(', ')})` : '';
  const where = rangeSql(t, range);
  const rows = await queryRows<{ t: number; s: string; k: string }>(
    conn,
    `SELECT ${t} AS t, ${q(e.service_column)}::VARCHAR AS s, ${q(e.kind_column)}::VARCHAR AS k FROM anomaly_events ${where || 'WHERE true'} ${kinds} ORDER BY 1, 2`,
  );
  out.push(...rows.map((r) => ({ ts: Number(r.t), service: r.s, kind: r.k })));
  return out.sort((x, y) => x.ts - y.ts || (x.service < y.service ? -1 : x.service > y.service ? 1 : 0));
}

/** `pod_replaced` events: a pod name's first scrape after its service's first scrape, over all the data. */
export async function podReplacements(conn: DuckDBConnection, cfg: Config, range: TimeRange): Promise<PlannedEvent[]> {
  const a = anomalyConfig(cfg);
  const m = a.metrics;
  const cols = await openSource(conn, cfg, 'metrics');
  const t = metricsTimeSql(a, cols);
  requireColumn(cols, m.service_column, 'anomaly.metrics', 'service_column');
  const pod = `${q(m.service_column)}::VARCHAR`;
  const rows = await queryRows<{ t: number; s: string }>(
    conn,
    `SELECT first_t AS t, service AS s FROM (
       SELECT service, pod, min(t) AS first_t, min(min(t)) OVER (PARTITION BY service) AS service_first
       FROM (SELECT ${t} AS t, ${serviceSql(pod, m.service_from)} AS service, ${pod} AS pod FROM anomaly_metrics WHERE ${pod} IS NOT NULL)
       GROUP BY service, pod)
     ${rangeSql('first_t', range) || 'WHERE true'} AND first_t > service_first ORDER BY 1, 2`,
  );
  return rows.map((r) => ({ ts: Number(r.t), service: r.s, kind: 'pod_replaced' }));
}

/** Labelled incidents, when `anomaly.labels` is configured. */
export async function loadIncidents(conn: DuckDBConnection, cfg: Config): Promise<Incident[] | undefined> {
  const a = anomalyConfig(cfg);
  if (!a.labels) return undefined;
  const l = a.labels;
  const cols = await openSource(conn, cfg, 'labels');
  const s = epochSql(l.start_column, requireColumn(cols, l.start_column, 'anomaly.labels', 'start_column'));
  const e = epochSql(l.end_column, requireColumn(cols, l.end_column, 'anomaly.labels', 'end_column'));
  requireColumn(cols, l.kind_column, 'anomaly.labels', 'kind_column');
  const rc = l.root_cause_column;
  if (rc !== undefined) requireColumn(cols, rc, 'anomaly.labels', 'root_cause_column');
  const rcSql = rc === undefined ? 'NULL' : serviceSql(`${q(rc)}::VARCHAR`, l.service_from);
  const rows = await queryRows<{ s: number; e: number; k: string; r: string | null }>(conn, `SELECT ${s} AS s, ${e} AS e, ${q(l.kind_column)}::VARCHAR AS k, ${rcSql} AS r FROM anomaly_labels ORDER BY 1`);
  return rows.map((r) => ({ start: Number(r.s), end: Number(r.e), kind: r.k, ...(r.r ? { root_cause: r.r } : {}) }));
}
