/**
 * Shared helpers of the serve tests: synthetic model repositories in temp folders, an in-process
 * server on an ephemeral port, request bodies shaped like Kumo's online request, and the batch-1
 * answer computed directly with onnxruntime (no server, no batching) to compare against.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { INT64_MIN } from '../../src/artifacts/onnx/index.js';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { startServer, type RunningServer, type ServeOptions } from '../../src/serve/server.js';
import { KEY_INPUT, RTI_PATH, syntheticKey, writeSyntheticRepository, type SyntheticRepositoryOptions } from '../../src/loadgen/synthetic_model.js';

export { INT64_MIN, KEY_INPUT, RTI_PATH };
export const MODEL = 'online-model';
export const ANCHOR = 1_710_000_000_000_000_123n;
const HOUR = 3_600_000_000_000n;

export interface TempRepo {
  root: string;
  cleanup: () => void;
}

export function tempRepo(options: SyntheticRepositoryOptions | null = {}): TempRepo {
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-serve-test-'));
  if (options) writeSyntheticRepository(root, options);
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export interface TestServer extends RunningServer {
  logs: string[];
}

export async function startTestServer(root: string, options: Partial<ServeOptions> = {}): Promise<TestServer> {
  const logs: string[] = [];
  const server = await startServer({ modelRepository: root, port: 0, pollIntervalMs: 0, log: (line) => logs.push(line), ...options });
  return Object.assign(server, { logs });
}

/** One transaction in the shape of online-request-example.json, with an RTI sequence of `seq` elements. */
export interface TxRequest {
  id?: string;
  anchor: bigint;
  key: string | bigint;
  price: number;
  rti: { price: number; t: bigint }[];
}

export function txRequest(i: number, seq: number, options: { known?: boolean; keyType?: 'string' | 'int64' } = {}): TxRequest {
  const keyType = options.keyType ?? 'string';
  const key = options.known === false ? (keyType === 'string' ? `unknown-${i}` : BigInt(1e12 + i)) : syntheticKey((i * 37) % 1000, keyType);
  return {
    id: `req-${i}`,
    anchor: ANCHOR + BigInt(i),
    key,
    price: Math.round(((i * 7919) % 10000) / 3) / 100,
    rti: Array.from({ length: seq }, (_, k) => ({ price: ((i + k * 13) % 97) + 0.25, t: ANCHOR - BigInt(seq - k) * HOUR * BigInt(1 + (i % 5)) })),
  };
}

/** The KServe V2 JSON body of a request, INT64 values written as exact integers. */
export function inferBody(r: TxRequest, extra: { outputs?: unknown } = {}): string {
  const seq = r.rti.length;
  const key = typeof r.key === 'bigint' ? `{"name":"${KEY_INPUT}","datatype":"INT64","shape":[1,1],"data":[${r.key}]}` : `{"name":"${KEY_INPUT}","datatype":"BYTES","shape":[1,1],"data":[${JSON.stringify(r.key)}]}`;
  return (
    `{${r.id === undefined ? '' : `"id":${JSON.stringify(r.id)},`}"inputs":[` +
    `{"name":"anchor_time","datatype":"INT64","shape":[1,1],"data":[${r.anchor}]},` +
    `${key},` +
    `{"name":"transactions.price","datatype":"FP32","shape":[1,1],"data":[${r.price}]},` +
    `{"name":"${RTI_PATH}:price","datatype":"FP32","shape":[1,${seq},1],"data":[${r.rti.map((e) => e.price).join(',')}]},` +
    `{"name":"${RTI_PATH}:t_dat","datatype":"INT64","shape":[1,${seq},1],"data":[${r.rti.map((e) => e.t).join(',')}]}` +
    `]${extra.outputs === undefined ? '' : `,"outputs":${JSON.stringify(extra.outputs)}`}}`
  );
}

/** The request as onnxruntime feeds at batch 1 (no padding). */
export function feedsOf(r: TxRequest): Record<string, ort.Tensor> {
  const seq = r.rti.length;
  return {
    anchor_time: new ort.Tensor('int64', BigInt64Array.of(r.anchor), [1, 1]),
    [KEY_INPUT]: typeof r.key === 'bigint' ? new ort.Tensor('int64', BigInt64Array.of(r.key), [1, 1]) : new ort.Tensor('string', [r.key], [1, 1]),
    'transactions.price': new ort.Tensor('float32', Float32Array.of(r.price), [1, 1]),
    [`${RTI_PATH}:price`]: new ort.Tensor('float32', Float32Array.from(r.rti.map((e) => e.price)), [1, seq, 1]),
    [`${RTI_PATH}:t_dat`]: new ort.Tensor('int64', BigInt64Array.from(r.rti.map((e) => e.t)), [1, seq, 1]),
  };
}

