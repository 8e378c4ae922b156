/**
 * The student's ONNX graph against the TF.js student, on the hand-written retail fixture with every kind
 * of input the spec knows: numeric (with a null), integer and text categoricals (with unknown and empty
 * values), both embedding keys (one customer without an embedding), an RTI path with numeric, categorical,
 * log-ratio and same-article features. No training: random weights (fallbacks included) are enough for
 * parity, and make every feature matter.
 */
import { tf } from '../../src/core/tf.js';
import * as ort from 'onnxruntime-node';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { studentSpec } from '../../src/distill/student_spec.js';
import { StudentFeatures, type StudentData } from '../../src/model/student/features.js';
import { elementNumericDim, type StudentSpec } from '../../src/model/student/spec.js';
import { StudentModel } from '../../src/model/student/student.js';
import { checkParity, feeds, rawRequests, type RawRequests } from '../../src/export/parity.js';
import { buildStudentOnnx, requestInputs, type EntityTable } from '../../src/export/student_onnx.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import type { DeepModel } from '../../src/model/deep_model.js';
import { setQuiet } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { CONFIG, TRANSACTIONS, configWithTasks, retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';
import { RTI_PATH } from '../helpers/pipeline.js';

// A text channel beside the integer one; row 6 has no price, row 2 no channel name.
const CHANNELS = ['web', '', 'store', 'web', 'store', 'web', 'store', 'web'];
const TX = TRANSACTIONS.trimEnd()
  .split('\n')
  .map((l, i) => `${l},${i === 0 ? 'channel_name' : CHANNELS[i - 1]}`)
  .join('\n');

const DISTILLATION = `distillation:
  task: fraud
  base: fraud
  embedding_keys: [transactions.customer_id, transactions.article_id]
  real_time_interactions: { "${RTI_PATH}": 4 }
`;
const DIM = 4;

let fx: Fixture;
let cfg: Config;
let graph: Graph;
let spec: StudentSpec;
let student: StudentModel;
let entities: EntityTable[];
let modelPath: string;
let scratch: string;
let session: ort.InferenceSession;
const nodes = Int32Array.from({ length: 8 }, (_, i) => i);

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  const config = configWithTasks({ fraud: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id' }, '{ val_anchor: "2020-01-13", test_anchor: "2020-01-20" }', CONFIG.replace('time_column: t_dat\n', 'time_column: t_dat\n      columns: { channel_name: categorical }\n'));
  fx = retailFixture({ transactions: `${TX}\n`, config: `${config}${DISTILLATION}` });
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  graph = Graph.load((await buildGraph(cfg)).dir);
  spec = studentSpec(cfg.distillation!, cfg.taskSpecs.fraud!, cfg.hopPaths, graph, { spec: { channels: DIM } } as DeepModel);
  student = new StudentModel(spec, 5, 0);
  const rng = new Rng(9);
  // non-zero fallbacks, so an unknown key reads something other than zeros
  spec.embeddings.forEach((_, i) => student.params.get(`emb${i}/fallback`).assign(tf.tensor1d(Array.from({ length: DIM }, () => rng.normal()))));
  // customers c1..c3 have embeddings, c4 does not (it falls back); every article has one
  const keysOf = async (t: string) => nodeKeys(graph.dir, graph.manifest, t);
  const customers = (await keysOf('customers')).filter((k) => k !== 'c4');
  const articles = await keysOf('articles');
  entities = [customers, articles].map((keys) => ({ keys, vectors: Float32Array.from({ length: keys.length * DIM }, () => rng.normal()), dim: DIM }));
  const g = buildStudentOnnx({ spec, weights: student.params.snapshot(), entities, key_vocabularies: { articles }, kind: 'binary' });
  scratch = mkdtempSync(join(tmpdir(), 'gnnctl-student-onnx-'));
  modelPath = g.toFiles(scratch).modelPath;
  session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
});
afterAll(async () => {
  await session?.release();
  student?.dispose();
  fx?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  setQuiet(false);
});

function tfProbabilities(data: StudentData, patch?: (b: ReturnType<StudentFeatures['batch']>) => void): Float32Array {
  const batch = new StudentFeatures(graph, spec).batch(data, Array.from(data.nodes, (_, i) => i));
  patch?.(batch);
  const t = tf.tidy(() => tf.sigmoid(student.forward(batch, false)));
  const v = (t.dataSync() as Float32Array).slice();
  t.dispose();
  return v;
}

async function ortProbabilities(req: RawRequests): Promise<Float32Array> {
  return (await session.run(feeds(spec, req, 0, req.n))).probability!.data as Float32Array;
}

function worst(a: Float32Array, b: Float32Array): number {
  return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);
}

