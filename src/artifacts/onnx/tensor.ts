/**
 * TensorProto construction from typed arrays, shared by initializers and tensor attributes.
 */
import { endianness } from 'node:os';
import { ElemType, elemByteSize, elemTypeOf, numElements, type TensorData } from './types.js';
import { int64, type ITensorProto } from './proto.js';

/** A tensor as the caller describes it: payload, dims and (optionally) an element type override. */
export interface TensorSpec {
  data: TensorData;
  dims: readonly number[];
  /** Needed only for BOOL stored in a Uint8Array (or to label an empty plain array). */
  elemType?: ElemType;
}

/**
 * Builds a TensorProto. Fixed-size types are stored as little-endian `raw_data` (compact, and the
 * form ONNX external data requires); strings go to `string_data` as UTF-8, since ONNX has no raw
 * encoding for them.
 */
export function makeTensorProto(name: string, spec: TensorSpec, docString?: string): ITensorProto {
  const elemType = spec.elemType ?? elemTypeOf(spec.data);
  const n = numElements(spec.dims);
  if (spec.data.length !== n) {
    throw new RangeError(`tensor "${name}": ${spec.data.length} values do not fill dims [${spec.dims.join(', ')}] (${n} elements)`);
  }
  const base: ITensorProto = { name, dims: spec.dims.map((d) => int64(d)), dataType: ElemType[elemType] };
  if (docString) base.docString = docString;
  if (elemType === 'STRING') {
    if (!Array.isArray(spec.data) || spec.data.some((s) => typeof s !== 'string')) {
      throw new TypeError(`tensor "${name}": STRING data must be a string[]`);
    }
    const enc = new TextEncoder();
    return { ...base, stringData: (spec.data as readonly string[]).map((s) => enc.encode(s)) };
  }
  return { ...base, rawData: rawBytes(name, spec.data, elemType) };
}

/** Little-endian bytes of a fixed-size tensor; a view (no copy) for typed arrays. */
export function rawBytes(name: string, data: TensorData, elemType: ElemType): Uint8Array {
  if (endianness() !== 'LE') {
    // ONNX raw_data is little-endian; every platform onnxruntime-node ships for is LE.
    throw new Error('gnnctl writes ONNX raw tensor data only on little-endian hosts');
  }
  if (Array.isArray(data)) {
    if (elemType !== 'BOOL' || data.some((v) => typeof v !== 'boolean')) {
      throw new TypeError(`tensor "${name}": a plain array must hold strings (STRING) or booleans (BOOL)`);
    }
    return Uint8Array.from(data as readonly boolean[], (b) => (b ? 1 : 0));
  }
  const view = data as Exclude<TensorData, readonly string[] | readonly boolean[]>;
  const implied = elemTypeOf(view);
  const compatible = implied === elemType || (implied === 'UINT8' && elemType === 'BOOL') || (implied === 'UINT16' && elemType === 'FLOAT16');
  if (!compatible) {
    throw new TypeError(`tensor "${name}": a ${view.constructor.name} cannot hold ${elemType} values`);
  }
  if (elemByteSize(elemType) !== view.BYTES_PER_ELEMENT) throw new Error(`tensor "${name}": element size mismatch`);
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}
