/**
 * Every endpoint of `gnnctl serve` and every error it answers, against a real server on an ephemeral
 * port with the synthetic distilled model.
 */
import { gzipSync } from 'node:zlib';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { syntheticConfig } from '../../src/loadgen/synthetic_model.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchOneAnswers, get, infer, inferBody, KEY_INPUT, MODEL, post, RTI_PATH, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';

let repo: TempRepo;
let server: TestServer;
let url: string;

beforeAll(async () => {
  repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 200 });
  // The same ONNX model served without batching (max_batch_size 0: shapes are exactly the dims).
  const fixed = syntheticConfig({ name: 'unbatched', maxBatchSize: 0, maxQueueDelayUs: null });
  fixed.input = fixed.input!.map((t) => ({ ...t, dims: [1, ...t.dims] }));
  fixed.output = fixed.output!.map((t) => ({ ...t, dims: [1, ...t.dims] }));
  mkdirSync(join(repo.root, 'unbatched', '1'), { recursive: true });
  writeFileSync(join(repo.root, 'unbatched', 'config.pbtxt'), writeModelConfig(fixed));
  copyFileSync(join(repo.root, MODEL, '1', 'model.onnx'), join(repo.root, 'unbatched', '1', 'model.onnx'));
  server = await startTestServer(repo.root, { maxBodyBytes: 64 * 1024 });
  url = server.url;
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('health and metadata', () => {
  it('GET /v2/health/live and /v2/health/ready answer 200 with an empty body', async () => {
    for (const path of ['/v2/health/live', '/v2/health/ready']) {
      const r = await get(url, path);
      expect([r.status, r.text]).toEqual([200, '']);
    }
  });

  it('GET /v2 describes the server', async () => {
    expect((await get(url, '/v2')).json()).toMatchObject({ name: 'gnnctl', extensions: ['binary_tensor_data', 'model_configuration', 'statistics'] });
  });

  it('GET /v2/models/{name} gives versions, platform and tensors with KServe datatypes and the batch dim', async () => {
    const meta = (await get(url, `/v2/models/${MODEL}`)).json();
    expect(meta).toEqual({
      name: MODEL,
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [
        { name: 'anchor_time', datatype: 'INT64', shape: [-1, 1] },
        { name: KEY_INPUT, datatype: 'BYTES', shape: [-1, 1] },
        { name: 'transactions.price', datatype: 'FP32', shape: [-1, 1] },
        { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [-1, -1, 1] },
        { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [-1, -1, 1] },
      ],
      outputs: [{ name: 'probability', datatype: 'FP32', shape: [-1, 1] }],
    });
    expect((await get(url, `/v2/models/${MODEL}/versions/1`)).json()).toMatchObject({ name: MODEL, versions: ['1'] });
  });

  it('GET /v2/models/{name}/ready and /versions/{v}/ready', async () => {
    expect((await get(url, `/v2/models/${MODEL}/ready`)).status).toBe(200);
    expect((await get(url, `/v2/models/${MODEL}/versions/1/ready`)).status).toBe(200);
    const r = await get(url, `/v2/models/${MODEL}/versions/7/ready`);
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ error: expect.stringMatching(/has no version 7/) });
    expect((await get(url, '/v2/models/nope/ready')).status).toBe(400);
  });

  it('GET /v2/models/{name}/config gives the configuration with the pad values', async () => {
    const cfg = (await get(url, `/v2/models/${MODEL}/config`)).json() as { max_batch_size: number; parameters: Record<string, { string_value: string }> };
    expect(cfg.max_batch_size).toBe(8);
    expect(cfg.parameters[`pad_value:${RTI_PATH}:t_dat`]).toEqual({ string_value: '-9223372036854775808' });
  });

  it('POST /v2/repository/index lists models and versions', async () => {
    const r = await post(url, '/v2/repository/index', '');
    expect(r.body).toEqual([
      { name: MODEL, version: '1', state: 'READY' },
      { name: 'unbatched', version: '1', state: 'READY' },
    ]);
  });

  it('a model without batching reports and takes shapes without a batch dimension', async () => {
    const meta = (await get(url, '/v2/models/unbatched')).json() as { inputs: { shape: number[] }[] };
    expect(meta.inputs.map((i) => i.shape)).toEqual([[1, 1], [1, 1], [1, 1], [1, -1, 1], [1, -1, 1]]);
    const req = txRequest(4, 5);
    const r = await post(url, '/v2/models/unbatched/infer', inferBody(req));
    expect(r.status).toBe(200);
    const [expected] = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), [req]);
    expect(r.body.outputs![0]!.data[0]).toBeCloseTo(expected!, 6);
    const two = await post(url, '/v2/models/unbatched/infer', inferBody(req).replaceAll('"shape":[1,', '"shape":[2,'));
    expect(two.status).toBe(400);
  });
});

