/**
 * Entity tasks in distillation: churn per customer at request time. The student reads the customer's key
 * (its as-of embedding looked up), its own columns and its recent transactions (the entity hop path
 * `customers.customer_id->transactions.customer_id`), is trained on the base run's anchors, exported with
 * a passing TF.js/onnxruntime self-check, and served: a Kumo-shaped request with `anchor_time` and the
 * customer key gets the same probability from `gnnctl serve`'s server as from onnxruntime directly.
 * Config validation guards the new grammar; the one unsupported combination says so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { ConfigError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { distill, type DistillResult } from '../../src/distill/distill.js';
import { computedEmbeddings, denseValues, embeddingFiles, entityFileEmbeddings, entityRtiElements } from '../../src/distill/data.js';
import { embed } from '../../src/embed/embed.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { exportModel, type ExportResult } from '../../src/export/export.js';
import { feeds, rawRequests } from '../../src/export/parity.js';
import { requestInputs } from '../../src/export/student_onnx.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { maxAbsDiff, pipelineConfig, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const ENTITY_PATH = 'customers.customer_id->transactions.customer_id';
const entityDistillation = {
  task: 'churn',
  base: 'churn',
  embedding_keys: ['customers.customer_id'],
  real_time_interactions: { [ENTITY_PATH]: 8 },
  exclude_columns: [],
  embedding_cadence: '7 days',
  max_embedding_offset: '14 days',
  min_embedding_offset: '0 hours',
  real_time_offset: '0 hours',
  train_window: '16 weeks',
};

let fx: SynthFixture;
let cfg: Config;
let base: TrainResult;
let student: DistillResult;
let exported: ExportResult;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig({ distillation: entityDistillation }));
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  base = await train({ cfg, task: 'churn', backend: 'wasm', skip_baseline: true });
  student = await distill({ cfg, base: base.runId, backend: 'wasm', cwd: fx.dir });
  exported = await exportModel({ cfg, run: student.runId, backend: 'wasm', cwd: fx.dir });
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe('distilling churn per customer', () => {
  it('trains on the base run\'s (customer, anchor) examples with the teacher as reference and embeddings for most examples', () => {
    const m = student.metrics;
    expect(m).toMatchObject({ task: 'churn', kind: 'binary', base_run: base.runId, base_task: 'churn' });
    expect(m.counts.test).toBe(base.metrics.counts.test); // the same test examples as the deep run
    expect(m.teacher).not.toBeNull();
    expect(m.teacher_ratio).toBeGreaterThan(0);
    expect(m.embeddings.coverage.test).toBeGreaterThan(0.5);
    expect((m.test as { auroc: number }).auroc).toBeGreaterThan(0);
  });

  it('RTI elements are the customer\'s own transactions strictly before the anchor, most recent first', async () => {
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const hop = cfg.hopPaths[0]!;
    const anchor = Date.parse('2020-06-01T00:00:00Z') / 1000;
    const nodes = Int32Array.from({ length: 50 }, (_, i) => i);
    const lists = entityRtiElements(graph, hop, nodes, new Float64Array(50).fill(anchor), 0);
    const keys = await sqlRows(`SELECT customer_id AS k FROM read_parquet(${sqlPath(join(graph.dir, graph.manifest.tables.customers!.rows_file))}) ORDER BY __node LIMIT 50`);
    const txTime = graph.table('transactions').time!;
    const txCustomer = graph.edges.find((e) => e.kind === 'fk' && e.src === 'transactions' && e.meta.column === 'customer_id')!.parent!;
    let some = 0;
    for (let i = 0; i < 50; i++) {
      const expected = await sqlRows(
        `SELECT count(*)::INTEGER AS n FROM read_csv(${sqlPath(join(fx.dir, 'transactions.csv'))}, all_varchar = true) WHERE customer_id = '${keys[i]!.k as string}' AND CAST(t_dat AS TIMESTAMP) < TIMESTAMP '2020-06-01 00:00:00'`,
      );
      const got = Array.from(lists.subarray(i * 8, (i + 1) * 8)).filter((v) => v >= 0);
      expect(got.length).toBe(Math.min(8, expected[0]!.n as number));
      for (const el of got) {
        expect(txCustomer[el]).toBe(i);
        expect(txTime[el]!).toBeLessThan(anchor);
      }
      for (let j = 1; j < got.length; j++) expect(txTime[got[j]!]!).toBeLessThanOrEqual(txTime[got[j - 1]!]!);
      if (got.length > 0) some++;
    }
    expect(some).toBeGreaterThan(5);
  });
});

describe('export and serve', () => {
  let server: ChildProcess;
  let port: number;
  let serverLog = '';
  let spec: StudentSpec;
  // The real binary, as a user runs it: `gnnctl serve --model-repository <repo> --port <p>`.
  beforeAll(async () => {
    spec = JSON.parse(readFileSync(join(student.runDir, 'model', 'student.json'), 'utf8')) as StudentSpec;
    port = await freePort();
    server = spawn(process.execPath, [BIN, 'serve', '--model-repository', exported.repository, '--port', String(port), '--json'], { cwd: fx.dir });
    server.stderr!.on('data', (b: Buffer) => (serverLog += b.toString()));
    let status = 0;
    for (let i = 0; i < 600 && status !== 200; i++) {
      status = await fetch(`http://127.0.0.1:${port}/v2/health/ready`).then((r) => r.status, () => 0);
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, serverLog).toBe(200);
  }, 120_000);
  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.on('exit', resolve));
    }
  });

  it('the model\'s inputs are anchor_time, the customer key, its own columns and its transactions; the self-check passed', () => {
    const names = requestInputs(spec).map((i) => i.name);
    expect(names[0]).toBe('anchor_time');
    expect(names).toContain('customers.customer_id');
    expect(names.filter((n) => n === 'customers.customer_id')).toHaveLength(1);
    expect(names.some((n) => n.startsWith(`${ENTITY_PATH}:`))).toBe(true);
    expect(names).toContain(`${ENTITY_PATH}:t_dat`);
    expect(names.every((n) => n === 'anchor_time' || n.startsWith('customers.'))).toBe(true);
    expect(exported.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
    expect(exported.parity!.examples).toBeGreaterThan(0);
  });

  it('a Kumo-shaped request (anchor_time + customer key + recent transactions) gets onnxruntime\'s probability from the server; an unknown key gets the fallback', async () => {
    const graph = Graph.load((await buildGraph(cfg)).dir);
    // JSON has no NaN: requests for customers whose numeric columns are all present.
    const all = Int32Array.from({ length: 100 }, (_, i) => i);
    const noEntities = spec.embeddings.map((k) => ({ keys: [], vectors: new Float32Array(0), dim: k.dim }));
    const probe = await rawRequests(graph, spec, cfg.hopPaths, 0, all, noEntities, new Float64Array(100).fill(graph.manifest.time_range![1]));
    const complete = Array.from(all).filter((i) => spec.numeric.every((c) => Number.isFinite((probe.requests.values.get(`customers.${c.column}`) as Float32Array)[i]!)));
    expect(complete.length).toBeGreaterThanOrEqual(4);
    const nodes = Int32Array.from(complete.slice(0, 4));
    const anchors = new Float64Array(4).fill(graph.manifest.time_range![1]);
    const { requests } = await rawRequests(graph, spec, cfg.hopPaths, 0, nodes, noEntities, anchors);
    // At least one of them has recent transactions in its request.
    expect((requests.values.get(`${ENTITY_PATH}:t_dat`) as BigInt64Array).some((t) => t > 0n)).toBe(true);
    const session = await ort.InferenceSession.create(join(exported.dir, 'model.onnx'));
    const url = `http://127.0.0.1:${port}/v2/models/${exported.model}/infer`;
    try {
      for (let i = 0; i < nodes.length; i++) {
        const feed = feeds(spec, requests, i, i + 1);
        const direct = (await session.run(feed))[session.outputNames[0]!]!.data as Float32Array;
        const body = { inputs: Object.entries(feed).map(([name, t]) => ({ name, shape: t.dims, datatype: t.type === 'string' ? 'BYTES' : t.type === 'int64' ? 'INT64' : 'FP32', data: Array.from(t.data as ArrayLike<unknown>, (v) => (typeof v === 'bigint' ? v.toString() : v)) })) };
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status, await res.clone().text()).toBe(200);
        const out = (await res.json()) as { outputs: { name: string; data: number[] }[] };
        expect(out.outputs[0]!.name).toBe('probability');
        expect(Math.abs(out.outputs[0]!.data[0]! - direct[0]!)).toBeLessThanOrEqual(1e-6);
        expect(direct[0]!).toBeGreaterThan(0);
        expect(direct[0]!).toBeLessThan(1);
      }
      // An unknown customer with no history: the learned fallback embedding, still a probability.
      const feed = feeds(spec, requests, 0, 1);
      const body = {
        inputs: Object.entries(feed).map(([name, t]) => {
          const seq = t.dims.length === 3;
          const datatype = t.type === 'string' ? 'BYTES' : t.type === 'int64' ? 'INT64' : 'FP32';
          if (name === 'customers.customer_id') return { name, shape: [1, 1], datatype, data: ['no-such-customer'] };
          if (seq) return { name, shape: [1, 0, 1], datatype, data: [] };
          return { name, shape: t.dims, datatype, data: Array.from(t.data as ArrayLike<unknown>, (v) => (typeof v === 'bigint' ? v.toString() : v)) };
        }),
      };
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, await res.clone().text()).toBe(200);
      const p = ((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data[0]!;
      expect(p > 0 && p < 1).toBe(true);
    } finally {
      await session.release();
    }
  });
});

describe('config and flags', () => {
  const write = (name: string, distillation: Record<string, unknown>) => {
    const path = join(fx.dir, `${name}.yaml`);
    writeFileSync(path, pipelineConfig({ distillation }));
    return path;
  };
  const problems = (path: string): string => {
    try {
      loadConfig(path, { cwd: fx.dir, artifacts: fx.artifacts });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).describe();
    }
    return '';
  };

  it('an entity task with a fact-row hop path, or a fact-row task (fraud) with an entity path, is refused naming the path', () => {
    expect(problems(write('entity-fact-path', { ...entityDistillation, real_time_interactions: { 'transactions.customer_id->customers.customer_id->transactions.customer_id': 8 } }))).toMatch(
      /real_time_interactions[\s\S]*two steps for an entity task: <entity>\.<primary key>-><child>\.<fk>/,
    );
    expect(problems(write('fact-entity-path', { real_time_interactions: { [ENTITY_PATH]: 8 } }))).toMatch(/real_time_interactions[\s\S]*three steps for a fact-row task/);
    // Right length, wrong start: an entity path from another table.
    expect(problems(write('entity-other-start', { ...entityDistillation, real_time_interactions: { 'articles.article_id->transactions.article_id': 8 } }))).toMatch(
      /must start at the serving table customers[\s\S]*customers\.customer_id->/,
    );
  });

  it('a malformed entity path and a non-key embedding key are refused with the grammar and a suggestion', () => {
    const text = problems(write('bad-entity', { ...entityDistillation, embedding_keys: ['customers.age'], real_time_interactions: { 'customers.age->transactions.customer_id': 8 } }));
    expect(text).toMatch(/customers\.age is not the primary key of customers/);
    expect(text).toMatch(/"customers\.age" is not a foreign key or the entity's primary key/);
    expect(problems(write('bad-grammar', { ...entityDistillation, real_time_interactions: { customers: 8 } }))).toMatch(/<entity>\.<primary key>-><child>\.<fk>/);
  });

  it('gnnctl distill (the real binary) --json refuses a bad early_stopping_metric and rti_minute_recency with exit 2, naming both keys', () => {
    const path = write('bad-stopping', { ...entityDistillation, early_stopping_metric: 'f1', rti_minute_recency: 'often' });
    const r = spawnSync(process.execPath, [BIN, 'distill', '-c', path, '--base', base.runDir, '--artifacts', fx.artifacts, '--json'], { cwd: fx.dir, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(2);
    const out = `${r.stdout}${r.stderr}`;
    expect(out).toContain('distillation.early_stopping_metric');
    expect(out).toContain('distillation.rti_minute_recency');
    expect(JSON.parse(r.stdout)).toMatchObject({ error: expect.anything() });
  });

  it('gnnctl distill --task churn (the real binary) --json distils the entity task; a bad --epochs exits 2', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [BIN, 'distill', '-c', fx.config, '--base', base.runDir, '--task', 'churn', '--artifacts', fx.artifacts, '--backend', 'wasm', ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 300_000 });
    const ok = run(['--epochs', '1', '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ task: 'churn' });
    const bad = run(['--epochs', 'many', '--json']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--epochs');
  });

  it('distill --embeddings with an entity task reads the snapshot files as of each (customer, anchor): the same vectors, snapshots and coverage as the computed run', async () => {
    const anchors = student.metrics.embeddings.snapshots;
    expect(anchors.length).toBeGreaterThan(0);
    for (const anchorTime of anchors) await embed({ cfg, run: base.runId, table: 'customers', anchorTime, backend: 'wasm' });
    const snapshotDir = join(fx.artifacts, 'embeddings', base.runId);
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const model = DeepModel.load(base.runDir, graph);
    try {
      // 200 customers three days after each snapshot the run used (its grid anchor is that snapshot);
      // customers created later are missing in both.
      const snaps = anchors.map((a) => Date.parse(a) / 1000);
      const nodes = Int32Array.from({ length: snaps.length * 200 }, (_, i) => i % 200);
      const times = Float64Array.from(nodes, (_, i) => snaps[Math.floor(i / 200)]! + 3 * 86400);
      const offsets = { min: 0, max: 14 * 86400 };
      const computed = await computedEmbeddings(model, nodes, times, 'customers', { ...offsets, cadence: 7 * 86400 }, 1000);
      const fromFiles = await entityFileEmbeddings(graph, embeddingFiles(snapshotDir), 'customers', 'customer_id', nodes, times, offsets, model.spec.channels);
      expect(Array.from(fromFiles.missing)).toEqual(Array.from(computed.missing));
      expect(fromFiles.missing.reduce((a, b) => a + b, 0)).toBeLessThan(nodes.length);
      expect(maxAbsDiff(fromFiles.values, denseValues(computed))).toBeLessThanOrEqual(1e-6);
    } finally {
      model.dispose();
    }
    const r = await distill({ cfg, base: base.runId, embeddings: snapshotDir, backend: 'wasm', cwd: fx.dir });
    expect(r.metrics.embeddings.source).toBe('files');
    expect(r.metrics.embeddings.coverage).toEqual(student.metrics.embeddings.coverage);
  });

  it('gnnctl distill --embeddings with a folder holding no snapshot files exits 3 naming --embeddings', () => {
    const empty = mkdtempSync(join(tmpdir(), 'gnnctl-noemb-'));
    try {
      const r = spawnSync(process.execPath, [BIN, 'distill', '-c', fx.config, '--base', base.runDir, '--task', 'churn', '--artifacts', fx.artifacts, '--backend', 'wasm', '--embeddings', empty, '--json'], { cwd: fx.dir, encoding: 'utf8', timeout: 300_000 });
      expect(r.status).toBe(3);
      expect(r.stderr).toContain('--embeddings');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
