/**
 * The online store's keyspace: the contract between `--publish` (writer) and `serve --online-store`
 * (reader), as the Parquet schema is between embed and export.
 *
 * ```
 * <prefix>:<model>:<version>:<key>     one entity's value: float32 little-endian bytes (an embedding),
 *                                      or a decimal string (a scalar prediction); TTL `ttl`
 * <prefix>:<model>:meta:<version>      JSON: what the version holds (PublishedVersion); same TTL
 * <prefix>:<model>:current             the version readers use: switched by one SET after every value of
 *                                      the version is written, so no reader sees a half-written version
 * ```
 *
 * `<model>` names what was published: the entity table for embeddings (`customers`), the task for
 * predictions. A version's keys expire by TTL, so the versions a pointer no longer names go away without
 * a scan; the TTL must outlast the refresh interval (a version expiring while current is a miss for
 * every key, served by the fallback row).
 */
import { UsageError } from '../core/errors.js';

export const DEFAULT_KEY_PREFIX = 'gnnctl';
/** Two days: a daily refresh that fails once still leaves the previous version readable. */
export const DEFAULT_TTL_SECONDS = 2 * 86_400;

export interface OnlineStoreTarget {
  /** `redis://host:port[/db]` as given (credentials allowed in it: `redis://:password@host:port`). */
  url: string;
  keyPrefix: string;
  ttlSeconds: number;
}

/** What `<prefix>:<model>:meta:<version>` holds. */
export interface PublishedVersion {
  model: string;
  version: string;
  kind: 'embedding' | 'prediction';
  /** Floats per value (embeddings); 1 for scalar predictions. */
  dim: number;
  count: number;
  /** The deep run the values came from: serve refuses embeddings of another run. */
  run_id: string;
  /** ISO time the values were computed at (the snapshot's anchor). */
  anchor_time: string;
  published_at: string;
  gnnctl: string;
}

/**
 * The `config.pbtxt` parameter that binds a model's embedding input to the store (written by
 * `export --embeddings-from-store`, read by `serve --online-store`):
 * `online_store:<embedding input>` → JSON {@link StoreBindingValue}.
 */
export const STORE_BINDING_PARAMETER_PREFIX = 'online_store:';

/** The value of an `online_store:<embedding input>` parameter. */
export interface StoreBindingValue {
  /** The keyspace model: the entity table the embeddings were published under. */
  table: string;
  /** The request input holding each row's entity key. */
  key: string;
  /** The FP32 [batch, 1] input that is 1 where the row gets the model's fallback row. */
  missing: string;
  /**
   * The deep run whose embeddings the model was distilled on. A current version published from another
   * run (its meta key's run_id) is not used: every row gets the fallback row, as export refuses such
   * embeddings for a baked-in model.
   */
  run_id?: string;
}

export function valueKey(prefix: string, model: string, version: string, key: string): string {
  return `${prefix}:${model}:${version}:${key}`;
}

export function metaKey(prefix: string, model: string, version: string): string {
  return `${prefix}:${model}:meta:${version}`;
}

export function pointerKey(prefix: string, model: string): string {
  return `${prefix}:${model}:current`;
}

/**
 * The version name of a snapshot: its anchor (compact, no `:`) and the run id, so two publishes of the
 * same snapshot land on the same keys and a refresh of a new day gets new ones.
 */
export function versionName(anchorIso: string, runId: string): string {
  const compact = anchorIso.replace(/[-:]/g, '').replace(/\.\d+/, '');
  return `${compact}.${runId.replace(/[:\s]/g, '_')}`;
}

/** A vector as the store holds it: float32 little-endian (a view on `v` on little-endian machines). */
export function encodeVector(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/** The store's bytes back as floats; undefined when the length is not `dim` floats. */
export function decodeVector(bytes: Uint8Array, dim: number): Float32Array | undefined {
  if (bytes.length !== dim * 4) return undefined;
  const copy = new Float32Array(dim);
  new Uint8Array(copy.buffer).set(bytes);
  return copy;
}

/** Checks a `--publish` / `--online-store` URL: `redis://` or `rediss://`, a host, an optional port and db number. */
export function parseStoreUrl(url: string, flag: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`${flag} must be a Redis URL, redis://HOST:PORT[/DB]`, { value: url });
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new UsageError(`${flag} must be a Redis URL, redis://HOST:PORT[/DB] (rediss:// for TLS)`, { value: url });
  if (u.hostname === '') throw new UsageError(`${flag} names no host`, { value: url, hint: 'e.g. redis://127.0.0.1:6379/0' });
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d+$/.test(u.pathname)) throw new UsageError(`${flag}: the path must be a database number`, { value: url, hint: 'e.g. redis://127.0.0.1:6379/2' });
  return url;
}