describe('POST /v2/models/{name}/infer', () => {
  it('answers as Triton does, equal to onnxruntime at batch 1, echoing the id', async () => {
    const req = txRequest(5, 3);
    const r = await infer(url, inferBody(req));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.body).toMatchObject({ model_name: MODEL, model_version: '1', id: 'req-5', outputs: [{ name: 'probability', datatype: 'FP32', shape: [1, 1] }] });
    const [expected] = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), [req]);
    expect(r.body.outputs![0]!.data[0]).toBeCloseTo(expected!, 6);
  });

  it('takes a batch of several rows in one request, an empty RTI sequence, nested data and unknown keys', async () => {
    const reqs = [txRequest(1, 0), txRequest(2, 4, { known: false })];
    const expected = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), reqs);
    const body = {
      inputs: [
        { name: 'anchor_time', datatype: 'INT64', shape: [2, 1], data: [[String(reqs[0]!.anchor)], [String(reqs[1]!.anchor)]] },
        { name: KEY_INPUT, datatype: 'BYTES', shape: [2, 1], data: [reqs[0]!.key, reqs[1]!.key] },
        { name: 'transactions.price', datatype: 'FP32', shape: [2, 1], data: [reqs[0]!.price, reqs[1]!.price] },
        // Row 0 has no interactions: padded with INT64 min by the client, as the model masks it.
        { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [2, 4, 1], data: [0, 0, 0, 0, ...reqs[1]!.rti.map((e) => e.price)] },
        { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [2, 4, 1], data: [...Array(4).fill('-9223372036854775808'), ...reqs[1]!.rti.map((e) => String(e.t))] },
      ],
      outputs: [{ name: 'probability' }],
    };
    const r = await infer(url, JSON.stringify(body));
    expect(r.status).toBe(200);
    expect(r.body.outputs![0]!.shape).toEqual([2, 1]);
    const data = r.body.outputs![0]!.data as number[];
    expect(data[0]).toBeCloseTo(expected[0]!, 6);
    expect(data[1]).toBeCloseTo(expected[1]!, 6);
  });

  it('accepts a gzip-compressed body', async () => {
    const r = await post(url, `/v2/models/${MODEL}/infer`, gzipSync(inferBody(txRequest(1, 2))), { 'Content-Encoding': 'gzip' });
    expect(r.status).toBe(200);
  });

  it('serves a specific version', async () => {
    const r = await infer(url, inferBody(txRequest(1, 2)), '1');
    expect([r.status, r.body.model_version]).toEqual([200, '1']);
  });
});

