/**
 * KServe V2 over gRPC: a `@grpc/grpc-js` client built from the same embedded proto runs every call the
 * server answers against an in-process server on loopback, compares inference with onnxruntime at batch
 * 1, and checks the status codes KServe specifies for bad inputs, auth and TLS.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, client, type Client } from './grpc_client.js';
import { batchOneAnswers, get, KEY_INPUT, MODEL, RTI_PATH, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer, type TxRequest } from './helpers.js';

async function status(p: Promise<unknown>): Promise<{ code: grpc.status; details: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as grpc.ServiceError;
    return { code: err.code, details: err.details };
  }
  throw new Error('expected the call to fail');
}

const i64 = (values: bigint[]) => Buffer.from(BigInt64Array.from(values).buffer);
const f32 = (values: number[]) => Buffer.from(Float32Array.from(values).buffer);
const bytesTensor = (values: string[]) => Buffer.concat(values.flatMap((v) => [Buffer.from(Uint32Array.of(Buffer.byteLength(v)).buffer), Buffer.from(v)]));

/** A ModelInferRequest with every input as raw bytes (what Triton's clients send). */
function rawRequest(r: TxRequest, model = MODEL) {
  const seq = r.rti.length;
  return {
    model_name: model,
    id: r.id,
    inputs: [
      { name: 'anchor_time', datatype: 'INT64', shape: [1, 1] },
      { name: KEY_INPUT, datatype: 'BYTES', shape: [1, 1] },
      { name: 'transactions.price', datatype: 'FP32', shape: [1, 1] },
      { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [1, seq, 1] },
      { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [1, seq, 1] },
    ],
    raw_input_contents: [i64([r.anchor]), bytesTensor([String(r.key)]), f32([r.price]), f32(r.rti.map((e) => e.price)), i64(r.rti.map((e) => e.t))],
  };
}

/** The same request with typed contents (`InferTensorContents`), 64-bit integers as decimal strings. */
function contentsRequest(r: TxRequest) {
  const seq = r.rti.length;
  return {
    model_name: MODEL,
    inputs: [
      { name: 'anchor_time', datatype: 'INT64', shape: [1, 1], contents: { int64_contents: [String(r.anchor)] } },
      { name: KEY_INPUT, datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [Buffer.from(String(r.key))] } },
      { name: 'transactions.price', datatype: 'FP32', shape: [1, 1], contents: { fp32_contents: [r.price] } },
      { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [1, seq, 1], contents: { fp32_contents: r.rti.map((e) => e.price) } },
      { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [1, seq, 1], contents: { int64_contents: r.rti.map((e) => String(e.t)) } },
    ],
  };
}

const probabilityOf = (res: { outputs: { name: string }[]; raw_output_contents: Buffer[] }): number => {
  const i = res.outputs.findIndex((o) => o.name === 'probability');
  const raw = res.raw_output_contents[i]!;
  return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length))[0]!;
};

let repo: TempRepo;
let server: TestServer;
let c: Client;
beforeAll(async () => {
  repo = tempRepo({ maxBatchSize: 8 });
  server = await startTestServer(repo.root, { grpcPort: 0 });
  c = client(server.grpc!.port);
});
afterAll(async () => {
  c?.close();
  await server?.stop();
  repo?.cleanup();
});

describe('gRPC health, metadata and index', () => {
  it('answers ServerLive, ServerReady and ServerMetadata', async () => {
    expect(await call(c, 'ServerLive', {})).toEqual({ live: true });
    expect(await call(c, 'ServerReady', {})).toEqual({ ready: true });
    const meta = await call(c, 'ServerMetadata', {});
    expect(meta.name).toBe('gnnctl');
    expect(meta.extensions).toEqual(expect.arrayContaining(['statistics', 'model_configuration']));
  });

  it('ModelReady is true for the served model and false for an unknown model or version', async () => {
    expect(await call(c, 'ModelReady', { name: MODEL })).toEqual({ ready: true });
    expect(await call(c, 'ModelReady', { name: MODEL, version: '1' })).toEqual({ ready: true });
    expect(await call(c, 'ModelReady', { name: 'no-such-model' })).toEqual({ ready: false });
    expect(await call(c, 'ModelReady', { name: MODEL, version: '99' })).toEqual({ ready: false });
  });

  it('ModelMetadata lists the same tensors as the HTTP metadata; unknown model is NOT_FOUND', async () => {
    const meta = await call(c, 'ModelMetadata', { name: MODEL });
    const http = (await get(server.url, `/v2/models/${MODEL}`)).json() as { inputs: { name: string; datatype: string; shape: number[] }[]; versions: string[] };
    expect(meta.versions).toEqual(http.versions);
    expect(meta.inputs.map((t: { name: string; datatype: string; shape: string[] }) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(Number) }))).toEqual(http.inputs);
    const missing = await status(call(c, 'ModelMetadata', { name: 'no-such-model' }));
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.details).toContain('unknown model "no-such-model"');
  });

  it('ModelConfig returns the model configuration through the ModelConfig message', async () => {
    const { config } = await call(c, 'ModelConfig', { name: MODEL });
    expect(config.name).toBe(MODEL);
    expect(config.max_batch_size).toBe(8);
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(config.input.map((i: { name: string }) => i.name)).toContain(KEY_INPUT);
  });

  it('RepositoryIndex lists the model READY', async () => {
    const { models } = await call(c, 'RepositoryIndex', { ready: true });
    expect(models).toEqual([{ name: MODEL, version: '1', state: 'READY', reason: '' }]);
  });
});

