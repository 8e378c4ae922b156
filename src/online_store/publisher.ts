/**
 * Publishes one version of values to the online store (keyspace: `artifacts/online_store.ts`): every
 * value under `<prefix>:<model>:<version>:<key>` with the TTL, a batch per command (`SET_ALL`), several
 * batches pipelined, then the version's
 * meta key, then one SET of the pointer key. Only that last SET makes the version visible, so a publish
 * that fails anywhere before it leaves the previous version serving, and says what failed.
 */
import { VERSION } from '../core/version.js';
import { metaKey, pointerKey, valueKey, type OnlineStoreTarget, type PublishedVersion } from '../artifacts/online_store.js';
import { connectRedis, OnlineStoreError, redactUrl } from './redis_connection.js';

/** A batch of entities: their keys and their values (float32 bytes or decimal strings), in the same order. */
export interface ValueBatch {
  keys: readonly string[];
  values: readonly (Buffer | string)[];
}

export interface PublishOptions {
  target: OnlineStoreTarget;
  model: string;
  version: string;
  kind: PublishedVersion['kind'];
  dim: number;
  runId: string;
  anchorTime: string;
  /** Batches (one EVAL each) in flight at most, pipelined on one connection. Default 4. */
  window?: number;
}

export interface PublishResult {
  url: string;
  model: string;
  version: string;
  previous_version: string | null;
  count: number;
  seconds: number;
  keys_per_s: number;
  pointer_key: string;
}

/**
 * One EVAL per batch sets every key of it with the TTL: a single command per few thousand values keeps
 * the client's per-command cost (a promise, a reply parse) off the hot path, which at a million keys is
 * most of the time; the script runs inside Redis, one batch at a time.
 */
const SET_ALL = "local ttl = ARGV[1] for i, k in ipairs(KEYS) do redis.call('SET', k, ARGV[i + 1], 'EX', ttl) end return #KEYS";

export async function publishValues(batches: AsyncIterable<ValueBatch>, o: PublishOptions): Promise<PublishResult> {
  const t0 = performance.now();
  const { target } = o;
  const where = `--publish ${redactUrl(target.url)}`;
  const client = await connectRedis(target.url, { what: where });
  let count = 0;
  try {
    const pointer = pointerKey(target.keyPrefix, o.model);
    const previous = await client.get(pointer);
    const window = o.window ?? 4;
    const ex = { EX: target.ttlSeconds };
    const ttl = String(target.ttlSeconds);
    let inFlight: Promise<unknown>[] = [];
    const flush = async () => {
      const results = await Promise.allSettled(inFlight);
      inFlight = [];
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    };
    try {
      for await (const b of batches) {
        if (b.keys.length === 0) continue;
        const keys = b.keys.map((k) => valueKey(target.keyPrefix, o.model, o.version, k));
        inFlight.push(client.eval(SET_ALL, { keys, arguments: [ttl, ...(b.values as string[])] }));
        if (inFlight.length >= window) await flush();
        count += b.keys.length;
      }
      await flush();
      const meta: PublishedVersion = {
        model: o.model,
        version: o.version,
        kind: o.kind,
        dim: o.dim,
        count,
        run_id: o.runId,
        anchor_time: o.anchorTime,
        published_at: new Date().toISOString(),
        gnnctl: VERSION,
      };
      await client.set(metaKey(target.keyPrefix, o.model, o.version), JSON.stringify(meta), ex);
      // The switch: one command, atomic for every reader.
      await client.set(pointer, o.version);
    } catch (e) {
      // Every SET sent gets its answer (or its error) before the connection goes.
      await Promise.allSettled(inFlight);
      if (e instanceof OnlineStoreError) throw e;
      throw new OnlineStoreError(`publishing ${o.model} version ${o.version} to ${redactUrl(target.url)} failed after ${count.toLocaleString('en-US')} values: ${describeError(e)}`, {
        where,
        hint: `the pointer ${pointer} was not switched: readers keep version ${previous === null ? '(none)' : previous.toString()}; fix the store and publish again`,
      });
    }
    const seconds = (performance.now() - t0) / 1000;
    return {
      url: redactUrl(target.url),
      model: o.model,
      version: o.version,
      previous_version: previous === null ? null : previous.toString(),
      count,
      seconds: Math.round(seconds * 100) / 100,
      keys_per_s: Math.round(count / seconds),
      pointer_key: pointer,
    };
  } finally {
    client.destroy();
  }
}

/** node-redis errors can have an empty message (a closed socket): fall back to their name. */
function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  return e.message || e.name || e.constructor.name;
}
