/**
 * `embed --publish` and `predict --publish`: a snapshot folder's file (or part files) published as one
 * version of the online store's keyspace (`artifacts/online_store.ts`).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DataError } from '../core/errors.js';
import { queryRows, withDuck, lit } from '../data/duck.js';
import { versionName, type OnlineStoreTarget, type PublishedVersion } from '../artifacts/online_store.js';
import { publishValues, type PublishResult } from './publisher.js';
import { snapshotValues } from './snapshot_values.js';

export interface SnapshotToPublish {
  /** The snapshot file, or a folder of `part-*.parquet` shards. */
  path: string;
  kind: PublishedVersion['kind'];
  /** The keyspace's `<model>`: the entity table (embeddings) or the task (predictions). */
  model: string;
  run_id: string;
  anchor_time: string;
  /** Floats per embedding; 0 for a scalar prediction. */
  dim: number;
}

export async function publishSnapshot(s: SnapshotToPublish, target: OnlineStoreTarget): Promise<PublishResult> {
  const files = snapshotFiles(s.path);
  const value = s.kind === 'embedding' ? 'embedding' : 'prediction';
  const key = await keyColumn(files, value);
  return publishValues(snapshotValues({ files, key, value, dim: s.dim }), {
    target,
    model: s.model,
    version: versionName(s.anchor_time, s.run_id),
    kind: s.kind,
    dim: Math.max(1, s.dim),
    runId: s.run_id,
    anchorTime: s.anchor_time,
  });
}

function snapshotFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const parts = readdirSync(path).filter((f) => f.endsWith('.parquet')).sort().map((f) => join(path, f));
  if (parts.length === 0) throw new DataError('no .parquet file to publish', { where: path });
  return parts;
}

/** The entity key column: the snapshot's first column that is neither the value nor `anchor_time`. */
async function keyColumn(files: string[], value: string): Promise<string> {
  const cols = await withDuck(({ conn }) => queryRows<{ column_name: string }>(conn, `DESCRIBE SELECT * FROM read_parquet(${lit(files[0]!)})`));
  const names = cols.map((c) => c.column_name);
  if (!names.includes(value)) throw new DataError(`the snapshot has no ${value} column (columns: ${names.join(', ')})`, { where: files[0] });
  const key = names.find((c) => c !== value && c !== 'anchor_time' && c !== 'embedding');
  if (!key) throw new DataError('the snapshot has no key column', { where: files[0] });
  return key;
}

/**
 * Publishes an embedding snapshot written by `gnnctl embed` (a file or a folder of part files), reading
 * its table, run, anchor and dimension from the Parquet metadata embed wrote.
 */
export async function publishEmbeddingFile(path: string, target: OnlineStoreTarget): Promise<PublishResult> {
  const files = snapshotFiles(path);
  const meta = await withDuck(({ conn }) => queryRows<{ k: string; v: string }>(conn, `SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${lit(files[0]!)})`));
  const m = Object.fromEntries(meta.map((r) => [r.k, r.v]));
  if (!m.table || !m.run_id || !m.anchor_time || !(Number(m.dim) > 0)) {
    throw new DataError('not an embedding snapshot written by gnnctl embed (no table/run_id/anchor_time/dim metadata)', { where: files[0], hint: 're-run gnnctl embed' });
  }
  return publishSnapshot({ path, kind: 'embedding', model: m.table, run_id: m.run_id, anchor_time: m.anchor_time, dim: Number(m.dim) }, target);
}

export function formatPublished(p: PublishResult): string {
  return `published ${p.count.toLocaleString('en-US')} ${p.model} values to ${p.url} in ${p.seconds}s (${p.keys_per_s.toLocaleString('en-US')}/s): version ${p.version} is current (${p.pointer_key}; previous: ${p.previous_version ?? 'none'})`;
}
