/**
 * The binary tensor data extension, checked against byte-exact fixtures written from Triton's protocol
 * document (server/docs/protocol/extension_binary_data.md), and end to end: a request sent the way
 * `tritonclient.http` sends it by default gets the same answer as the JSON request.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { attr, OnnxGraphBuilder } from '../../src/artifacts/onnx/index.js';
import { writeVersionFolder } from '../../src/loadgen/synthetic_model.js';
import { decodeBinaryTensor, encodeBinaryTensor, splitBody } from '../../src/serve/binary.js';
import { decodeInferRequest, decodeRawBinaryRequest } from '../../src/serve/decode.js';
import { encodeInferResponse } from '../../src/serve/encode.js';
import { HttpError } from '../../src/serve/http_error.js';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';
import { batchOneAnswers, binaryInferBody, get, infer, inferBody, KEY_INPUT, MODEL, postBinary, RTI_PATH, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** The model of the protocol document's example: input0 UINT32 [2,2], input1 BOOL [3], output0 FP32 [3,2]. */
const docSpec = modelSpecFromConfig(
  {
    name: 'mymodel',
    platform: 'onnxruntime_onnx',
    max_batch_size: 0,
    input: [
      { name: 'input0', data_type: 'TYPE_UINT32', dims: [2, 2] },
      { name: 'input1', data_type: 'TYPE_BOOL', dims: [3] },
    ],
    output: [{ name: 'output0', data_type: 'TYPE_FP32', dims: [3, 2] }],
  },
  'mymodel',
);

function status400(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return (e as HttpError).message;
  }
  throw new Error('expected an HTTP 400');
}

describe('binary tensor request (the protocol document example)', () => {
  // The document's JSON header, written compactly; then 16 bytes for input0 and 3 for input1.
  const header =
    '{"model_name":"mymodel","inputs":[{"name":"input0","shape":[2,2],"datatype":"UINT32","parameters":{"binary_data_size":16}},' +
    '{"name":"input1","shape":[3],"datatype":"BOOL","parameters":{"binary_data_size":3}}],' +
    '"outputs":[{"name":"output0","parameters":{"binary_data":true}}]}';
  const body = Buffer.concat([Buffer.from(header), hex('01000000 02000000 03000000 ffffffff'), hex('01 00 01')]);

  it('splits at Inference-Header-Content-Length and reads little-endian elements and one-byte BOOLs', () => {
    const { json, binary } = splitBody(body, String(header.length));
    expect(json).toBe(header);
    expect(binary!.length).toBe(19);
    const req = decodeInferRequest(parseJsonBody(json!), docSpec, { binary });
    expect(req.inputs.get('input0')).toEqual({ datatype: 'UINT32', shape: [2, 2], data: Uint32Array.of(1, 2, 3, 4294967295) });
    expect(req.inputs.get('input1')).toEqual({ datatype: 'BOOL', shape: [3], data: Uint8Array.of(1, 0, 1) });
    expect(req.outputs).toEqual(['output0']);
    expect([...req.binaryOutputs!]).toEqual(['output0']);
  });

  it('writes the response as the document shows: JSON header, then 24 bytes of FP32', () => {
    const outputs = new Map([['output0', { datatype: 'FP32' as const, shape: [3, 2], data: Float32Array.of(0.5, 1, -2, 3.25, 0, 100) }]]);
    const r = encodeInferResponse('mymodel', 1, undefined, outputs, new Set(['output0']));
    const expectedHeader = '{"model_name":"mymodel","model_version":"1","outputs":[{"name":"output0","datatype":"FP32","shape":[3,2],"parameters":{"binary_data_size":24}}]}';
    expect(r.json).toBe(expectedHeader);
    expect(r.binary && r.headerLength).toBe(expectedHeader.length);
    expect(r.binary && r.length).toBe(expectedHeader.length + 24);
    expect(Buffer.concat(r.binary!)).toEqual(hex('0000003f 0000803f 000000c0 00005040 00000000 0000c842'));
  });

  it('without binary outputs the response is the JSON alone', () => {
    const outputs = new Map([['output0', { datatype: 'FP32' as const, shape: [1, 2], data: Float32Array.of(0.5, 1) }]]);
    expect(encodeInferResponse('mymodel', 1, 'x', outputs)).toEqual({ json: '{"model_name":"mymodel","model_version":"1","id":"x","outputs":[{"name":"output0","datatype":"FP32","shape":[1,2],"data":[0.5,1]}]}' });
  });
});

