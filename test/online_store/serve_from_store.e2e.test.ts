/**
 * `serve --online-store` against a real redis-server: a model whose embedding is an input (as
 * `export --embeddings-from-store` declares it in config.pbtxt) answers from the published version, picks
 * up a newly published version without a restart, and keeps answering every request — on its fallback
 * row, counted — while Redis is stopped mid-load, then recovers when Redis is back.
 */
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeVector } from '../../src/artifacts/online_store.js';
import { attr, floatScalar, int64s, OnnxGraphBuilder } from '../../src/artifacts/onnx/index.js';
import { writeModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { writeFileAtomic } from '../../src/core/atomic.js';
import { writeVersionFolder } from '../../src/loadgen/synthetic_model.js';
import { publishValues, type ValueBatch } from '../../src/online_store/publisher.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { available, startRedis, type TestRedis } from './redis_server.js';

const DIM = 4;
const KEY = 'transactions.customer_id';
const EMB = 'entity.customers.embedding';
const MISSING = 'entity.customers.missing';
/** What the model answers for a row on its fallback row: far from any sum of published values. */
const FALLBACK = 1000;

/** probability = sum(embedding) + 1000 · missing: which row a request got is visible in the answer. */
function writeStoreModel(root: string): void {
  const g = new OnnxGraphBuilder();
  g.addInput(KEY, 'STRING', ['batch', 1]);
  const emb = g.addInput(EMB, 'FLOAT', ['batch', DIM]);
  const missing = g.addInput(MISSING, 'FLOAT', ['batch', 1]);
  const sum = g.op('ReduceSum', [emb, int64s(g, [1], 'axes')], { keepdims: attr.int(1) });
  const out = g.op('Add', [sum, g.op('Mul', [missing, floatScalar(g, FALLBACK, 'fallback')])]);
  g.addOutput('probability', 'FLOAT', ['batch', 1], { from: out });
  const dir = join(root, 'store-model');
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(
    join(dir, 'config.pbtxt'),
    writeModelConfig({
      name: 'store-model',
      platform: 'onnxruntime_onnx',
      max_batch_size: 16,
      input: [
        { name: KEY, data_type: 'TYPE_STRING', dims: [1] },
        { name: EMB, data_type: 'TYPE_FP32', dims: [DIM], optional: true },
        { name: MISSING, data_type: 'TYPE_FP32', dims: [1], optional: true },
      ],
      output: [{ name: 'probability', data_type: 'TYPE_FP32', dims: [1] }],
      dynamic_batching: { max_queue_delay_microseconds: 200 },
      parameters: {
        [`online_store:${EMB}`]: { string_value: JSON.stringify({ table: 'customers', key: KEY, missing: MISSING, run_id: 'run-1' }) },
        [`missing_value:${EMB}`]: { string_value: '0' },
        [`missing_value:${MISSING}`]: { string_value: '1' },
      },
    }),
  );
  writeVersionFolder(dir, 1, g.toBytes());
}

const vectorOf = (i: number, version: number) => Float32Array.from({ length: DIM }, (_, j) => version * 10 + i / 100 + j);
const sumOf = (v: Float32Array) => v.reduce((a, b) => a + b, 0);

async function* values(n: number, version: number): AsyncGenerator<ValueBatch> {
  yield { keys: Array.from({ length: n }, (_, i) => `c${i}`), values: Array.from({ length: n }, (_, i) => Buffer.from(encodeVector(vectorOf(i, version)))) };
}

describe.skipIf(!available)('serve --online-store', () => {
  let redis: TestRedis;
  let repo: string;
  let server: RunningServer;
  const logs: string[] = [];
  const publish = (version: number, runId = 'run-1') =>
    publishValues(values(50, version), { target: { url: redis.url, keyPrefix: 'gnnctl', ttlSeconds: 600 }, model: 'customers', version: `v${version}`, kind: 'embedding', dim: DIM, runId, anchorTime: '2024-09-15T00:00:00.000Z' });
  const infer = async (key: string): Promise<{ status: number; value?: number }> => {
    const res = await fetch(`${server.url}/v2/models/store-model/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: KEY, datatype: 'BYTES', shape: [1, 1], data: [key] }] }) });
    const body = (await res.json()) as { outputs?: { data: number[] }[] };
    return { status: res.status, value: body.outputs?.[0]?.data[0] };
  };
  const metric = async (source: string): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const m = new RegExp(`gnnctl_online_store_rows_total\\{model="store-model",source="${source}"\\} (\\d+)`).exec(text);
    return m ? Number(m[1]) : 0;
  };

  beforeAll(async () => {
    redis = await startRedis();
    repo = mkdtempSync(join(tmpdir(), 'gnnctl-store-serve-'));
    writeStoreModel(repo);
    await publish(1);
    server = await startServer({ modelRepository: repo, port: 0, pollIntervalMs: 0, onlineStore: { url: redis.url, deadlineMs: 50, pollMs: 100 }, log: (line) => logs.push(line) });
  });
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
    rmSync(repo, { recursive: true, force: true });
  });

  it('answers from the published embeddings (Redis, then the LRU); an unknown key gets the fallback row', async () => {
    expect((await infer('c7')).value).toBeCloseTo(sumOf(vectorOf(7, 1)), 4);
    expect((await infer('c7')).value).toBeCloseTo(sumOf(vectorOf(7, 1)), 4);
    expect((await infer('nobody')).value).toBeCloseTo(FALLBACK, 4);
    expect(await metric('redis')).toBeGreaterThanOrEqual(1);
    expect(await metric('lru')).toBeGreaterThanOrEqual(1);
    expect(await metric('miss')).toBe(1);
    expect(await (await fetch(`${server.url}/metrics`)).text()).toContain('gnnctl_online_store_fetch_seconds_bucket');
  });

  it('picks up a newly published version without a restart', async () => {
    await publish(2);
    const deadline = Date.now() + 10_000;
    let v = 0;
    while (Date.now() < deadline) {
      v = (await infer('c8')).value!;
      if (Math.abs(v - sumOf(vectorOf(8, 2))) < 1e-3) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(v).toBeCloseTo(sumOf(vectorOf(8, 2)), 4);
  });

  it('with Redis stopped mid-load: no failed request, fallbacks counted; answers from the store again once it is back', async () => {
    const fallbacksBefore = await metric('fallback');
    let failed = 0;
    let answered = 0;
    let stop = false;
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        // Keys beyond the LRU's reach would still be cached: use new keys so each request asks Redis.
        const r = await infer(`c${10 + (i % 40)}-${i}`);
        if (r.status !== 200) failed++;
        else answered++;
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await redis.stop(true);
    await new Promise((r) => setTimeout(r, 800));
    await redis.start();
    stop = true;
    await load;
    expect(failed).toBe(0);
    expect(answered).toBeGreaterThan(0);
    expect(await metric('fallback')).toBeGreaterThan(fallbacksBefore);

    // The restarted Redis is empty (no persistence): publish again, and the store serves once more.
    await publish(3);
    const deadline = Date.now() + 15_000;
    let v = 0;
    while (Date.now() < deadline) {
      v = (await infer('c9')).value!;
      if (Math.abs(v - sumOf(vectorOf(9, 3))) < 1e-3) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(v).toBeCloseTo(sumOf(vectorOf(9, 3)), 4);
  });

  it('a version published from another deep run is not served: the fallback row, counted, until the expected run is back', async () => {
    const fallbacksBefore = await metric('fallback');
    await publish(4, 'run-2');
    const until = async (want: number) => {
      const deadline = Date.now() + 15_000;
      let v = 0;
      while (Date.now() < deadline) {
        v = (await infer('c11')).value!;
        if (Math.abs(v - want) < 1e-3) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return v;
    };
    expect(await until(FALLBACK)).toBeCloseTo(FALLBACK, 4);
    expect(await metric('fallback')).toBeGreaterThan(fallbacksBefore);
    expect(logs.join('\n')).toContain('version v4 was published from run run-2, the model expects embeddings of run run-1');
    await publish(5);
    expect(await until(sumOf(vectorOf(11, 5)))).toBeCloseTo(sumOf(vectorOf(11, 5)), 4);
  });
});
