/**
 * The padding convention end to end with the export stage's own student graph (`buildStudentOnnx`, random
 * weights) and its request inputs and pad values (`requestInputs`): text and integer keys, a text
 * categorical, numeric, log-ratio and same-entity RTI features. Concurrent requests with sequences of
 * 0..6 elements, batched and padded by the server, must each get onnxruntime's batch-1 answer.
 */
import * as ort from 'onnxruntime-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { StudentModel } from '../../src/model/student/student.js';
import { writeModelConfig, type TritonModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { buildStudentOnnx, requestInputs } from '../../src/export/student_onnx.js';
import { Rng } from '../../src/core/rng.js';
import { handStudentSpec } from '../helpers/student.js';
import { infer, postBinary, startTestServer, tempRepo, type TempRepo, type TestServer } from './helpers.js';

const NAME = 'online-model';
const spec = handStudentSpec(6);
const inputs = requestInputs(spec);
/** Fact-row numeric inputs: the student standardises them, NaN → the training mean plus a null indicator. */
const missingNumeric = inputs.filter((i) => !i.sequence && i.elemType === 'FLOAT' && /NaN = missing/.test(i.doc ?? ''));
const DAY = 86_400_000_000_000n;
const ANCHOR = 1_710_000_000_000_000_000n;
let repo: TempRepo;
let server: TestServer;
let modelPath: string;

beforeAll(async () => {
  await selectBackend('wasm');
  const student = new StudentModel(spec, 3, 0);
  const rng = new Rng(5);
  const customers = Array.from({ length: 20 }, (_, i) => `c${i}`);
  const articles = Array.from({ length: 30 }, (_, i) => `a${i}`);
  const g = buildStudentOnnx({
    spec,
    weights: student.params.snapshot(),
    entities: [{ keys: customers, vectors: Float32Array.from({ length: customers.length * 4 }, () => rng.normal()), dim: 4 }],
    key_vocabularies: { articles },
    kind: 'binary',
  });
  student.dispose();
  repo = tempRepo(null);
  const config: TritonModelConfig = {
    name: NAME,
    platform: 'onnxruntime_onnx',
    max_batch_size: 32,
    input: inputs.map((i) => ({ name: i.name, data_type: i.elemType === 'FLOAT' ? 'TYPE_FP32' : i.elemType === 'INT64' ? 'TYPE_INT64' : 'TYPE_STRING', dims: i.sequence ? [-1, 1] : [1] })),
    output: [{ name: 'probability', data_type: 'TYPE_FP32', dims: [1] }],
    dynamic_batching: { max_queue_delay_microseconds: 3000 },
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    parameters: {
      ...Object.fromEntries(inputs.filter((i) => i.sequence && i.padValue !== undefined).map((i) => [`pad_value:${i.name}`, { string_value: i.padValue! }])),
      // The export contract's missing fact numeric (NaN), declared so requests may leave it out.
      ...Object.fromEntries(missingNumeric.map((i) => [`missing_value:${i.name}`, { string_value: 'nan' }])),
    },
  };
  mkdirSync(join(repo.root, NAME, '1'), { recursive: true });
  writeFileSync(join(repo.root, NAME, 'config.pbtxt'), writeModelConfig(config));
  modelPath = g.toFiles(join(repo.root, NAME, '1')).modelPath;
  server = await startTestServer(repo.root);
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

/** Request `i` with `len` RTI elements: values of each input's type, varied per request. */
function request(i: number, len: number): { name: string; datatype: string; shape: number[]; data: (string | number)[] }[] {
  const rng = new Rng(100 + i);
  return inputs.map((inp) => {
    const n = inp.sequence ? len : 1;
    const col = inp.name.split(/[.:]/).pop()!;
    const data = Array.from({ length: n }, (_, k): string | number => {
      if (inp.name === 'anchor_time') return String(ANCHOR);
      if (inp.elemType === 'INT64') return String(col === 't_dat' ? ANCHOR - BigInt(inp.sequence ? len - k : 0) * DAY - BigInt(rng.int(1000)) : BigInt(rng.int(1000)));
      if (inp.elemType === 'FLOAT') return Math.round(rng.normal() * 1000) / 1000;
      if (col === 'customer_id') return `c${rng.int(25)}`; // some unknown
      if (col === 'article_id') return `a${rng.int(35)}`;
      return ['web', 'store', '', 'phone'][rng.int(4)]!;
    });
    return { name: inp.name, datatype: inp.elemType === 'FLOAT' ? 'FP32' : inp.elemType === 'INT64' ? 'INT64' : 'BYTES', shape: inp.sequence ? [1, n, 1] : [1, 1], data };
  });
}

function toFeeds(req: ReturnType<typeof request>): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const t of req) {
    if (t.datatype === 'FP32') feeds[t.name] = new ort.Tensor('float32', Float32Array.from(t.data as number[]), t.shape);
    else if (t.datatype === 'INT64') feeds[t.name] = new ort.Tensor('int64', BigInt64Array.from(t.data as string[], (v) => BigInt(v)), t.shape);
    else feeds[t.name] = new ort.Tensor('string', t.data as string[], t.shape);
  }
  return feeds;
}

describe('serving the export stage’s student graph', () => {
  it('batched requests with RTI lengths 0..6 get their batch-1 answers', async () => {
    const requests = Array.from({ length: 48 }, (_, i) => request(i, i % 7));
    const session = await ort.InferenceSession.create(modelPath);
    const expected: number[] = [];
    try {
      for (const r of requests) expected.push((await session.run(toFeeds(r))).probability!.data[0] as number);
    } finally {
      await session.release();
    }
    const responses = await Promise.all(requests.map((r) => infer(server.url, JSON.stringify({ inputs: r }))));
    responses.forEach((res, i) => {
      expect(res.status, res.body.error).toBe(200);
      const got = res.body.outputs![0]!.data[0] as number;
      if (Math.abs(got - expected[i]!) > 1e-5) expect.fail(`request ${i} (RTI length ${i % 7}): got ${got}, batch-1 answer ${expected[i]}`);
    });
    const batches = server.metrics.batchSize.stats({ model: NAME, version: '1' });
    expect(batches.count).toBeLessThan(48);
  });
});

/** The request as tritonclient sends it by default: every input as binary data, the output as binary. */
function binaryRequest(req: ReturnType<typeof request>): { body: Buffer; headerLength: number } {
  const parts: Buffer[] = [];
  const tensors = req.map((t) => {
    const bytes = Buffer.concat(
      t.data.map((v) => {
        if (t.datatype === 'FP32') {
          const b = Buffer.alloc(4);
          b.writeFloatLE(v as number);
          return b;
        }
        if (t.datatype === 'INT64') {
          const b = Buffer.alloc(8);
          b.writeBigInt64LE(BigInt(v));
          return b;
        }
        const s = Buffer.from(String(v), 'utf8');
        const len = Buffer.alloc(4);
        len.writeUInt32LE(s.length);
        return Buffer.concat([len, s]);
      }),
    );
    parts.push(bytes);
    return { name: t.name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: bytes.length } };
  });
  const header = Buffer.from(JSON.stringify({ inputs: tensors, outputs: [{ name: 'probability', parameters: { binary_data: true } }] }));
  return { body: Buffer.concat([header, ...parts]), headerLength: header.length };
}