describe('element layouts', () => {
  it('BYTES: each element a 4-byte little-endian length, then its UTF-8 bytes', () => {
    const bytes = hex('08000000 6330303030303337 00000000 02000000 c3a9');
    expect(decodeBinaryTensor(bytes, 'BYTES', 3, 'k', [3])).toEqual(['c0000037', '', 'é']);
    expect(Buffer.from(encodeBinaryTensor({ datatype: 'BYTES', shape: [3], data: ['c0000037', '', 'é'] }))).toEqual(bytes);
  });

  it('INT64 and FP32 little-endian (an anchor time beyond 2^53 stays exact)', () => {
    expect(decodeBinaryTensor(hex('7b00eba5f023bb17 0000000000000080'), 'INT64', 2, 't', [2])).toEqual(BigInt64Array.of(1710000000000000123n, -9223372036854775808n));
    expect(decodeBinaryTensor(hex('00004841 cdcccc3d'), 'FP32', 2, 'p', [2])).toEqual(Float32Array.of(12.5, 0.1));
  });

  it.each([
    ['a size that does not fit the shape', () => decodeBinaryTensor(hex('00004841'), 'FP32', 2, 'p', [1, 2]), /binary_data_size is 4 bytes, but shape \[1,2\] of FP32 needs 8 \(2 elements × 4 bytes\)/],
    ['BYTES cut short', () => decodeBinaryTensor(hex('08000000 6330'), 'BYTES', 1, 'k', [1, 1]), /element 0 declares 8 bytes, but only 2 are left/],
    ['BYTES missing elements', () => decodeBinaryTensor(hex('01000000 63'), 'BYTES', 2, 'k', [2]), /ends after 1 of the 2 elements/],
    ['BYTES with bytes left over', () => decodeBinaryTensor(hex('01000000 63 ff'), 'BYTES', 1, 'k', [1]), /remaining 1 bytes belong to no element/],
    ['BYTES not UTF-8', () => decodeBinaryTensor(hex('01000000 ff'), 'BYTES', 1, 'k', [1]), /not valid UTF-8/],
    ['a BOOL byte other than 0 or 1', () => decodeBinaryTensor(hex('0102'), 'BOOL', 2, 'b', [2]), /BOOL element 1 is the byte 2/],
  ])('400 for %s', (_, f, message) => {
    expect(status400(f)).toMatch(message);
  });
});

