/**
 * The serving side of the online store: each request's embeddings from an in-process LRU, then Redis
 * (one MGET per request for the keys the LRU lacks), within a per-request deadline. Whatever is not
 * there in time — Redis down, slow, or the version unknown — is a fallback: the caller feeds the model
 * its fallback row for those rows, never fails the request. A key the current version does not hold is
 * a miss (the same fallback row, counted apart: it is the data, not the store).
 *
 * The version read is the one `<prefix>:<model>:current` names (`artifacts/online_store.ts`), re-read
 * every `pollMs`, so a newly published version is picked up without a restart; the LRU's entries carry
 * their version, so the old version's entries simply age out.
 */
import { decodeVector, metaKey, pointerKey, valueKey, type PublishedVersion } from '../artifacts/online_store.js';
import { connectRedis, type RedisConnection } from './redis_connection.js';

export interface EmbeddingStoreOptions {
  url: string;
  keyPrefix: string;
  /** Entries kept in the in-process LRU (all models together). Default 100,000. */
  lruSize?: number;
  /** Per-request deadline of the Redis fetch, ms. Default 5: inside a 10 ms p99 budget with the model's run. */
  deadlineMs?: number;
  /** Milliseconds between reads of each model's pointer key. Default 1000. */
  pollMs?: number;
  log?: (line: string, level: 'info' | 'warn') => void;
}

/** Rows of one fetch by where they came from. */
export interface FetchCounts {
  lru: number;
  redis: number;
  miss: number;
  fallback: number;
}

export interface FetchResult extends FetchCounts {
  /** `keys.length × dim` floats, zeros where `missing` is 1. */
  values: Float32Array;
  /** 1 for the rows that get the model's fallback row (miss or fallback). */
  missing: Float32Array;
  /** The version the rows came from (undefined while no pointer has been read). */
  version: string | undefined;
  /** Milliseconds spent waiting for Redis (0 when the LRU had every key). */
  fetchMs: number;
}

export const DEFAULT_DEADLINE_MS = 5;
export const DEFAULT_LRU_SIZE = 100_000;

export class OnlineEmbeddingStore {
  private client: RedisConnection | undefined;
  private readonly lru = new Map<string, Float32Array>();
  private readonly versions = new Map<string, string | undefined>();
  /** The run each keyspace's current version was published from (its meta key), when known. */
  private readonly runs = new Map<string, string | undefined>();
  private timer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private readonly warned = new Set<string>();
  readonly lruSize: number;
  readonly deadlineMs: number;

  constructor(private readonly opts: EmbeddingStoreOptions) {
    this.lruSize = opts.lruSize ?? DEFAULT_LRU_SIZE;
    this.deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
  }

  /** Connects (a store that is down at start is retried in the background) and starts polling pointers. */
  async start(models: readonly string[]): Promise<void> {
    for (const m of models) this.versions.set(m, undefined);
    await this.connect();
    await this.refreshVersions();
    const poll = () => {
      this.timer = setTimeout(() => {
        void this.refreshVersions().finally(() => !this.closed && poll());
      }, this.opts.pollMs ?? 1000);
      this.timer.unref();
    };
    poll();
  }

  /** Starts following another keyspace model (a model loaded after start). */
  follow(model: string): void {
    if (!this.versions.has(model)) {
      this.versions.set(model, undefined);
      void this.refreshVersions();
    }
  }

  currentVersion(model: string): string | undefined {
    return this.versions.get(model);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    c?.destroy();
  }

