/**
 * The score file: one row per snapshot — `ts` (timestamp, µs, UTC), `score`, `threshold` (DOUBLE),
 * `alert` (BOOLEAN), `top_services` and `top_edges` (lists of strings, edges as "source->destination"),
 * `root_causes` (services, most likely root cause first).
 * Written to a temporary sibling and renamed, so a reader never sees half a file. DuckDB reads it
 * directly: `SELECT * FROM 'scores.parquet' WHERE alert`.
 */
import * as arrow from 'apache-arrow';
import * as pq from 'parquet-wasm/node';
import { writeFileAtomic } from '../core/atomic.js';

export interface ScoreRow {
  ts: number;
  score: number;
  threshold: number;
  alert: boolean;
  top_services: string[];
  top_edges: string[];
  /** the root-cause ranking (`signals` over the last W snapshots; TAGAE propagated for runs without z-score statistics), most likely first */
  root_causes?: string[];
}

export function writeScores(path: string, rows: ScoreRow[], metadata: Record<string, string>): void {
  const n = rows.length;
  const ts = arrow.makeVector(
    arrow.makeData({ type: new arrow.TimestampMicrosecond('UTC'), length: n, data: BigInt64Array.from(rows, (r) => BigInt(Math.round(r.ts * 1e6))) }),
  );
  const list = (): arrow.List<arrow.Utf8> => new arrow.List(new arrow.Field('item', new arrow.Utf8(), true));
  const table = new arrow.Table({
    ts,
    score: arrow.vectorFromArray(rows.map((r) => r.score), new arrow.Float64()),
    // An infinite threshold (no history yet) would not survive every reader; it is written as NULL.
    threshold: arrow.vectorFromArray(rows.map((r) => (Number.isFinite(r.threshold) ? r.threshold : null)), new arrow.Float64()),
    alert: arrow.vectorFromArray(rows.map((r) => r.alert), new arrow.Bool()),
    top_services: arrow.vectorFromArray(rows.map((r) => r.top_services), list()),
    top_edges: arrow.vectorFromArray(rows.map((r) => r.top_edges), list()),
    root_causes: arrow.vectorFromArray(rows.map((r) => r.root_causes ?? []), list()),
  });
  const props = new pq.WriterPropertiesBuilder()
    .setCompression(pq.Compression.SNAPPY)
    .setKeyValueMetadata(new Map(Object.entries(metadata).sort(([a], [b]) => a.localeCompare(b))))
    .build();
  const bytes = pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), props);
  writeFileAtomic(path, bytes);
}
