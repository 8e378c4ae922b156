/**
 * `export` end to end on tiny synthetic data with the bundled distillation and export blocks: the Triton
 * repository layout and its lineage, config.pbtxt as Triton parses it, TF.js ↔ onnxruntime parity on
 * 1,000 rows at batch 1 and 256, unknown keys, refusal of skewed embeddings, and the request shape of
 * Kumo's online-serving docs (/work/shared/online-request-example.json) with 0, 3 and 32 RTI elements.
 */
import { tf } from '../../src/core/tf.js';
import * as ort from 'onnxruntime-node';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../src/cli/commands/export.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import type { DistillResult } from '../../src/distill/distill.js';
import { distill } from '../../src/distill/distill.js';
import { StudentFeatures } from '../../src/model/student/features.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { StudentModel } from '../../src/model/student/student.js';
import { embed } from '../../src/embed/embed.js';
import { ArtifactError, UsageError } from '../../src/core/errors.js';
import { exportModel, type ExportResult } from '../../src/export/export.js';
import { onnx } from '../../src/artifacts/onnx/index.js';
import { INT64_MIN } from '../../src/artifacts/onnx/ops/time.js';
import { checkParity, feeds, rawRequests } from '../../src/export/parity.js';
import { parseModelConfig, type TritonModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import type { EntityTable } from '../../src/export/student_onnx.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { loadWeights, readManifest, readModelJson } from '../../src/artifacts/run_store.js';
import { train, type TrainManifest, type TrainResult } from '../../src/train/trainer.js';
import { hashFile } from '../../src/core/hash.js';
import { setQuiet } from '../../src/core/log.js';
import { parquetKv, pipelineConfig, readEmbeddings, RTI_PATH, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const NAME = 'online-model';
const REQUEST_EXAMPLE = '/work/shared/online-request-example.json';

let fx: SynthFixture;
let cfg: Config;
let graph: Graph;
let base: TrainResult;
let distilled: DistillResult;
let spec: StudentSpec;
let repo: string;
let first: ExportResult;
/** the embedding snapshot folder the later exports reuse (so they skip embedding) */
let snapshots: string;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  base = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
  distilled = await distill({ cfg, base: base.runId, backend: 'wasm' });
  spec = readModelJson<StudentSpec>(distilled.runDir, 'student.json');
  graph = Graph.load((await buildGraph(cfg)).dir);
  repo = join(fx.artifacts, 'repo');
  first = await exportModel({ cfg, run: distilled.runId, out: repo, backend: 'wasm' });
  snapshots = join(fx.artifacts, 'embeddings', base.runId);
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

const versionDir = (v: number) => join(repo, NAME, String(v));

/** The exported embedding tables, in spec.embeddings order, as export bakes them (file order). */
async function entityTables(dir: string): Promise<EntityTable[]> {
  const out: EntityTable[] = [];
  for (const k of spec.embeddings) {
    const key = graph.manifest.schema.tables[k.target]!.primary_key!.column;
    const m = await readEmbeddings(join(dir, `embeddings.${k.target}.parquet`), key);
    const vectors = new Float32Array(m.size * k.dim);
    [...m.values()].forEach((v, i) => vectors.set(v, i * k.dim));
    out.push({ keys: [...m.keys()], vectors, dim: k.dim });
  }
  return out;
}

function loadStudent(): StudentModel {
  const m = new StudentModel(spec, 0, 0);
  const { index, blob } = loadWeights(distilled.runDir);
  m.params.load(index, blob);
  return m;
}

async function withSession<T>(fn: (s: ort.InferenceSession) => Promise<T>, v = first.version): Promise<T> {
  const s = await ort.InferenceSession.create(join(versionDir(v), 'model.onnx'), { intraOpNumThreads: 1 });
  try {
    return await fn(s);
  } finally {
    await s.release();
  }
}

describe('the model repository', () => {
  it('layout: <out>/<name>/config.pbtxt and <version>/{model.onnx, embeddings.*.parquet, manifest.json, README.md}, nothing else', () => {
    expect(first).toMatchObject({ repository: repo, model: NAME, version: 1, dir: versionDir(1) });
    expect(readdirSync(join(repo, NAME)).sort()).toEqual(['1', 'config.pbtxt']);
    expect(readdirSync(versionDir(1)).sort()).toEqual(['README.md', 'embeddings.articles.parquet', 'embeddings.customers.parquet', 'manifest.json', 'model.onnx']);
    expect(first.embedding_rows).toEqual({ customers: 500, articles: 200 });
    expect(first.parity).toMatchObject({ examples: 256, non_finite: 0 });
    expect(first.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
  });

  it('manifest.json: lineage (base run, distilled run, embedding anchor, graph fingerprint) and file hashes that match', async () => {
    const m = JSON.parse(readFileSync(join(versionDir(1), 'manifest.json'), 'utf8')) as {
      base_run: string;
      distilled_run: string;
      graph_fingerprint: string;
      version: number;
      model: string;
      embeddings: { table: string; anchor_time: string; run_id: string; rows: number }[];
      files: Record<string, string>;
      inputs: { name: string; datatype: string; shape: number[] }[];
    };
    const baseManifest = readManifest<TrainManifest>(base.runDir);
    expect(m).toMatchObject({ kind: 'export', model: NAME, version: 1, base_run: base.runId, distilled_run: distilled.runId, graph_fingerprint: baseManifest.graph.schema_fingerprint });
    expect(m.embeddings.map((e) => [e.table, e.anchor_time, e.run_id, e.rows])).toEqual([
      ['customers', first.embedding_anchor.customers, base.runId, 500],
      ['articles', first.embedding_anchor.articles, base.runId, 200],
    ]);
    expect(first.embedding_anchor.customers).toMatch(/^2020-09-22T/); // the newest time in the data
    expect(Object.keys(m.files).sort()).toEqual(['embeddings.articles.parquet', 'embeddings.customers.parquet', 'model.onnx']);
    for (const [f, h] of Object.entries(m.files)) expect(await hashFile(join(versionDir(1), f)), f).toBe(h);
    // the baked-in embedding files are the ones `embed` wrote, metadata included
    expect(await parquetKv(join(versionDir(1), 'embeddings.customers.parquet'))).toMatchObject({ run_id: base.runId, table: 'customers', anchor_time: first.embedding_anchor.customers });
  });

  it('README.md names the model, its inputs and a sample request', () => {
    const text = readFileSync(join(versionDir(1), 'README.md'), 'utf8');
    expect(text).toContain(`# ${NAME} (version 1)`);
    for (const name of ['anchor_time', 'transactions.price', `${RTI_PATH}:t_dat`]) expect(text).toContain(`\`${name}\``);
    expect(text).toContain(`curl -s localhost:8000/v2/models/${NAME}/infer`);
  });

  it('versions: next = last + 1, an explicit --version is taken, an existing one is refused and left as it was', async () => {
    const quick = { cfg, run: distilled.runId, out: repo, embeddings: [snapshots], parityExamples: 0, backend: 'wasm' as const };
    expect((await exportModel(quick)).version).toBe(2);
    expect((await exportModel({ ...quick, version: 7 })).version).toBe(7);
    expect((await exportModel(quick)).version).toBe(8);
    const before = await hashFile(join(versionDir(2), 'model.onnx'));
    const err = await exportModel({ ...quick, version: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toMatch(`version 2 of ${NAME} already exists`);
    expect(await hashFile(join(versionDir(2), 'model.onnx'))).toBe(before);
    expect(readdirSync(join(repo, NAME)).sort()).toEqual(['1', '2', '7', '8', 'config.pbtxt']);
  });

  it.each(['0', '-1', '1.5', 'two'])('exportCommand --version %s is a UsageError', async (version) => {
    const err = await exportCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, run: distilled.runId, out: repo, version, backend: 'wasm' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).describe()).toMatch(/--version must be an integer ≥ 1/);
  });
});

describe('config.pbtxt', () => {
  let config: TritonModelConfig;
  beforeAll(() => {
    config = parseModelConfig(readFileSync(join(repo, NAME, 'config.pbtxt'), 'utf8'));
  });

  it('parses: platform onnxruntime_onnx, max_batch_size, dynamic_batching, one KIND_CPU instance group, a probability output', () => {
    expect(config).toMatchObject({ name: NAME, platform: 'onnxruntime_onnx', max_batch_size: 256, dynamic_batching: { max_queue_delay_microseconds: 500 }, instance_group: [{ kind: 'KIND_CPU', count: 1 }] });
    expect(config.output).toEqual([{ name: 'probability', data_type: 'TYPE_FP32', dims: [1] }]);
  });

  it('declares every input with its TYPE_* and dims ([1] for row fields, [-1, 1] for sequences), exactly those of model.onnx', async () => {
    const byName = Object.fromEntries(config.input!.map((i) => [i.name, [i.data_type, i.dims]]));
    expect(byName).toEqual({
      anchor_time: ['TYPE_INT64', [1]],
      'transactions.transaction_id': ['TYPE_INT64', [1]],
      'transactions.t_dat': ['TYPE_INT64', [1]],
      'transactions.price': ['TYPE_FP32', [1]],
      'transactions.customer_id': ['TYPE_STRING', [1]],
      'transactions.article_id': ['TYPE_STRING', [1]],
      [`${RTI_PATH}:t_dat`]: ['TYPE_INT64', [-1, 1]],
      [`${RTI_PATH}:price`]: ['TYPE_FP32', [-1, 1]],
      [`${RTI_PATH}:article_id`]: ['TYPE_STRING', [-1, 1]],
    });
    await withSession(async (s) => {
      expect([...s.inputNames].sort()).toEqual(Object.keys(byName).sort());
      expect([...s.outputNames]).toEqual(['probability']);
    });
  });

  it('serve parameters: pad values of every sequence input, the omittable fact columns, the sequence caps', () => {
    expect(config.parameters).toEqual({
      [`pad_value:${RTI_PATH}:t_dat`]: { string_value: INT64_MIN.toString() },
      [`pad_value:${RTI_PATH}:price`]: { string_value: '0' },
      [`pad_value:${RTI_PATH}:article_id`]: { string_value: '' },
      // the student standardises price and learned a null indicator: an omitted price is NaN
      'missing_value:transactions.price': { string_value: 'nan' },
      // real_time_interactions caps the path at 32 elements in the bundled block
      [`max_sequence_length:${RTI_PATH}:t_dat`]: { string_value: '16' },
      [`max_sequence_length:${RTI_PATH}:price`]: { string_value: '16' },
      [`max_sequence_length:${RTI_PATH}:article_id`]: { string_value: '16' },
    });
  });
});

describe('parity: the TF.js student and onnxruntime on model.onnx', () => {
  it.each([256, 1])('1,000 rows at batch %i agree within 1e-4 (and every row at batch 1 equals its batch-256 value)', async (batch) => {
    const f = graph.table('transactions');
    const nodes = Int32Array.from({ length: 1000 }, (_, i) => f.rows - 1000 + i);
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation!.real_time_offset, nodes, await entityTables(versionDir(1)));
    expect(requests.seq).toBe(16);
    const student = loadStudent();
    try {
      const report = await checkParity(join(versionDir(1), 'model.onnx'), spec, student, graph, requests, data, 'probability', { batch, singles: batch === 256 ? 1000 : 0 });
      expect(report).toMatchObject({ examples: 1000, non_finite: 0 });
      expect(report.max_abs_diff).toBeLessThanOrEqual(1e-4);
      expect(report.max_batch_diff).toBeLessThanOrEqual(1e-6);
    } finally {
      student.dispose();
    }
  });
});

describe('unknown keys', () => {
  /**
   * ORT probabilities for the newest 300 rows with some inputs replaced, the TF.js student's with the
   * embeddings of `missingKeys` set missing, and which rows both should agree on: all of them, except
   * (when the fact's article is replaced) rows whose RTI holds the same article, where the student's
   * same-article flag, read from the graph, still says 1.
   */
  async function compare(replace: Record<string, string[]>, missingKeys: number[]) {
    const f = graph.table('transactions');
    const nodes = Int32Array.from({ length: 300 }, (_, i) => f.rows - 300 + i);
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation!.real_time_offset, nodes, await entityTables(versionDir(1)));
    for (const [name, values] of Object.entries(replace)) {
      const width = name.includes('->') ? requests.seq : 1;
      requests.values.set(name, Array.from({ length: requests.n * width }, (_, i) => values[i % values.length]!));
    }
    const got = await withSession(async (s) => (await s.run(feeds(spec, requests, 0, requests.n))).probability!.data as Float32Array);
    for (const k of missingKeys) data.embeddings[k]!.missing.fill(1);
    const article = graph.edges.find((e) => e.name === 'transactions.article_id->articles')!.parent!;
    const N = requests.seq;
    const comparable = Array.from(nodes, (v, i) => !('transactions.article_id' in replace) || !Array.from(data.rti[0]!.subarray(i * N, (i + 1) * N)).some((el) => el >= 0 && article[el] === article[v]));
    const student = loadStudent();
    try {
      const t = tf.tidy(() => tf.sigmoid(student.forward(new StudentFeatures(graph, spec).batch(data, Array.from({ length: requests.n }, (_, i) => i)), false)));
      const expected = (t.dataSync() as Float32Array).slice();
      t.dispose();
      return { got, expected, comparable };
    } finally {
      student.dispose();
    }
  }

  it.each([
    { input: 'transactions.customer_id', values: ['no-such-customer', 'x'], key: 0 },
    { input: 'transactions.customer_id', values: [''], key: 0 },
    { input: 'transactions.article_id', values: ['0999999999', 'zz'], key: 1 },
    { input: 'transactions.article_id', values: [''], key: 1 },
  ])('$input = $values: finite, and equal to the student reading the fallback embedding', async ({ input, values, key }) => {
    const { got, expected, comparable } = await compare({ [input]: values }, [key]);
    expect(Array.from(got).every((p) => Number.isFinite(p) && p >= 0 && p <= 1)).toBe(true);
    expect(comparable.filter(Boolean).length).toBeGreaterThan(50);
    if (input === 'transactions.customer_id') expect(comparable.every(Boolean)).toBe(true);
    let worst = 0;
    got.forEach((p, i) => comparable[i] && (worst = Math.max(worst, Math.abs(p - expected[i]!))));
    expect(worst).toBeLessThanOrEqual(1e-4);
  });

  it('unknown and empty article ids in the RTI sequence: finite probabilities', async () => {
    for (const values of [['0999999999'], ['']]) {
      const { got } = await compare({ [`${RTI_PATH}:article_id`]: values }, []);
      expect(Array.from(got).every((p) => Number.isFinite(p) && p >= 0 && p <= 1)).toBe(true);
    }
  });
});

describe('version skew', () => {
  /** A copy of the version-1 customers snapshot with some metadata replaced (and optionally a narrower embedding). */
  async function skewed(name: string, kv: Record<string, string>, dim?: number): Promise<string> {
    const dir = join(fx.artifacts, 'skew', name);
    mkdirSync(dir, { recursive: true });
    const src = join(versionDir(1), 'embeddings.customers.parquet');
    const meta = { ...(await parquetKv(src)), ...kv };
    const target = join(dir, 'embeddings.parquet');
    const emb = dim ? `embedding[1:${dim}] AS embedding` : 'embedding';
    const kvSql = Object.entries(meta).map(([k, v]) => `'${k}': '${v.replaceAll("'", "''")}'`).join(', ');
    await sqlRows(`COPY (SELECT customer_id, ${emb}, anchor_time FROM read_parquet(${sqlPath(src)})) TO ${sqlPath(target)} (FORMAT parquet, KV_METADATA {${kvSql}})`);
    return target;
  }

  /** Runs an export that must be refused; returns the error after checking nothing was written. */
  async function refused(customers: string): Promise<ArtifactError> {
    const before = readdirSync(join(repo, NAME)).sort();
    const articles = join(versionDir(1), 'embeddings.articles.parquet');
    const err = await exportModel({ cfg, run: distilled.runId, out: repo, embeddings: [customers, articles], parityExamples: 0, backend: 'wasm' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect(readdirSync(join(repo, NAME)).sort()).toEqual(before);
    return err as ArtifactError;
  }

  it('embeddings of another run (a second fraud run on the same data): refused, naming both runs', async () => {
    const other = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
    const r = await embed({ cfg, run: other.runId, table: 'customers', backend: 'wasm', out: join(fx.artifacts, 'skew', 'other-run', 'embeddings.parquet') });
    const err = await refused(r.path);
    expect(err.message).toMatch(`embeddings of customers come from run ${other.runId}, the distilled run was trained on embeddings of ${base.runId}`);
  });

  it('embeddings of a graph with another schema fingerprint: refused, naming both fingerprints', async () => {
    // a real run on a drifted schema (customers.age ignored) and its embeddings
    const path = join(fx.dir, 'config-no-age.yaml');
    writeFileSync(path, readFileSync(fx.config, 'utf8').replace('customers: { path: customers.csv, primary_key: customer_id }', 'customers: { path: customers.csv, primary_key: customer_id, columns: { age: ignore } }'));
    const noAge = loadConfig(path, { cwd: fx.dir, artifacts: fx.artifacts });
    const other = await train({ cfg: noAge, task: 'fraud', backend: 'wasm', skip_baseline: true });
    const r = await embed({ cfg: noAge, run: other.runId, table: 'customers', backend: 'wasm', out: join(fx.artifacts, 'skew', 'other-schema', 'embeddings.parquet') });
    const theirs = (await parquetKv(r.path)).graph_fingerprint!;
    const ours = readManifest<TrainManifest>(base.runDir).graph.schema_fingerprint;
    expect(theirs).not.toBe(ours);
    const err = await refused(r.path);
    expect(err.message).toMatch(`have graph fingerprint ${theirs}, the distilled run ${distilled.runId} has ${ours}`);
  });

  it.each<{ what: string; kv: Record<string, string>; dim: number | undefined; message: RegExp }>([
    { what: 'another graph fingerprint (metadata only)', kv: { graph_fingerprint: 'deadbeefdeadbeef' }, dim: undefined, message: /graph fingerprint deadbeefdeadbeef, the distilled run .* has [0-9a-f]{16}/ },
    { what: 'another dimension', kv: { dim: '4' }, dim: 4, message: /embeddings of customers have dimension 4, the distilled run expects 8/ },
    { what: 'another run id (metadata only)', kv: { run_id: 'fraud-19990101-000000-0000' }, dim: undefined, message: /come from run fraud-19990101-000000-0000, the distilled run was trained on embeddings of fraud-/ },
  ])('$what: refused with an ArtifactError naming both values', async ({ what, kv, dim, message }) => {
    const err = await refused(await skewed(what.replace(/\W+/g, '-'), kv, dim));
    expect(err.message).toMatch(message);
  });
});

describe('the Kumo-shaped request (online-request-example.json)', () => {
  type Input = { name: string; datatype: string; shape: number[]; data: (number | string)[] };
  let config: TritonModelConfig;
  let customers: string[];
  let articles: string[];
  let lastNs: bigint;
  beforeAll(async () => {
    config = parseModelConfig(readFileSync(join(repo, NAME, 'config.pbtxt'), 'utf8'));
    customers = (await sqlRows(`SELECT customer_id AS k FROM read_parquet(${sqlPath(join(versionDir(1), 'embeddings.customers.parquet'))}) LIMIT 3`)).map((r) => r.k as string);
    articles = (await sqlRows(`SELECT article_id AS k FROM read_parquet(${sqlPath(join(versionDir(1), 'embeddings.articles.parquet'))}) LIMIT 40`)).map((r) => r.k as string);
    lastNs = BigInt(graph.manifest.time_range![1]) * 1_000_000_000n;
  });

  /**
   * The example with ids and values adapted to the data: string customer/article keys from the export,
   * times in the data's range, prices scaled to the data's (H&M prices are fractions: 29.99 → 0.02999),
   * `n` RTI elements (the example's three, or generated ones).
   */
  function adapted(n: number): Input[] {
    const example = JSON.parse(readFileSync(REQUEST_EXAMPLE, 'utf8')) as { inputs: Input[] };
    const day = 86_400_000_000_000n;
    return example.inputs.map((inp) => {
      const rti = inp.name.startsWith(`${RTI_PATH}:`);
      const column = rti ? inp.name.slice(RTI_PATH.length + 1) : inp.name;
      let data: (number | string | bigint)[] = inp.data;
      if (rti) {
        const ex = inp.data;
        data = Array.from({ length: n }, (_, i) => {
          if (column === 't_dat') return lastNs - BigInt(i + 1) * day;
          if (column === 'article_id') return articles[i % articles.length]!;
          return ((ex[i % ex.length] as number) + i) / 1000;
        });
      } else if (column === 'transactions.price') data = [(inp.data[0] as number) / 1000];
      else if (column === 'anchor_time' || column === 'transactions.t_dat') data = [lastNs];
      else if (column === 'transactions.customer_id') data = [customers[0]!];
      else if (column === 'transactions.article_id') data = [articles[0]!];
      return { ...inp, shape: rti ? [1, n, 1] : inp.shape, data: data as (number | string)[] };
    });
  }

  /** ORT tensors with the datatypes config.pbtxt declares. */
  function tensors(inputs: Input[]): Record<string, ort.Tensor> {
    const declared = new Map(config.input!.map((i) => [i.name, i.data_type]));
    return Object.fromEntries(
      inputs.map((inp) => {
        const t = declared.get(inp.name);
        if (t === 'TYPE_STRING') return [inp.name, new ort.Tensor('string', inp.data.map(String), inp.shape)];
        if (t === 'TYPE_INT64') return [inp.name, new ort.Tensor('int64', BigInt64Array.from(inp.data, (x) => BigInt(x)), inp.shape)];
        if (t === 'TYPE_FP32') return [inp.name, new ort.Tensor('float32', Float32Array.from(inp.data as number[]), inp.shape)];
        throw new Error(`${inp.name} is not declared by config.pbtxt (${t})`);
      }),
    );
  }

  const probability = (inputs: Input[]) => withSession(async (s) => (await s.run(tensors(inputs))).probability!.data[0] as number);

  it('names exactly the inputs config.pbtxt declares; transaction_id stays INT64', () => {
    const names = adapted(3).map((i) => i.name).sort();
    expect(names).toEqual(config.input!.map((i) => i.name).sort());
    expect(config.input!.find((i) => i.name === 'transactions.transaction_id')!.data_type).toBe('TYPE_INT64');
  });

  it.each([0, 3, 32])('with %i RTI elements: a finite probability', async (n) => {
    const p = await probability(adapted(n));
    expect(Number.isFinite(p) && p >= 0 && p <= 1, String(p)).toBe(true);
  });

  it('every RTI input of the request is read by the graph (none is declared and then ignored)', () => {
    // Whether a history changes a prediction depends on what the (tiny, briefly trained) student learned;
    // that the graph consumes each history field does not.
    const model = onnx.ModelProto.decode(readFileSync(join(versionDir(1), 'model.onnx')));
    const consumed = new Set(model.graph!.node!.flatMap((n) => n.input ?? []));
    const rti = adapted(3).map((i) => i.name).filter((n) => n.startsWith(`${RTI_PATH}:`));
    expect(rti.length).toBe(3);
    for (const name of rti) expect(consumed.has(name), name).toBe(true);
  });

  it.each([4, 5, 32])('padded to %i slots (INT64 min times, garbage values): the same probability as the 3 elements alone', async (len) => {
    const three = adapted(3);
    const padded = three.map((inp) => {
      if (!inp.name.startsWith(`${RTI_PATH}:`)) return inp;
      const column = inp.name.slice(RTI_PATH.length + 1);
      const pad = Array.from({ length: len - 3 }, (_, i) => (column === 't_dat' ? INT64_MIN : column === 'price' ? 1e6 * (i + 1) : `garbage-${i}`));
      return { ...inp, shape: [1, len, 1], data: [...inp.data, ...pad] as (number | string)[] };
    });
    expect(Math.abs((await probability(padded)) - (await probability(three)))).toBeLessThanOrEqual(1e-6);
  });

  it('sequence length 0 equals a sequence of padding only', async () => {
    const none = adapted(0);
    const allPadding = none.map((inp) => {
      if (!inp.name.startsWith(`${RTI_PATH}:`)) return inp;
      const column = inp.name.slice(RTI_PATH.length + 1);
      return { ...inp, shape: [1, 4, 1], data: Array.from({ length: 4 }, (_, i) => (column === 't_dat' ? INT64_MIN : column === 'price' ? -3e5 * i : articles[i]!)) as (number | string)[] };
    });
    expect(Math.abs((await probability(allPadding)) - (await probability(none)))).toBeLessThanOrEqual(1e-6);
  });

  it('a batch of the three requests (padded to 32) gives each one\'s batch-1 probability', async () => {
    const requests = [adapted(0), adapted(3), adapted(32)];
    const singles: number[] = [];
    for (const r of requests) singles.push(await probability(r));
    const batched = requests[0]!.map((inp, j) => {
      const rti = inp.name.startsWith(`${RTI_PATH}:`);
      const column = inp.name.slice(RTI_PATH.length + 1);
      const data = requests.flatMap((r) => {
        const d = r[j]!.data;
        if (!rti) return d;
        const pad = config.parameters![`pad_value:${inp.name}`]!.string_value;
        return [...d, ...Array.from({ length: 32 - d.length }, () => (column === 't_dat' ? BigInt(pad) : column === 'price' ? Number(pad) : pad))];
      });
      return { ...inp, shape: rti ? [3, 32, 1] : [3, 1], data: data as (number | string)[] };
    });
    const got = await withSession(async (s) => Array.from((await s.run(tensors(batched))).probability!.data as Float32Array));
    got.forEach((p, i) => expect(Math.abs(p - singles[i]!)).toBeLessThanOrEqual(1e-6));
  });
});
