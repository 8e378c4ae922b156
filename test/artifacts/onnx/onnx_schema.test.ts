import { describe, expect, it } from 'vitest';
import { onnx, onnxRoot } from '../../../src/artifacts/onnx/onnx_schema.js';

describe('ONNX schema (onnx.proto through protobufjs)', () => {
  it('names enums and fields as onnx-proto did (camelCase), from the IR 10 schema', () => {
    expect(onnx.TensorProto.DataType.FLOAT).toBe(1);
    expect(onnx.TensorProto.DataType.INT4).toBe(22);
    expect(onnx.TensorProto.DataLocation.EXTERNAL).toBe(1);
    expect(onnx.AttributeProto.AttributeType.INTS).toBe(7);
    expect(onnxRoot().lookupEnum('onnx.Version').values.IR_VERSION).toBe(10);
    expect(Object.keys(onnx.ModelProto.type.fields)).toContain('opsetImport');
  });

  it('writes repeated numeric fields packed (as before: no extra byte per element) and reads both encodings', () => {
    const tensor = onnxRoot().lookupType('onnx.TensorProto');
    // dims: field 1, wire type 2 (length-delimited), 2 bytes: 4, 2.
    expect(Buffer.from(tensor.encode({ dims: [4, 2] }).finish()).toString('hex')).toBe('0a020402');
    const attr = onnxRoot().lookupType('onnx.AttributeProto');
    expect(Buffer.from(attr.encode({ ints: [1, 2, 3] }).finish()).toString('hex')).toBe('4203010203');
    // Unpacked (field 1 varint, twice), as ONNX's C++ serializer writes proto2: read the same.
    const unpacked = Uint8Array.from([0x08, 0x04, 0x08, 0x02]);
    expect((tensor.toObject(tensor.decode(unpacked), { longs: Number }) as { dims: number[] }).dims).toEqual([4, 2]);
    // Strings are never packed.
    expect(Buffer.from(attr.encode({ strings: [Uint8Array.of(0x61)] }).finish()).toString('hex')).toBe('4a0161');
  });

  it('round-trips a ModelProto, int64 values beyond 2^53 exact', () => {
    const bytes = onnx.ModelProto.encode({
      irVersion: 8,
      opsetImport: [{ domain: '', version: 17 }],
      graph: { name: 'g', initializer: [{ name: 't', dims: [2], dataType: 7, int64Data: [{ low: 0, high: -2147483648, unsigned: false }, 5] }] },
      metadataProps: [{ key: 'k', value: 'v' }],
    }).finish();
    const model = onnx.ModelProto.decode(bytes);
    expect(onnx.ModelProto.verify(model)).toBeNull();
    const t = model.graph!.initializer![0]!;
    expect(String(t.int64Data![0])).toBe('-9223372036854775808');
    expect(model.metadataProps).toEqual([expect.objectContaining({ key: 'k', value: 'v' })]);
  });
});