describe('gRPC ModelInfer', () => {
  const requests = Array.from({ length: 6 }, (_, i) => txRequest(i, 1 + (i % 4)));
  let reference: number[];
  beforeAll(async () => {
    reference = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), requests);
  });

  it('raw_input_contents: the answer equals onnxruntime at batch 1, concurrent requests batched', async () => {
    const answers = await Promise.all(requests.map((r) => call(c, 'ModelInfer', rawRequest(r))));
    for (let i = 0; i < requests.length; i++) {
      expect(answers[i].model_name).toBe(MODEL);
      expect(answers[i].model_version).toBe('1');
      expect(answers[i].id).toBe(requests[i]!.id);
      expect(answers[i].outputs[0].datatype).toBe('FP32');
      expect(answers[i].outputs[0].shape).toEqual(['1', '1']);
      expect(probabilityOf(answers[i])).toBeCloseTo(reference[i]!, 4);
    }
  });

  it('typed contents give the same answer as raw contents', async () => {
    const res = await call(c, 'ModelInfer', contentsRequest(requests[2]!));
    expect(probabilityOf(res)).toBeCloseTo(reference[2]!, 4);
  });

  it('wrong datatype, shape mismatch and a raw/inputs count mismatch are INVALID_ARGUMENT naming the input', async () => {
    const wrongType = rawRequest(requests[0]!);
    wrongType.inputs[2]!.datatype = 'FP64';
    const t = await status(call(c, 'ModelInfer', wrongType));
    expect(t.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(t.details).toContain('"transactions.price" has datatype "FP64", but model "online-model" expects FP32');

    const wrongShape = rawRequest(requests[0]!);
    wrongShape.inputs[2]!.shape = [1, 1, 1];
    const s = await status(call(c, 'ModelInfer', wrongShape));
    expect(s.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(s.details).toContain('"transactions.price" has shape [1,1,1]');

    const shortRaw = rawRequest(requests[0]!);
    shortRaw.raw_input_contents[2] = Buffer.alloc(2);
    expect((await status(call(c, 'ModelInfer', shortRaw))).code).toBe(grpc.status.INVALID_ARGUMENT);

    const fewer = rawRequest(requests[0]!);
    fewer.raw_input_contents.pop();
    const f = await status(call(c, 'ModelInfer', fewer));
    expect(f.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(f.details).toContain('raw_input_contents has 4 entries but the request has 5 inputs');
  });

  it('unknown model and unknown version are NOT_FOUND', async () => {
    const m = await status(call(c, 'ModelInfer', rawRequest(requests[0]!, 'no-such-model')));
    expect(m.code).toBe(grpc.status.NOT_FOUND);
    const v = await status(call(c, 'ModelInfer', { ...rawRequest(requests[0]!), model_version: '7' }));
    expect(v.code).toBe(grpc.status.NOT_FOUND);
    expect(v.details).toContain('has no version 7 loaded');
  });

  it('counts gRPC calls in ModelStatistics and /metrics, like HTTP requests', async () => {
    const { model_stats } = await call(c, 'ModelStatistics', { name: MODEL });
    expect(model_stats).toHaveLength(1);
    // Successes: the 6 batched requests and the typed-contents one; failures: the 3 that reached the version.
    expect(Number(model_stats[0].inference_stats.success.count)).toBe(7);
    expect(Number(model_stats[0].inference_count)).toBe(7);
    expect(Number(model_stats[0].inference_stats.fail.count)).toBeGreaterThanOrEqual(3);
    const metrics = (await get(server.url, '/metrics')).text;
    expect(metrics).toMatch(/gnnctl_grpc_requests_total\{method="ModelInfer",code="OK"\} 7/);
    expect(metrics).toMatch(/gnnctl_grpc_requests_total\{method="ModelInfer",code="NOT_FOUND"\} 2/);
    expect(metrics).toMatch(/gnnctl_inference_requests_total\{model="online-model",version="1",outcome="success"\} 7/);
  });
});

describe('gRPC auth and TLS', () => {
  it('without the bearer token in metadata a call is UNAUTHENTICATED; health stays open with authOpenHealth', async () => {
    const authed = await startTestServer(repo.root, { grpcPort: 0, authTokens: ['tok-1'], authOpenHealth: true });
    const ac = client(authed.grpc!.port);
    try {
      expect(await call(ac, 'ServerLive', {})).toEqual({ live: true });
      const none = await status(call(ac, 'ModelMetadata', { name: MODEL }));
      expect(none.code).toBe(grpc.status.UNAUTHENTICATED);
      const md = new grpc.Metadata();
      md.set('authorization', 'Bearer wrong');
      expect((await status(call(ac, 'ModelInfer', rawRequest(txRequest(1, 2)), md))).code).toBe(grpc.status.UNAUTHENTICATED);
      const ok = new grpc.Metadata();
      ok.set('authorization', 'Bearer tok-1');
      expect((await call(ac, 'ModelInfer', rawRequest(txRequest(1, 2)), ok)).model_name).toBe(MODEL);
    } finally {
      ac.close();
      await authed.stop();
    }
  });

  const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
  it.skipIf(!hasOpenssl)('serves gRPC over TLS with the same certificate as HTTPS', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gnnctl-grpc-tls-'));
    try {
      const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
      const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
      expect(r.status).toBe(0);
      const tls = { cert: readFileSync(cert), key: readFileSync(key) };
      const secure = await startTestServer(repo.root, { grpcPort: 0, tls });
      const sc = client(secure.grpc!.port, grpc.credentials.createSsl(tls.cert));
      const plain = client(secure.grpc!.port, grpc.credentials.createInsecure());
      try {
        expect(await call(sc, 'ServerReady', {})).toEqual({ ready: true });
        expect((await status(call(plain, 'ServerReady', {}))).code).toBe(grpc.status.UNAVAILABLE);
      } finally {
        sc.close();
        plain.close();
        await secure.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
