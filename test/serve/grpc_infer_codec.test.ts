import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { grpcMessageType, grpcPackageDefinition } from '../../src/artifacts/triton/grpc_service.js';
import { decodeModelInferRequest, encodeModelInferResponse } from '../../src/serve/grpc_infer_codec.js';

const declared = (grpc.loadPackageDefinition(grpcPackageDefinition()) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } }).inference.GRPCInferenceService.service.ModelInfer!;

function encodeRequest(obj: Record<string, unknown>): Buffer {
  const type = grpcMessageType('ModelInferRequest');
  return Buffer.from(type.encode(type.fromObject(obj)).finish());
}

describe('decodeModelInferRequest', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['empty', {}],
    [
      'raw inputs, parameters of each kind, outputs, negative and large dims',
      {
        model_name: 'online-model',
        model_version: '3',
        id: 'req-7',
        parameters: { timeout: { int64_param: '-5000' }, flag: { bool_param: true }, note: { string_param: 'héllo' }, empty: {} },
        inputs: [
          { name: 'customers.customer_id', datatype: 'BYTES', shape: ['1', '1'], parameters: { binary_data_size: { int64_param: '12' } } },
          { name: 'transactions.t_dat', datatype: 'INT64', shape: ['-1', '9007199254740993'] },
        ],
        outputs: [{ name: 'prediction', parameters: { binary_data: { bool_param: false } } }, { name: 'embedding' }],
        raw_input_contents: [Buffer.from('abcdefghijkl'), Buffer.alloc(0), Buffer.from([0, 255, 7])],
      },
    ],
    [
      'typed contents',
      {
        model_name: 'm',
        inputs: [
          { name: 'a', datatype: 'FP32', shape: ['2'], contents: { fp32_contents: [1.5, -2] } },
          { name: 'b', datatype: 'INT64', shape: ['1'], contents: { int64_contents: ['-9223372036854775808'] } },
          { name: 'c', datatype: 'BYTES', shape: ['1'], contents: { bytes_contents: [Buffer.from('x')] } },
          { name: 'd', datatype: 'BOOL', shape: ['0'], contents: {} },
        ],
      },
    ],
  ];
  for (const [name, obj] of cases) {
    it(`reads ${name} as proto-loader does`, () => {
      const bytes = encodeRequest(obj);
      expect(decodeModelInferRequest(bytes)).toEqual(declared.requestDeserialize(bytes));
    });
  }

  it('reads unpacked shapes and skips fields it does not know', () => {
    // shape as two unpacked varints (field 3, wire type 0), then an unknown field 15 (varint) and 16 (bytes).
    const input = Buffer.from([0x0a, 0x01, 0x78, 0x18, 0x02, 0x18, 0x05, 0x78, 0x01, 0x82, 0x01, 0x02, 0x61, 0x62]);
    const bytes = Buffer.concat([Buffer.from([0x2a, input.length]), input, Buffer.from([0x78, 0x2a])]);
    const got = decodeModelInferRequest(bytes);
    expect(got.inputs).toEqual([{ name: 'x', datatype: '', shape: ['2', '5'], parameters: {}, contents: null }]);
    expect(got).toEqual(declared.requestDeserialize(bytes));
  });

  it('views the raw input bytes in the received message instead of copying them', () => {
    const bytes = encodeRequest({ inputs: [{ name: 'a', datatype: 'UINT8', shape: ['4'] }], raw_input_contents: [Buffer.from([1, 2, 3, 4])] });
    const raw = decodeModelInferRequest(bytes).raw_input_contents[0]!;
    expect([...raw]).toEqual([1, 2, 3, 4]);
    expect(raw.buffer).toBe(bytes.buffer);
  });

  it('refuses a truncated message', () => {
    const bytes = encodeRequest({ model_name: 'online-model', raw_input_contents: [Buffer.alloc(64)] });
    expect(() => decodeModelInferRequest(bytes.subarray(0, bytes.length - 10))).toThrow(RangeError);
  });
});

describe('encodeModelInferResponse', () => {
  it('writes what proto-loader reads back', () => {
    const res = {
      model_name: 'online-model',
      model_version: '12',
      id: 'req-7',
      outputs: [
        { name: 'prediction', datatype: 'FP32', shape: [2, 1] },
        { name: 'embedding', datatype: 'FP32', shape: [2, 64] },
        { name: 'scalar', datatype: 'INT64', shape: [] },
      ],
      raw_output_contents: [new Uint8Array(new Float32Array([0.25, -1]).buffer), new Uint8Array(512).fill(3), new Uint8Array(8)],
    };
    const back = declared.responseDeserialize(encodeModelInferResponse(res)) as Record<string, unknown>;
    expect(back).toMatchObject({
      model_name: 'online-model',
      model_version: '12',
      id: 'req-7',
      outputs: [
        { name: 'prediction', datatype: 'FP32', shape: ['2', '1'], contents: null },
        { name: 'embedding', datatype: 'FP32', shape: ['2', '64'] },
        { name: 'scalar', datatype: 'INT64', shape: [] },
      ],
    });
    const raw = back.raw_output_contents as Buffer[];
    expect(raw.map((b) => [...b])).toEqual(res.raw_output_contents.map((b) => [...b]));
  });

  it('leaves an empty id out, as proto3 leaves default fields out', () => {
    const bytes = encodeModelInferResponse({ model_name: 'm', model_version: '1', id: '', outputs: [], raw_output_contents: [] });
    expect([...bytes]).toEqual([0x0a, 0x01, 0x6d, 0x12, 0x01, 0x31]);
  });
});