describe('request framing errors', () => {
  const header = '{"inputs":[{"name":"input0","shape":[2,2],"datatype":"UINT32","parameters":{"binary_data_size":16}},{"name":"input1","shape":[3],"datatype":"BOOL","data":[true,false,true]}]}';
  const withOutputs = (outputs: string) => `${header.slice(0, -1)},"outputs":${outputs}}`;
  const decodeWith = (binary: Buffer | undefined, h = header) => decodeInferRequest(parseJsonBody(h), docSpec, { binary });

  it('mixes binary and JSON inputs', () => {
    const req = decodeWith(Buffer.alloc(16, 0));
    expect(req.inputs.get('input1')!.data).toEqual(Uint8Array.of(1, 0, 1));
    expect(req.binaryOutputs!.size).toBe(0);
  });

  it.each([
    ['no Inference-Header-Content-Length', () => decodeWith(undefined), /has parameters.binary_data_size, but the request has no Inference-Header-Content-Length header/],
    ['binary data shorter than declared', () => decodeWith(Buffer.alloc(10)), /binary_data_size 16 runs past the end of the body \(10 binary bytes left/],
    ['bytes after the last input', () => decodeWith(Buffer.alloc(20)), /has 4 bytes after the JSON header and the binary inputs' data that belong to no input/],
    ['both data and binary_data_size', () => decodeWith(Buffer.alloc(16), header.replace('"binary_data_size":16}', '"binary_data_size":16},"data":[1,2,3,4]')), /has both "data" and parameters.binary_data_size/],
    ['a negative binary_data_size', () => decodeWith(Buffer.alloc(16), header.replace('16}', '-1}')), /binary_data_size must be a non-negative integer/],
    ['binary_data_output not a boolean', () => decodeWith(Buffer.alloc(16), header.replace('{"inputs"', '{"parameters":{"binary_data_output":"yes"},"inputs"')), /binary_data_output must be true or false \(got string "yes"\)/],
    ['a classification output', () => decodeWith(Buffer.alloc(16), withOutputs('[{"name":"output0","parameters":{"classification":2}}]')), /classification extension is not supported/],
    ['a header length that is not a number', () => splitBody(Buffer.from(header), 'abc'), /must be the JSON header's length in bytes \(got "abc"\)/],
    ['a header length beyond the body', () => splitBody(Buffer.from(header), '100000'), /is 100000 bytes, but the whole request body has only/],
  ])('400 for %s', (_, f, message) => {
    expect(status400(f)).toMatch(message);
  });

  it('an output\'s own binary_data overrides binary_data_output', () => {
    const h = header.replace('{"inputs"', '{"parameters":{"binary_data_output":true},"inputs"');
    const h2 = `${h.slice(0, -1)},"outputs":[{"name":"output0","parameters":{"binary_data":false}}]}`;
    expect(decodeWith(Buffer.alloc(16), h2).binaryOutputs!.size).toBe(0);
    expect([...decodeWith(Buffer.alloc(16), header.replace('{"inputs"', '{"parameters":{"binary_data_output":true},"inputs"')).binaryOutputs!]).toEqual(['output0']);
  });
});

describe('raw binary requests (Inference-Header-Content-Length: 0)', () => {
  const single = (dataType: 'TYPE_FP32' | 'TYPE_STRING', dims: number[], maxBatchSize = 8) =>
    modelSpecFromConfig({ platform: 'onnxruntime_onnx', max_batch_size: maxBatchSize, input: [{ name: 'x', data_type: dataType, dims }], output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }] }, 'm');

  it('the body is the one input at batch 1, its variable dimension from the byte count; every output binary', () => {
    const split = splitBody(hex('0000803f 00000040 00004040 00008040'), '0');
    expect(split.raw).toBeDefined();
    const req = decodeRawBinaryRequest(split.raw!, single('TYPE_FP32', [-1]));
    expect(req.inputs.get('x')).toEqual({ datatype: 'FP32', shape: [1, 4], data: Float32Array.of(1, 2, 3, 4) });
    expect([req.batch, [...req.binaryOutputs!]]).toEqual([1, ['y']]);
    expect(decodeRawBinaryRequest(hex('03000000 616263'), single('TYPE_STRING', [1])).inputs.get('x')!.data).toEqual(['abc']);
    expect(decodeRawBinaryRequest(hex('0000803f 00000040'), single('TYPE_FP32', [2], 0)).inputs.get('x')!.shape).toEqual([2]);
  });

  it.each([
    ['a model with several inputs', () => decodeRawBinaryRequest(Buffer.alloc(16), docSpec), /carries one input, but model "mymodel" has 2 \("input0", "input1"\); send the JSON inference header first/],
    ['a byte count that does not fit', () => decodeRawBinaryRequest(Buffer.alloc(10), single('TYPE_FP32', [3])), /10 bytes are not the 12 bytes input "x" \(FP32, dims \[3\]\) takes/],
    ['a byte count not a multiple of a row', () => decodeRawBinaryRequest(Buffer.alloc(10), single('TYPE_FP32', [-1, 2])), /10 bytes are not a multiple of 8 bytes/],
    ['two variable dimensions', () => decodeRawBinaryRequest(Buffer.alloc(16), single('TYPE_FP32', [-1, -1])), /has 2 variable dimensions \[-1,-1\]/],
  ])('400 for %s', (_, f, message) => {
    expect(status400(f)).toMatch(message);
  });
});

describe('over HTTP, as tritonclient sends it', () => {
  let repo: TempRepo;
  let server: TestServer;
  let url: string;
  const path = `/v2/models/${MODEL}/infer`;

  beforeAll(async () => {
    repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 2000 });
    // A one-input model for raw binary requests: y = Σ x along its variable dimension.
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', ['batch', 'n']);
    g.addOutput('y', 'FLOAT', ['batch', 1], { from: g.op('ReduceSum', [x, g.constant(BigInt64Array.of(1n), [1], { name: 'axes' })], { keepdims: attr.int(1) }) });
    writeVersionFolder(join(repo.root, 'sum'), 1, g.toBytes());
    writeFileSync(
      join(repo.root, 'sum', 'config.pbtxt'),
      writeModelConfig({ name: 'sum', platform: 'onnxruntime_onnx', max_batch_size: 8, input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [-1] }], output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }] }),
    );
    server = await startTestServer(repo.root);
    url = server.url;
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('GET /v2 lists exactly the extensions served', async () => {
    expect((await get(url, '/v2')).json()).toMatchObject({ extensions: ['binary_tensor_data', 'model_configuration', 'statistics'] });
  });

  it('binary inputs and a binary output give the bytes of the JSON answer (and of onnxruntime at batch 1)', async () => {
    const reqs = [txRequest(3, 5), txRequest(4, 0), txRequest(5, 2, { known: false })];
    const expected = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), reqs);
    // Concurrently, so the binary requests share dynamic batches.
    const answers = await Promise.all(
      reqs.map(async (r) => {
        const { body, headerLength } = binaryInferBody(r);
        const bin = await postBinary(url, path, body, headerLength);
        const json = await infer(url, inferBody(r));
        return { bin, json };
      }),
    );
    answers.forEach(({ bin, json }, i) => {
      expect(bin.status).toBe(200);
      expect(bin.headers.get('content-type')).toBe('application/octet-stream');
      expect(Number(bin.headers.get('content-length'))).toBe(Number(bin.headers.get('inference-header-content-length')) + 4);
      expect(bin.json).toEqual({ model_name: MODEL, model_version: '1', id: reqs[i]!.id, outputs: [{ name: 'probability', datatype: 'FP32', shape: [1, 1], parameters: { binary_data_size: 4 } }] });
      const value = bin.binary.readFloatLE(0);
      expect(value).toBe(Math.fround(json.body.outputs![0]!.data[0] as number));
      expect(value).toBeCloseTo(expected[i]!, 6);
    });
  });

  it('binary inputs with JSON outputs, and JSON inputs mixed in', async () => {
    const r = txRequest(8, 3);
    const { body, headerLength } = binaryInferBody(r, { binaryOutput: false, jsonInputs: ['anchor_time', KEY_INPUT] });
    const res = await postBinary(url, path, body, headerLength);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.binary.length).toBe(0);
    const json = await infer(url, inferBody(r));
    expect(res.json.outputs).toEqual(json.body.outputs);
  });

  it('a raw binary request to a one-input model is answered in binary, as the protocol document shows', async () => {
    const res = await postBinary(url, '/v2/models/sum/infer', hex('0000803f 00000040 00004040 00008040'), 0);
    expect(res.status).toBe(200);
    expect(res.json.outputs).toEqual([{ name: 'y', datatype: 'FP32', shape: [1, 1], parameters: { binary_data_size: 4 } }]);
    expect(res.binary).toEqual(hex('00002041')); // 10
  });

  it('a raw binary request to a model with several inputs is a 400 that says what to send', async () => {
    const res = await postBinary(url, path, Buffer.alloc(8), 0);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/a raw binary request \(Inference-Header-Content-Length: 0\) carries one input, but model "online-model" has 5/);
  });

  it('answers 400 naming the input when the binary sizes do not add up', async () => {
    const { body, headerLength } = binaryInferBody(txRequest(1, 2));
    const res = await postBinary(url, path, body.subarray(0, body.length - 3), headerLength);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(new RegExp(`"${RTI_PATH}:t_dat": binary_data_size 16 runs past the end of the body`));
  });
});
