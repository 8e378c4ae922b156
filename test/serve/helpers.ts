/**
 * Shared helpers of the serve tests: synthetic model repositories in temp folders, an in-process
 * server on an ephemeral port, request bodies shaped like Kumo's online request, and the batch-1
 * answer computed directly with onnxruntime (no server, no batching) to compare against.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { INT64_MIN } from '../../src/export/onnx/index.js';
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
