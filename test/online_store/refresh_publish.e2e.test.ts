/**
 * `refresh --publish` end to end on tiny synthetic data: the pipeline trains, exports and publishes (the
 * config's `online_store:` block), then a refresh embeds, exports the next version and publishes each
 * embedded table to a real redis-server; the store then holds every entity's embedding, byte for byte as
 * in the refreshed embeddings.parquet. `refresh` follows the block too, and a flag overrides its field.
 */
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeVector, pointerKey, valueKey } from '../../src/artifacts/online_store.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { queryRows, withDuck, lit } from '../../src/data/duck.js';
import { connectRedis } from '../../src/online_store/redis_connection.js';
import { pipelineCommand, refreshCommand } from '../../src/cli/commands/pipeline.js';
import type { PipelineResult } from '../../src/pipeline/pipeline.js';
import { refreshJob, type RefreshResult } from '../../src/pipeline/refresh.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';
import { available, startRedis, type TestRedis } from './redis_server.js';

describe.skipIf(!available)('refresh --publish', () => {
  let fx: SynthFixture;
  let cfg: Config;
  let redis: TestRedis;
  let pipeline: PipelineResult;
  beforeAll(async () => {
    await selectBackend('wasm');
    redis = await startRedis();
    fx = await tinySynth(pipelineConfig());
    appendFileSync(fx.config, `\nonline_store: { url: "${redis.url}", key_prefix: blk, ttl: 1 hour }\n`);
    cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
    pipeline = (await pipelineCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, distillEpochs: 2 })).result as PipelineResult;
  }, 600_000);
  afterAll(async () => {
    fx?.cleanup();
    await redis?.stop();
  });

  it('publishes every refreshed embedding as the current version of its table', async () => {
    const r = (await refreshJob({ cfg, cwd: fx.dir, publish: { url: redis.url, keyPrefix: 'e2e', ttlSeconds: 600 } })) as RefreshResult;
    expect(r.published?.length).toBe(r.embeddings.length);
    const client = await connectRedis(redis.url);
    try {
      for (const [i, e] of r.embeddings.entries()) {
        const p = r.published![i]!;
        expect(p.count).toBe(r.embedding_rows[e.table]);
        expect((await client.get(pointerKey('e2e', e.table)))?.toString()).toBe(p.version);
        // The key column is the one that is neither the embedding nor the anchor.
        const rows = await withDuck(({ conn }) =>
          queryRows<{ k: string; v: string }>(conn, `SELECT CAST(COLUMNS(* EXCLUDE (anchor_time, embedding)) AS VARCHAR) AS k, CAST(CAST(embedding AS DOUBLE[]) AS VARCHAR) AS v FROM read_parquet(${lit(e.path)}) LIMIT 3`),
        );
        expect(rows.length).toBe(3);
        for (const row of rows) {
          const stored = decodeVector((await client.get(valueKey('e2e', e.table, p.version, row.k)))!, e.dim);
          expect(stored).toEqual(Float32Array.from(JSON.parse(row.v) as number[]));
        }
      }
    } finally {
      client.destroy();
    }
  }, 300_000);

  it('pipeline publishes each embedded table with the online_store block\'s prefix and TTL', async () => {
    expect(pipeline.published?.length).toBeGreaterThan(0);
    const client = await connectRedis(redis.url);
    try {
      for (const p of pipeline.published!) {
        expect(p.pointer_key).toBe(pointerKey('blk', p.model));
        expect((await client.get(p.pointer_key))?.toString()).toBe(p.version);
        const [key] = await client.keys(`blk:${p.model}:${p.version}:*`);
        const ttl = await client.ttl(key!);
        expect(ttl).toBeGreaterThan(3000);
        expect(ttl).toBeLessThanOrEqual(3600);
      }
    } finally {
      client.destroy();
    }
  });

  it('refresh publishes to the block\'s URL; --publish-prefix overrides its key_prefix', async () => {
    const r = (await refreshCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, publishPrefix: 'flag' })).result as RefreshResult;
    expect(r.published?.length).toBe(r.embeddings.length);
    for (const p of r.published!) expect(p.pointer_key).toBe(pointerKey('flag', p.model));
  }, 300_000);
});