describe('errors', () => {
  const body = inferBody(txRequest(1, 2));
  const broken = (mutate: (b: { inputs: Record<string, unknown>[] }) => unknown) => {
    const b = JSON.parse(inferBody({ ...txRequest(1, 2), anchor: 1n, rti: [] })) as { inputs: Record<string, unknown>[] };
    return JSON.stringify(mutate(b));
  };

  it.each([
    ['unknown input', broken((b) => ({ inputs: [...b.inputs, { name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }] })), 400, /unexpected inference input "x"/],
    ['missing input', broken((b) => ({ inputs: b.inputs.slice(0, 4) })), 400, /missing from the request/],
    ['wrong datatype', broken((b) => ({ inputs: b.inputs.map((t, i) => (i === 1 ? { ...t, datatype: 'INT64', data: [1] } : t)) })), 400, /has datatype "INT64", but model "online-model" expects BYTES/],
    ['wrong shape', broken((b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, shape: [1, 1, 1] } : t)) })), 400, /expects 2 dimensions/],
    ['data length mismatch', broken((b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, data: [1, 2] } : t)) })), 400, /has 2 data elements, but its shape \[1,1\] holds 1/],
    ['batch larger than max_batch_size', broken((b) => ({ inputs: b.inputs.map((t) => ({ ...t, shape: [9, ...(t.shape as number[]).slice(1)] })) })), 400, /larger than its max_batch_size 8/],
    ['body not JSON', '{"inputs": [', 400, /failed to parse the request body as JSON/],
  ])('%s → %i', async (_, payload, status, message) => {
    const r = await infer(url, payload as string);
    expect(r.status).toBe(status);
    expect(r.body.error).toMatch(message as RegExp);
  });

  it('unknown model → 404 with a suggestion', async () => {
    const r = await post(url, '/v2/models/online-modle/infer', body);
    expect(r.status).toBe(404);
    expect(r.body.error).toMatch(/unknown model "online-modle"; did you mean "online-model"/);
    expect((await get(url, '/v2/models/online-modle')).status).toBe(404);
  });

  it('unknown version → 404; malformed version → 400', async () => {
    expect(await infer(url, body, '2')).toMatchObject({ status: 404, body: { error: expect.stringMatching(/has no version 2 loaded \(ready versions: 1\)/) } });
    expect(await infer(url, body, 'latest')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/positive integer/) } });
  });

  it('body over the size limit → 413', async () => {
    const r = await infer(url, `{"inputs":[], "pad": "${'x'.repeat(70 * 1024)}"}`);
    expect(r.status).toBe(413);
    expect(r.body.error).toMatch(/larger than the limit of 65536 bytes/);
    // Compressed bodies are limited after decompression too.
    const z = await post(url, `/v2/models/${MODEL}/infer`, gzipSync(`{"inputs":[], "pad": "${'x'.repeat(200 * 1024)}"}`), { 'Content-Encoding': 'gzip' });
    expect(z.status).toBe(413);
  });

  it('unknown content encoding → 415', async () => {
    expect((await post(url, `/v2/models/${MODEL}/infer`, body, { 'Content-Encoding': 'br' })).status).toBe(415);
  });

  it('wrong method → 405 with Allow', async () => {
    const r = await get(url, `/v2/models/${MODEL}/infer`);
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(r.json()).toEqual({ error: expect.stringMatching(/GET is not allowed/) });
    expect((await post(url, '/v2/health/live', '')).status).toBe(405);
  });

  it('unknown route → 404', async () => {
    for (const path of ['/', '/v1/models/x', '/v2/models/x/explain', '/v2/health/dead']) {
      const r = await get(url, path);
      expect(r.status).toBe(404);
      expect(r.json()).toEqual({ error: expect.stringMatching(/unknown route/) });
    }
  });
});

describe('GET /metrics', () => {
  it('exposes request counts by outcome and status, latency, batch size, in-flight and loaded models', async () => {
    const r = await get(url, '/metrics');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = r.text;
    expect(text).toMatch(/^gnnctl_inference_requests_total\{model="online-model",version="1",outcome="success"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_inference_requests_total\{model="online-model",version="1",outcome="failure"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_http_requests_total\{method="POST",route="infer",status="400"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_http_requests_total\{method="POST",route="infer",status="413"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_inference_queue_duration_seconds_bucket\{model="online-model",version="1",le="\+Inf"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_inference_compute_duration_seconds_count\{model="online-model",version="1"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_inference_batch_size_sum\{model="online-model",version="1"\} [1-9]/m);
    expect(text).toMatch(/^gnnctl_inflight_requests 0$/m);
    expect(text).toMatch(/^gnnctl_model_info\{model="online-model",version="1",platform="onnxruntime_onnx",thread="worker"\} 1$/m);
    expect(text).toMatch(/^gnnctl_request_phase_seconds_total\{phase="compute"\} /m);
    expect(text).toMatch(/^gnnctl_event_loop_utilization /m);
  });
});
