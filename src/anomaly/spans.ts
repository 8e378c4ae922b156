/**
 * Raw trace spans → each snapshot's call graph, in DuckDB. A call is a span whose parent span (same trace)
 * was emitted by another service: parent's service → child's service. Per (snapshot, caller, callee):
 * calls per second, the child spans' p50/p99 duration in ms, the p50 of parent minus child duration (the
 * time spent between the two services: a network delay at the callee shows here and not in the callee's
 * own span), and the share of child spans with an error status. Calls inside one service (a client span and its own server span) are not edges.
 *
 * With `service_map`, traces are taken to be sampled or missing: the edges seen in the spans (over the
 * map's period) are put into every snapshot, carrying what was observed then and rate 0 elsewhere, so a
 * minute without kept traces still has its dependency structure.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { DataError, suggest } from '../core/errors.js';
import { q, queryRows } from '../data/duck.js';
import { parseIsoTime } from '../core/time.js';
import { serviceSql } from './pod_service.js';

/** The columns of the call table built from spans (the `calls` contract's names). */
export const SPAN_CALLS = { ts: 'ts', source: 'source', destination: 'destination', rate: 'requests_per_second' } as const;

export interface SpanCalls {
  /** edge feature columns the table carries */
  edgeColumns: string[];
  /** spans read and calls (parent → child across services) found */
  spans: number;
  calls: number;
  /** distinct caller → callee pairs in the service map (null: no service map) */
  serviceMapEdges: number | null;
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|REAL|DECIMAL.*)$/;

/** Epoch seconds of a span time column: numbers are unix nanoseconds (OpenTelemetry), else timestamps. */
function spanSeconds(col: string, type: string): string {
  return NUMERIC.test(type) ? `(${q(col)}::DOUBLE / 1e9)` : `epoch(${q(col)}::TIMESTAMP)::DOUBLE`;
}

/**
 * Creates the table `anomaly_calls` (ts, source, destination, requests_per_second, latency_p50_ms,
 * latency_p99_ms[, error_rate]) from the view `anomaly_spans` over [from, until); `snapshotTimes` is the
 * SQL relation of snapshot times (column `t`) the service map fills.
 */