describe('the spec built from the fixture', () => {
  it('has every kind of input: numeric, integer and text categoricals, two keys, RTI with ratio and same-article features', () => {
    expect(spec.numeric.map((c) => c.column)).toEqual(['price']);
    expect(spec.categorical.map((c) => [c.column, c.type])).toEqual([
      ['sales_channel_id', 'BIGINT'],
      ['channel_name', 'VARCHAR'],
    ]);
    expect(spec.embeddings.map((k) => k.column)).toEqual(['customer_id', 'article_id']);
    expect(spec.rti[0]).toMatchObject({ ratios: ['price'], same_keys: [{ column: 'article_id', target: 'articles' }] });
    expect(requestInputs(spec).map((i) => `${i.name}:${i.elemType}`)).toContain('transactions.sales_channel_id:INT64');
  });
});

describe('parity with the TF.js student', () => {
  it('every fixture row (a null price, an empty channel name, RTI histories) within 1e-5, batch 1 = batch 8', async () => {
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, 0, nodes, entities);
    const report = await checkParity(modelPath, spec, student, graph, requests, data, 'probability', { batch: 8, singles: 8 });
    expect(report).toMatchObject({ examples: 8, non_finite: 0 });
    expect(report.max_abs_diff).toBeLessThanOrEqual(1e-5);
    expect(report.max_batch_diff).toBeLessThanOrEqual(1e-6);
    expect(Array.from(data.rti[0]!).some((el) => el >= 0)).toBe(true);
  });
});

describe('values the model never saw', () => {
  /** Which offset code each categorical input gets for a replaced value. */
  const cases: { name: string; input: string; values: (string | bigint)[]; code: 'unknown' | 'null' }[] = [
    { name: 'unknown channel name', input: 'transactions.channel_name', values: ['teleport'], code: 'unknown' },
    { name: 'empty channel name', input: 'transactions.channel_name', values: [''], code: 'null' },
    { name: 'unknown integer channel', input: 'transactions.sales_channel_id', values: [99n], code: 'unknown' },
  ];
  it.each(cases)('$name: finite, and the TF.js student reading the $code code', async ({ input, values, code }) => {
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, 0, nodes, entities);
    const v = requests.values.get(input)!;
    requests.values.set(input, (typeof values[0] === 'bigint' ? BigInt64Array.from(v as BigInt64Array, (_, i) => values[i % values.length] as bigint) : Array.from({ length: requests.n }, (_, i) => values[i % values.length] as string)) as never);
    const got = await ortProbabilities(requests);
    expect(Array.from(got).every(Number.isFinite)).toBe(true);
    const column = input.slice('transactions.'.length);
    const c = spec.categorical.findIndex((x) => x.column === column);
    const expected = tfProbabilities(data, (b) => {
      for (let i = 0; i < b.n; i++) b.factCat[i * spec.categorical.length + c] = spec.categorical[c]!.offset + (code === 'unknown' ? 1 : 0);
    });
    expect(worst(got, expected)).toBeLessThanOrEqual(1e-5);
  });

  it.each([
    { name: 'unknown customer', input: 'transactions.customer_id', values: ['c404'], key: 0 },
    { name: 'empty customer', input: 'transactions.customer_id', values: [''], key: 0 },
    { name: 'customer without an embedding (c4)', input: 'transactions.customer_id', values: ['c4'], key: 0 },
  ])('$name: finite, and the TF.js student reading the fallback', async ({ input, values, key }) => {
    const { requests, data } = await rawRequests(graph, spec, cfg.hopPaths, 0, nodes, entities);
    requests.values.set(input, Array.from({ length: requests.n }, () => values[0]!));
    const got = await ortProbabilities(requests);
    expect(Array.from(got).every(Number.isFinite)).toBe(true);
    data.embeddings[key]!.missing.fill(1);
    expect(worst(got, tfProbabilities(data))).toBeLessThanOrEqual(1e-5);
  });
});

