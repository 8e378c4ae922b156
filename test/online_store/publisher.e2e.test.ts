/**
 * Publishing to a real redis-server on loopback: values read back byte for byte, the pointer switched
 * only after every value is written (a concurrent reader never sees a half-written version), a failed
 * publish leaving the previous version current, and TTLs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeVector, encodeVector, metaKey, pointerKey, valueKey, versionName, type OnlineStoreTarget } from '../../src/artifacts/online_store.js';
import { withDuck } from '../../src/data/duck.js';
import { publishValues, type ValueBatch } from '../../src/online_store/publisher.js';
import { publishSnapshot } from '../../src/online_store/publish_snapshot.js';
import { connectRedis, OnlineStoreError, type RedisConnection } from '../../src/online_store/redis_connection.js';
import { available, startRedis, type TestRedis } from './redis_server.js';

const DIM = 4;
const vectorOf = (i: number, fill: number) => Float32Array.from({ length: DIM }, (_, j) => fill * 1000 + i + j / 10);

async function* batches(n: number, fill: number, size = 500, failAfter?: number): AsyncGenerator<ValueBatch> {
  for (let start = 0; start < n; start += size) {
    if (failAfter !== undefined && start >= failAfter) throw new Error('the snapshot file is truncated');
    const keys: string[] = [];
    const values: Buffer[] = [];
    for (let i = start; i < Math.min(n, start + size); i++) {
      keys.push(`c${i}`);
      values.push(Buffer.from(encodeVector(vectorOf(i, fill))));
    }
    yield { keys, values };
  }
}

const publish = (target: OnlineStoreTarget, version: string, n: number, fill: number, failAfter?: number) =>
  publishValues(batches(n, fill, 500, failAfter), { target, model: 'customers', version, kind: 'embedding', dim: DIM, runId: 'run-1', anchorTime: '2024-09-15T00:00:00.000Z' });

describe.skipIf(!available)('publishing to Redis', () => {
  let redis: TestRedis;
  let client: RedisConnection;
  let target: OnlineStoreTarget;
  beforeAll(async () => {
    redis = await startRedis();
    client = await connectRedis(redis.url);
    target = { url: redis.url, keyPrefix: 'test', ttlSeconds: 3600 };
  });
  afterAll(async () => {
    client?.destroy();
    await redis?.stop();
  });

  it('writes every value under the versioned keyspace, then switches the pointer; values read back exactly', async () => {
    const r = await publish(target, 'v1', 2000, 1);
    expect(r).toMatchObject({ model: 'customers', version: 'v1', previous_version: null, count: 2000, pointer_key: 'test:customers:current' });
    expect((await client.get(pointerKey('test', 'customers')))?.toString()).toBe('v1');
    for (const i of [0, 777, 1999]) {
      const bytes = await client.get(valueKey('test', 'customers', 'v1', `c${i}`));
      expect(decodeVector(bytes!, DIM)).toEqual(vectorOf(i, 1));
    }
    const meta = JSON.parse((await client.get(metaKey('test', 'customers', 'v1')))!.toString());
    expect(meta).toMatchObject({ model: 'customers', version: 'v1', kind: 'embedding', dim: DIM, count: 2000, run_id: 'run-1' });
    const ttl = await client.ttl(valueKey('test', 'customers', 'v1', 'c5'));
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
    // The pointer itself never expires: it is what readers start from.
    expect(await client.ttl(pointerKey('test', 'customers'))).toBe(-1);
  });

  it('a concurrent reader never sees a version before all its values are written', async () => {
    await publish(target, 'a', 3000, 1);
    const reader = await connectRedis(redis.url);
    let stop = false;
    const seen = new Set<string>();
    let incomplete = 0;
    const read = (async () => {
      while (!stop) {
        const version = (await reader.get(pointerKey('test', 'customers')))!.toString();
        seen.add(version);
        // The last key written: present whenever the pointer names the version.
        const last = await reader.get(valueKey('test', 'customers', version, 'c2999'));
        const first = await reader.get(valueKey('test', 'customers', version, 'c0'));
        if (!last || !first) incomplete++;
      }
    })();
    await publish(target, 'b', 3000, 2);
    await new Promise((r) => setTimeout(r, 20));
    stop = true;
    await read;
    reader.destroy();
    expect(incomplete).toBe(0);
    expect(seen.has('a')).toBe(true);
    expect(seen.has('b')).toBe(true);
  });

  it('a publish that fails midway leaves the previous version current and names what failed', async () => {
    await publish(target, 'good', 1000, 1);
    const err = await publish(target, 'bad', 1000, 2, 500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OnlineStoreError);
    expect((err as OnlineStoreError).message).toContain('publishing customers version bad');
    expect((err as OnlineStoreError).message).toContain('the snapshot file is truncated');
    expect((err as OnlineStoreError).hint).toContain('readers keep version good');
    expect((await client.get(pointerKey('test', 'customers')))?.toString()).toBe('good');
  });

  it('an unreachable store fails with the URL named, before anything is written', async () => {
    const err = await publish({ ...target, url: 'redis://127.0.0.1:1' }, 'x', 10, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OnlineStoreError);
    expect((err as OnlineStoreError).message).toContain('cannot connect to the online store redis://127.0.0.1:1');
  });

  it('old versions expire by their TTL while the pointer stays', async () => {
    await publish({ ...target, keyPrefix: 'ttl', ttlSeconds: 1 }, 'short', 10, 1);
    expect(await client.exists(valueKey('ttl', 'customers', 'short', 'c3'))).toBe(1);
    await new Promise((r) => setTimeout(r, 2100));
    expect(await client.exists(valueKey('ttl', 'customers', 'short', 'c3'))).toBe(0);
    expect(await client.exists(metaKey('ttl', 'customers', 'short'))).toBe(0);
    expect((await client.get(pointerKey('ttl', 'customers')))?.toString()).toBe('short');
  });

  it('publishes an embeddings.parquet (key column, FLOAT[dim] embedding) as a version named after its anchor and run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gnnctl-publish-'));
    try {
      const file = join(dir, 'embeddings.parquet');
      await withDuck(async ({ conn }) => {
        await conn.run(`COPY (SELECT 'k' || i::VARCHAR AS customer_id, [i::FLOAT, i::FLOAT / 2, -i::FLOAT, 0.25]::FLOAT[4] AS embedding, TIMESTAMP '2024-09-15' AS anchor_time FROM range(5000) t(i)) TO '${file}' (FORMAT parquet)`);
      });
      const r = await publishSnapshot({ path: file, kind: 'embedding', model: 'customers', run_id: 'run-7', anchor_time: '2024-09-15T00:00:00.000Z', dim: 4 }, { ...target, keyPrefix: 'pq' });
      const version = versionName('2024-09-15T00:00:00.000Z', 'run-7');
      expect(version).toBe('20240915T000000Z.run-7');
      expect(r).toMatchObject({ count: 5000, version });
      expect(decodeVector((await client.get(valueKey('pq', 'customers', version, 'k4321')))!, 4)).toEqual(Float32Array.of(4321, 2160.5, -4321, 0.25));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
