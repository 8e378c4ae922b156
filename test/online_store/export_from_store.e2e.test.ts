/**
 * `export --embeddings-from-store` end to end on tiny synthetic data against a real redis-server:
 * distill, export the same run twice (baked-in tables, and embeddings as inputs), publish the snapshot the
 * baked export used, serve both with `--online-store`, and the store-backed model answers each row as the
 * baked-in one does. A version published later is served without a restart; with Redis stopped every
 * request still answers (on the model's fallback row, counted).
 */
import * as ort from 'onnxruntime-node';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeVector, encodeVector, pointerKey, valueKey } from '../../src/artifacts/online_store.js';
import { parseModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { readFileSync } from 'node:fs';
import { exportCommand } from '../../src/cli/commands/export.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { distill } from '../../src/distill/distill.js';
import { exportModel, type ExportResult } from '../../src/export/export.js';
import { rawRequests, type RawRequests } from '../../src/export/parity.js';
import { elemTypeOf, requestInputs } from '../../src/export/student_onnx.js';
import { EntitySource } from '../../src/export/entity_source.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { readModelJson } from '../../src/artifacts/run_store.js';
import { publishSnapshot } from '../../src/online_store/publish_snapshot.js';
import { publishValues, type ValueBatch } from '../../src/online_store/publisher.js';
import { connectRedis } from '../../src/online_store/redis_connection.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { train } from '../../src/train/trainer.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';
import { available, startRedis, type TestRedis } from './redis_server.js';

const ROWS = 40;
const PREFIX = 'e2e';

describe.skipIf(!available)('export --embeddings-from-store, served from Redis', () => {
  let fx: SynthFixture;
  let cfg: Config;
  let spec: StudentSpec;
  let redis: TestRedis;
  let repo: string;
  let baked: ExportResult;
  let store: ExportResult;
  let server: RunningServer;
  let req: RawRequests;
  let baseRun: string;
  /** the baked export's snapshot of each embedded table (what it bakes in, what is published) */
  const snapshots = new Map<string, string>();

  /** One batch-1 KServe V2 request for row `i` of the rebuilt requests (INT64 as strings: ns exceed 2^53). */
  const body = (i: number): string =>
    JSON.stringify({
      inputs: requestInputs(spec).map((inp) => {
        const width = inp.sequence ? req.seq : 1;
        const v = Array.from((req.values.get(inp.name) as ArrayLike<unknown>) ?? []).slice(i * width, (i + 1) * width);
        const data = v.map((x) => (typeof x === 'bigint' ? x.toString() : x));
        return { name: inp.name, datatype: inp.elemType === 'FLOAT' ? 'FP32' : inp.elemType === 'INT64' ? 'INT64' : 'BYTES', shape: inp.sequence ? [1, width, 1] : [1, 1], data };
      }),
    });
  const infer = async (model: string, i: number): Promise<{ status: number; value: number }> => {
    const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: 'POST', body: body(i) });
    const json = (await res.json()) as { outputs?: { data: number[] }[]; error?: string };
    return { status: res.status, value: json.outputs?.[0]?.data[0] ?? Number.NaN };
  };
  const rowsMetric = async (source: string): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const m = new RegExp(`gnnctl_online_store_rows_total\\{model="${store.model}",source="${source}"\\} (\\d+)`).exec(text);
    return m ? Number(m[1]) : 0;
  };
  /**
   * The store model's answers straight from onnxruntime, with each row's embedding from `vectorOf` (the
   * fallback row where it gives none): what the server must answer when the store holds those vectors.
   */
  const ortAnswers = async (vectorOf: (table: string, key: string) => Float32Array | undefined): Promise<Float32Array> => {
    const session = await ort.InferenceSession.create(join(store.dir, 'model.onnx'));
    try {
      const out = new Float32Array(ROWS);
      for (let i = 0; i < ROWS; i++) {
        const feeds: Record<string, ort.Tensor> = {};
        const parsed = JSON.parse(body(i)) as { inputs: { name: string; datatype: string; shape: number[]; data: unknown[] }[] };
        for (const t of parsed.inputs) {
          feeds[t.name] =
            t.datatype === 'FP32'
              ? new ort.Tensor('float32', Float32Array.from(t.data as number[]), t.shape)
              : t.datatype === 'INT64'
                ? new ort.Tensor('int64', BigInt64Array.from(t.data as string[], (x) => BigInt(x)), t.shape)
                : new ort.Tensor('string', t.data as string[], t.shape);
        }
        for (const s of store.online_store!) {
          const v = vectorOf(s.table, keyOf(s.key, i));
          feeds[s.input] = new ort.Tensor('float32', v ?? new Float32Array(s.dim), [1, s.dim]);
          feeds[s.missing] = new ort.Tensor('float32', Float32Array.of(v ? 0 : 1), [1, 1]);
        }
        out[i] = (await session.run(feeds))[session.outputNames[0]!]!.data[0] as number;
      }
      return out;
    } finally {
      await session.release();
    }
  };
  const keyOf = (input: string, i: number): string => String((req.values.get(input) as ArrayLike<unknown>)[i]);
  /** The v1 vectors of the keys the requests use, read back from Redis: `<table>\0<key>` → vector. */
  const v1 = new Map<string, Float32Array>();
  const waitUntil = async (what: string, ok: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (await ok()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  beforeAll(async () => {
    setQuiet(true);
    await selectBackend('wasm');
    redis = await startRedis();
    fx = await tinySynth(pipelineConfig());
    cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
    const base = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
    baseRun = base.runId;
    const distilled = await distill({ cfg, base: base.runId, backend: 'wasm' });
    spec = readModelJson<StudentSpec>(distilled.runDir, 'student.json');
    repo = join(fx.artifacts, 'repo');
    baked = await exportModel({ cfg, run: distilled.runId, out: repo, name: 'baked', backend: 'wasm', parityExamples: 64 });
    for (const f of readdirSync(baked.dir).filter((f) => /^embeddings\..+\.parquet$/.test(f))) snapshots.set(f.split('.')[1]!, join(baked.dir, f));
    // The command a user runs, with the same snapshots the baked export used.
    store = (await exportCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, run: distilled.runId, out: repo, name: 'store', embeddings: [...snapshots.values()], embeddingsFromStore: true, backend: 'wasm' })).result as ExportResult;

    const graph = Graph.load((await buildGraph(cfg)).dir);
    const f = graph.table(spec.fact_table);
    const nodes = Int32Array.from({ length: ROWS }, (_, i) => f.rows - ROWS + i);
    const sources = await Promise.all(
      spec.embeddings.map((k) => EntitySource.open({ table: k.target, files: [snapshots.get(k.target)!], key: graph.manifest.schema.tables[k.target]!.primary_key!.column, dim: k.dim }, elemTypeOf(k.type) === 'INT64' ? 'INT64' : 'STRING')),
    );
    req = (await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation?.real_time_offset ?? 0, nodes, sources)).requests;

    for (const [table, path] of snapshots) {
      await publishSnapshot({ path, kind: 'embedding', model: table, run_id: base.runId, anchor_time: baked.embedding_anchor[table]!, dim: spec.embeddings.find((k) => k.target === table)!.dim }, { url: redis.url, keyPrefix: PREFIX, ttlSeconds: 600 });
    }
    // No LRU: every request asks Redis, so stopping it shows at once.
    server = await startServer({ modelRepository: repo, port: 0, pollIntervalMs: 0, onlineStore: { url: redis.url, keyPrefix: PREFIX, lruSize: 0, deadlineMs: 200, pollMs: 100 } });
  }, 600_000);
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
    fx?.cleanup();
    setQuiet(false);
  });

  it('writes a model without embedding tables, whose config binds each embedding input to its keyspace', () => {
    expect(store.online_store?.map((s) => s.table).sort()).toEqual([...new Set(spec.embeddings.map((k) => k.target))].sort());
    expect(readdirSync(store.dir).some((f) => f.startsWith('embeddings.'))).toBe(false);
    expect(existsSync(join(store.dir, 'model.onnx.data'))).toBe(false);
    expect(store.model_bytes).toBeLessThan(baked.model_bytes);
    // The export's own check: onnxruntime with the snapshot's vectors fed in agrees with TF.js.
    expect(store.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
    const config = parseModelConfig(readFileSync(join(repo, 'store', 'config.pbtxt'), 'utf8'));
    for (const s of store.online_store!) {
      expect(JSON.parse(config.parameters![`online_store:${s.input}`]!.string_value!)).toEqual({ table: s.table, key: s.key, missing: s.missing, run_id: baseRun });
      expect(config.input!.find((i) => i.name === s.input)).toMatchObject({ data_type: 'TYPE_FP32', dims: [s.dim], optional: true });
    }
  });

  it('answers every row as the baked-in export does, from the published embeddings', async () => {
    const client = await connectRedis(redis.url);
    try {
      for (const s of store.online_store!) {
        const version = (await client.get(pointerKey(PREFIX, s.table)))!.toString();
        for (let i = 0; i < ROWS; i++) {
          const bytes = await client.get(valueKey(PREFIX, s.table, version, keyOf(s.key, i)));
          if (bytes) v1.set(`${s.table}\0${keyOf(s.key, i)}`, decodeVector(bytes, s.dim)!);
        }
      }
    } finally {
      client.destroy();
    }
    expect(v1.size).toBeGreaterThan(0);
    const fallback = await ortAnswers(() => undefined);
    let differs = 0;
    for (let i = 0; i < ROWS; i++) {
      const a = await infer('baked', i);
      const b = await infer('store', i);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(Math.abs(a.value - b.value)).toBeLessThanOrEqual(1e-5);
      if (Math.abs(b.value - fallback[i]!) > 1e-6) differs++;
    }
    // The embeddings matter to these rows: the fallback row answers differently.
    expect(differs).toBeGreaterThan(0);
    expect(await rowsMetric('redis')).toBeGreaterThanOrEqual(ROWS);
  });

  it('serves a newly published version without a restart', async () => {
    const s0 = store.online_store![0]!;
    // Version 2 of the first table holds half the keys the requests use: the others become misses.
    const keys = [...new Set(Array.from({ length: ROWS }, (_, i) => keyOf(s0.key, i)))].filter((k) => v1.has(`${s0.table}\0${k}`));
    const kept = new Set(keys.slice(0, Math.ceil(keys.length / 2)));
    async function* batch(): AsyncGenerator<ValueBatch> {
      yield { keys: [...kept], values: [...kept].map((k) => Buffer.from(encodeVector(v1.get(`${s0.table}\0${k}`)!))) };
    }
    const missesBefore = await rowsMetric('miss');
    await publishValues(batch(), { target: { url: redis.url, keyPrefix: PREFIX, ttlSeconds: 600 }, model: s0.table, version: 'v2', kind: 'embedding', dim: s0.dim, runId: baseRun, anchorTime: '2024-01-01T00:00:00.000Z' });
    const want = await ortAnswers((table, key) => (table === s0.table && !kept.has(key) ? undefined : v1.get(`${table}\0${key}`)));
    const dropped = Array.from({ length: ROWS }, (_, i) => i).filter((i) => !kept.has(keyOf(s0.key, i)));
    expect(dropped.length).toBeGreaterThan(0);
    await waitUntil('version v2 to be served', async () => Math.abs((await infer('store', dropped[0]!)).value - want[dropped[0]!]!) <= 1e-5);
    for (let i = 0; i < ROWS; i++) expect(Math.abs((await infer('store', i)).value - want[i]!)).toBeLessThanOrEqual(1e-5);
    expect(await rowsMetric('miss')).toBeGreaterThan(missesBefore);
  });

  it('with Redis stopped, every request answers on the fallback row and is counted', async () => {
    const fallback = await ortAnswers(() => undefined);
    const before = await rowsMetric('fallback');
    await redis.stop(true);
    let failed = 0;
    for (let i = 0; i < ROWS; i++) {
      const r = await infer('store', i);
      if (r.status !== 200) failed++;
      else expect(Math.abs(r.value - fallback[i]!)).toBeLessThanOrEqual(1e-5);
    }
    expect(failed).toBe(0);
    expect((await rowsMetric('fallback')) - before).toBeGreaterThanOrEqual(ROWS);
  });
});