// An INT64 request has no null: a missing integer category is sent as INT64 min, which the ONNX lookup
// maps to the null code the TF.js student uses for a null value.
describe('a null integer categorical', () => {
  it('a row with no sales_channel_id (INT64 min): ONNX agrees with the TF.js student', async () => {
    const tx = TX.replace('\n3,2020-01-01 09:00:00,c2,0108775015,0.05,2,1', '\n3,2020-01-01 09:00:00,c2,0108775015,0.05,,1');
    const f = retailFixture({ transactions: `${tx}\n`, config: readFileSync(fx.config, 'utf8') });
    try {
      const { report } = await fixtureParity(f, 'null-int-', 0);
      expect(report.max_abs_diff).toBeLessThanOrEqual(1e-5);
    } finally {
      f.cleanup();
    }
  });
});

// distillation.rti_minute_recency: one more element feature, log(1 + minutes since the element) / 10,
// computed by ONNX from the raw INT64 times as the TF.js features compute it.
describe('minute-scale recency of RTI elements', () => {
  it('adds one element feature, and ONNX agrees with the TF.js student within 1e-5', async () => {
    const f = retailFixture({ transactions: `${TX}\n`, config: readFileSync(fx.config, 'utf8').replace('distillation:\n', 'distillation:\n  rti_minute_recency: true\n') });
    try {
      const { g, s, data, report } = await fixtureParity(f, 'minutes-', 8);
      expect(s.rti[0]!.minute_recency).toBe(true);
      expect(elementNumericDim(s.rti[0]!)).toBe(elementNumericDim(spec.rti[0]!) + 1);
      expect(report).toMatchObject({ examples: 8, non_finite: 0 });
      expect(report.max_abs_diff).toBeLessThanOrEqual(1e-5);
      // The feature itself: an element 90 minutes before the request reads log(91) / 10.
      const batch = new StudentFeatures(g, s).batch(data, Array.from(data.nodes, (_, i) => i));
      const ed = elementNumericDim(s.rti[0]!);
      const col = 2 * s.rti[0]!.numeric.length + 2;
      const N = s.rti[0]!.max_length;
      const time = g.table('transactions').time!;
      for (let i = 0; i < 8; i++) {
        for (let j = 0; j < N; j++) {
          const el = data.rti[0]![i * N + j]!;
          if (el < 0) continue;
          const minutes = Math.max(0, (data.anchors[i]! - time[el]!) / 60);
          expect(batch.rtiNum[0]![(i * N + j) * ed + col]).toBeCloseTo(Math.log1p(minutes) / 10, 5);
        }
      }
    } finally {
      f.cleanup();
    }
  });
});

/**
 * A fixture's own student (its config and data, fresh weights), exported to ONNX and checked against
 * TF.js on the first 8 requests in one batch (and `singles` of them one by one).
 */
async function fixtureParity(f: Fixture, prefix: string, singles: number) {
  const c = loadConfig(f.config, { cwd: f.dir, artifacts: f.artifacts });
  const g = Graph.load((await buildGraph(c)).dir);
  const s = studentSpec(c.distillation!, c.taskSpecs.fraud!, c.hopPaths, g, { spec: { channels: DIM } } as DeepModel);
  const m = new StudentModel(s, 5, 0);
  try {
    const path = buildStudentOnnx({ spec: s, weights: m.params.snapshot(), entities, key_vocabularies: { articles: entities[1]!.keys }, kind: 'binary' }).toFiles(mkdtempSync(join(scratch, prefix))).modelPath;
    const { requests, data } = await rawRequests(g, s, c.hopPaths, 0, nodes, entities);
    const report = await checkParity(path, s, m, g, requests, data, 'probability', { batch: 8, singles });
    return { g, s, data, report };
  } finally {
    m.dispose();
  }
}