export async function buildSpanCalls(conn: DuckDBConnection, a: AnomalyConfig, cols: Map<string, string>, range: { from?: number; until?: number }, snapshotTimes: string): Promise<SpanCalls> {
  const s = a.spans!;
  const step = a.snapshot_seconds!;
  const need = (col: string, field: string): string => {
    const type = cols.get(col);
    if (type === undefined) throw new DataError(`column "${col}" not found in the spans`, { where: `anomaly.spans.${field}`, hint: `${suggest(col, [...cols.keys()])}; rename it with anomaly.spans.${field}` });
    return type;
  };
  for (const [col, field] of [
    [s.trace_id_column, 'trace_id_column'],
    [s.span_id_column, 'span_id_column'],
    [s.parent_span_id_column, 'parent_span_id_column'],
    [s.service_column, 'service_column'],
  ] as const) need(col, field);
  const t0 = spanSeconds(s.start_column, need(s.start_column, 'start_column'));
  const t1 = spanSeconds(s.end_column, need(s.end_column, 'end_column'));
  const hasStatus = s.status_column !== null && cols.has(s.status_column);
  const err = hasStatus ? `CASE WHEN upper(${q(s.status_column!)}::VARCHAR) IN ('2', 'ERROR', 'STATUS_CODE_ERROR') THEN 1.0 ELSE 0.0 END` : '0.0';
  // A service map needs the edges of its own period, not only of the snapshots being loaded: all spans
  // are aggregated then, and the map's rows are cut to the loaded snapshots below.
  const ranged = s.service_map === false;
  const where = ranged ? [range.from !== undefined ? `${t0} >= ${range.from}` : '', range.until !== undefined ? `${t0} < ${range.until}` : ''].filter(Boolean) : [];
  const spanSql = `SELECT ${q(s.trace_id_column)}::VARCHAR AS trace_id, ${q(s.span_id_column)}::VARCHAR AS span_id, ${q(s.parent_span_id_column)}::VARCHAR AS parent_id,
      ${serviceSql(`${q(s.service_column)}::VARCHAR`, s.service_from)} AS service, ${t0} AS t0, ${t1} AS t1, ${err} AS err
    FROM anomaly_spans ${where.length ? `WHERE ${where.join(' AND ')}` : ''}`;
  const errCol = hasStatus ? ', avg(c.err) AS error_rate' : '';
  try {
    await conn.run(`CREATE OR REPLACE TEMP TABLE anomaly_span_rows AS ${spanSql}`);
    await conn.run(`CREATE OR REPLACE TEMP TABLE anomaly_observed_calls AS
      SELECT floor(c.t0 / ${step}) * ${step} AS ts, p.service AS source, c.service AS destination, count(*) / ${step} AS requests_per_second,
        quantile_cont((c.t1 - c.t0) * 1000, 0.5) AS latency_p50_ms, quantile_cont((c.t1 - c.t0) * 1000, 0.99) AS latency_p99_ms,
        quantile_cont(greatest(0, (p.t1 - p.t0) - (c.t1 - c.t0)) * 1000, 0.5) AS gap_p50_ms${errCol}
      FROM anomaly_span_rows c JOIN anomaly_span_rows p ON c.trace_id = p.trace_id AND c.parent_id = p.span_id
      WHERE p.service <> c.service
      GROUP BY ALL`);
  } catch (e) {
    throw new DataError(`cannot build call graphs from anomaly.spans: ${(e as Error).message.split('\n')[0]}`, { where: 'anomaly.spans', hint: 'check the column names and types (ids as text, times as unix ns or timestamps)' });
  }
  const edgeColumns = ['latency_p50_ms', 'latency_p99_ms', 'gap_p50_ms', ...(hasStatus ? ['error_rate'] : [])];
  const counts = (await queryRows<{ spans: bigint; calls: number }>(conn, `SELECT (SELECT count(*) FROM anomaly_span_rows) AS spans, (SELECT coalesce(sum(requests_per_second), 0) * ${step} FROM anomaly_observed_calls) AS calls`))[0]!;
  let serviceMapEdges: number | null = null;
  if (s.service_map === false) {
    await conn.run('CREATE OR REPLACE TEMP TABLE anomaly_calls AS SELECT * FROM anomaly_observed_calls');
  } else {
    const period = s.service_map === true ? {} : s.service_map;
    const mapWhere = [period.from ? `ts >= ${parseIsoTime(period.from)}` : '', period.until ? `ts < ${parseIsoTime(period.until)}` : ''].filter(Boolean);
    await conn.run(`CREATE OR REPLACE TEMP TABLE anomaly_service_map AS SELECT DISTINCT source, destination FROM anomaly_observed_calls ${mapWhere.length ? `WHERE ${mapWhere.join(' AND ')}` : ''}`);
    serviceMapEdges = Number((await queryRows<{ n: bigint }>(conn, 'SELECT count(*) AS n FROM anomaly_service_map'))[0]!.n);
    await conn.run(`CREATE OR REPLACE TEMP TABLE anomaly_calls AS
      SELECT t.t AS ts, m.source, m.destination, coalesce(o.requests_per_second, 0) AS requests_per_second,
        o.latency_p50_ms, o.latency_p99_ms, o.gap_p50_ms${hasStatus ? ', o.error_rate' : ''}
      FROM (SELECT DISTINCT t FROM ${snapshotTimes}) t CROSS JOIN anomaly_service_map m
      LEFT JOIN anomaly_observed_calls o ON o.ts = t.t AND o.source = m.source AND o.destination = m.destination`);
  }
  await conn.run('DROP TABLE anomaly_span_rows');
  return { edgeColumns, spans: Number(counts.spans), calls: Math.round(Number(counts.calls)), serviceMapEdges };
}