/** Each request's probability computed alone by onnxruntime (the reference the server must match). */
export async function batchOneAnswers(modelPath: string, requests: readonly TxRequest[]): Promise<number[]> {
  const session = await ort.InferenceSession.create(modelPath);
  try {
    const out: number[] = [];
    for (const r of requests) out.push((await session.run(feedsOf(r))).probability!.data[0] as number);
    return out;
  } finally {
    await session.release();
  }
}

export interface InferResponse {
  status: number;
  body: Record<string, unknown> & { error?: string; model_version?: string; id?: string; outputs?: { name: string; datatype: string; shape: number[]; data: unknown[] }[] };
  headers: Headers;
}

export async function post(url: string, path: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<InferResponse> {
  const res = await fetch(`${url}${path}`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as InferResponse['body']), headers: res.headers };
}

export function infer(url: string, body: string, version?: string): Promise<InferResponse> {
  return post(url, `/v2/models/${MODEL}${version ? `/versions/${version}` : ''}/infer`, body);
}

export async function get(url: string, path: string, method = 'GET'): Promise<{ status: number; text: string; json: () => unknown; headers: Headers }> {
  const res = await fetch(`${url}${path}`, { method });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text), headers: res.headers };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns true (or throws after `timeoutMs`). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One tensor of a binary request: its JSON entry and its bytes, written element by element with Buffer. */
function binaryTensor(name: string, datatype: string, shape: number[], values: readonly (number | bigint | string)[]): { json: Record<string, unknown>; bytes: Buffer } {
  const parts: Buffer[] = [];
  for (const v of values) {
    if (datatype === 'BYTES') {
      const s = Buffer.from(String(v), 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32LE(s.length);
      parts.push(len, s);
    } else if (datatype === 'INT64') {
      const b = Buffer.alloc(8);
      b.writeBigInt64LE(BigInt(v));
      parts.push(b);
    } else {
      const b = Buffer.alloc(4);
      b.writeFloatLE(Number(v));
      parts.push(b);
    }
  }
  const bytes = Buffer.concat(parts);
  return { json: { name, datatype, shape, parameters: { binary_data_size: bytes.length } }, bytes };
}

/**
 * The request as `tritonclient.http` sends it by default: every input as binary tensor data after the
 * JSON header, all outputs asked for as binary. Returns the body and the Inference-Header-Content-Length.
 */
export function binaryInferBody(r: TxRequest, options: { jsonInputs?: string[]; outputs?: unknown; binaryOutput?: boolean } = {}): { body: Buffer; headerLength: number } {
  const seq = r.rti.length;
  const tensors = [
    binaryTensor('anchor_time', 'INT64', [1, 1], [r.anchor]),
    typeof r.key === 'bigint' ? binaryTensor(KEY_INPUT, 'INT64', [1, 1], [r.key]) : binaryTensor(KEY_INPUT, 'BYTES', [1, 1], [r.key]),
    binaryTensor('transactions.price', 'FP32', [1, 1], [r.price]),
    binaryTensor(`${RTI_PATH}:price`, 'FP32', [1, seq, 1], r.rti.map((e) => e.price)),
    binaryTensor(`${RTI_PATH}:t_dat`, 'INT64', [1, seq, 1], r.rti.map((e) => e.t)),
  ];
  const jsonInputs = new Set(options.jsonInputs ?? []);
  const inputs = tensors.map((t, i) => {
    if (!jsonInputs.has(t.json.name as string)) return t.json;
    // parseJsonBody keeps the INT64 values exact (JSON.parse would round them).
    return (parseJsonBody(inferBody({ ...r, id: undefined })) as { inputs: Record<string, unknown>[] }).inputs[i]!;
  });
  const header = JSON.stringify({
    ...(r.id === undefined ? {} : { id: r.id }),
    inputs,
    ...(options.outputs === undefined ? {} : { outputs: options.outputs }),
    ...(options.binaryOutput === false ? {} : { parameters: { binary_data_output: true } }),
  });
  const bin = tensors.filter((t) => !jsonInputs.has(t.json.name as string)).map((t) => t.bytes);
  const head = Buffer.from(header, 'utf8');
  return { body: Buffer.concat([head, ...bin]), headerLength: head.length };
}

/** Splits a binary response into its JSON header and the bytes after it. */
export async function postBinary(url: string, path: string, body: Buffer, headerLength: number, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: InferResponse['body'] & { outputs?: { parameters?: { binary_data_size: number } }[] }; binary: Buffer }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', body, headers: { 'Inference-Header-Content-Length': String(headerLength), ...headers } });
  const all = Buffer.from(await res.arrayBuffer());
  const h = res.headers.get('inference-header-content-length');
  const n = h === null ? all.length : Number(h);
  return { status: res.status, headers: res.headers, json: JSON.parse(all.subarray(0, n).toString('utf8')), binary: all.subarray(n) };
}