  private connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    return (this.connecting ??= (async () => {
      try {
        this.client = await connectRedis(this.opts.url, { connectTimeoutMs: 1000, reconnect: true, what: '--online-store' });
        this.opts.log?.(`online store ${this.opts.url} connected`, 'info');
      } catch (e) {
        this.warnOnce('connect', `online store: ${(e as Error).message}; requests use the fallback row until it is reachable`);
      } finally {
        this.connecting = undefined;
      }
    })());
  }

  private async refreshVersions(): Promise<void> {
    if (!this.client) await this.connect();
    const c = this.client;
    if (!c?.isReady) return;
    for (const model of this.versions.keys()) {
      try {
        const v = await c.get(pointerKey(this.opts.keyPrefix, model));
        const version = v === null ? undefined : v.toString();
        if (version !== this.versions.get(model)) {
          const meta = version === undefined ? null : await c.get(metaKey(this.opts.keyPrefix, model, version));
          this.runs.set(model, meta === null ? undefined : ((JSON.parse(meta.toString()) as Partial<PublishedVersion>).run_id ?? undefined));
          this.versions.set(model, version);
          this.opts.log?.(`online store: ${model} version ${version ?? '(none published)'} is current`, 'info');
        }
      } catch {
        // Redis down: keep the version known; fetches fall back until it returns.
      }
    }
  }

  /**
   * The embeddings of `keys` for keyspace `model`, `dim` floats each. Resolves within about the deadline
   * whatever Redis does; never rejects.
   */
  async fetch(model: string, keys: readonly string[], dim: number, runId?: string): Promise<FetchResult> {
    const n = keys.length;
    const values = new Float32Array(n * dim);
    const missing = new Float32Array(n);
    const counts: FetchCounts = { lru: 0, redis: 0, miss: 0, fallback: 0 };
    const version = this.versions.get(model);
    const run = this.runs.get(model);
    if (version !== undefined && runId !== undefined && run !== undefined && run !== runId) {
      // Embeddings of another deep run live in another space: the fallback row is the honest answer.
      this.warnOnce(`run:${model}:${version}:${runId}`, `online store: ${model} version ${version} was published from run ${run}, the model expects embeddings of run ${runId}; its rows get the fallback row until a version of ${runId} is published`);
      missing.fill(1);
      return { values, missing, version, ...counts, fallback: n, fetchMs: 0 };
    }
    if (version === undefined) {
      if (!this.versions.has(model)) this.follow(model);
      missing.fill(1);
      return { values, missing, version, ...counts, fallback: n, fetchMs: 0 };
    }
    const todo: number[] = [];
    for (let i = 0; i < n; i++) {
      const id = `${model}\u0000${version}\u0000${keys[i]!}`;
      const hit = this.lru.get(id);
      if (hit) {
        // Re-inserted: a Map iterates in insertion order, so the first entry is the least recently used.
        this.lru.delete(id);
        this.lru.set(id, hit);
        values.set(hit, i * dim);
        counts.lru++;
      } else todo.push(i);
    }
    if (todo.length === 0) return { values, missing, version, ...counts, fetchMs: 0 };
    const t0 = performance.now();
    const fetched = await this.mget(todo.map((i) => valueKey(this.opts.keyPrefix, model, version, keys[i]!)));
    const fetchMs = performance.now() - t0;
    for (let j = 0; j < todo.length; j++) {
      const i = todo[j]!;
      if (!fetched) {
        missing[i] = 1;
        counts.fallback++;
        continue;
      }
      const bytes = fetched[j];
      const v = bytes ? decodeVector(bytes, dim) : undefined;
      if (!v) {
        if (bytes) this.warnOnce(`dim:${model}`, `online store: ${model} version ${version} holds values of ${bytes.length} bytes, the model takes ${dim} floats (${dim * 4} bytes); those rows get the fallback row`);
        missing[i] = 1;
        counts.miss++;
        continue;
      }
      values.set(v, i * dim);
      counts.redis++;
      this.remember(`${model}\u0000${version}\u0000${keys[i]!}`, v);
    }
    return { values, missing, version, ...counts, fetchMs };
  }

  private remember(id: string, v: Float32Array): void {
    if (this.lruSize <= 0) return;
    this.lru.set(id, v);
    if (this.lru.size > this.lruSize) this.lru.delete(this.lru.keys().next().value as string);
  }

  /** MGET within the deadline; undefined when Redis is down, errs, or is too slow. */
  private mget(keys: string[]): Promise<(Buffer | null)[] | undefined> {
    const c = this.client;
    if (!c?.isReady) {
      void this.connect();
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), this.deadlineMs);
      c.mGet(keys).then(
        (r) => {
          clearTimeout(timer);
          resolve(r as (Buffer | null)[]);
        },
        () => {
          clearTimeout(timer);
          resolve(undefined);
        },
      );
    });
  }

  private warnOnce(what: string, line: string): void {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    this.opts.log?.(line, 'warn');
  }
}