describe('the export’s student graph over the binary tensor extension, and its missing numerics', () => {
  it('binary requests (text and integer keys, empty strings, RTI lengths 0..6) give the JSON answers, bit for bit', async () => {
    const requests = Array.from({ length: 21 }, (_, i) => request(200 + i, i % 7));
    const json = await Promise.all(requests.map((r) => infer(server.url, JSON.stringify({ inputs: r }))));
    const binary = await Promise.all(requests.map((r) => binaryRequest(r)).map(({ body, headerLength }) => postBinary(server.url, `/v2/models/${NAME}/infer`, body, headerLength)));
    binary.forEach((res, i) => {
      expect(res.status, res.json.error).toBe(200);
      expect(res.binary.readFloatLE(0)).toBe(Math.fround(json[i]!.body.outputs![0]!.data[0] as number));
    });
  });

  it('a fact numeric left out, sent as null, or sent as NaN in binary is the model’s own missing value', async () => {
    expect(missingNumeric.length).toBeGreaterThan(0);
    const r = request(300, 3);
    const withNaN = r.map((t) => (missingNumeric.some((m) => m.name === t.name) ? { ...t, data: [NaN] } : t));
    const session = await ort.InferenceSession.create(modelPath);
    let expected: number;
    try {
      expected = (await session.run(toFeeds(withNaN))).probability!.data[0] as number;
    } finally {
      await session.release();
    }
    expect(Number.isFinite(expected)).toBe(true);
    const omitted = await infer(server.url, JSON.stringify({ inputs: r.filter((t) => !missingNumeric.some((m) => m.name === t.name)) }));
    const nulls = await infer(server.url, JSON.stringify({ inputs: r.map((t) => (missingNumeric.some((m) => m.name === t.name) ? { ...t, data: [null] } : t)) }));
    const { body, headerLength } = binaryRequest(withNaN);
    const binary = await postBinary(server.url, `/v2/models/${NAME}/infer`, body, headerLength);
    for (const res of [omitted, nulls]) {
      expect(res.status, res.body.error).toBe(200);
      expect(res.body.outputs![0]!.data[0] as number).toBeCloseTo(expected, 5);
    }
    expect(binary.status).toBe(200);
    expect(binary.binary.readFloatLE(0)).toBeCloseTo(expected, 5);
  });
});
