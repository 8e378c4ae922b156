/**
 * Inference responses as Triton writes them in JSON:
 * `{"model_name", "model_version", "id"?, "outputs": [{"name", "datatype", "shape", "data"}]}`, data flat
 * and row-major. Built as a string directly: typed arrays are joined natively, never boxed one element
 * at a time, which is most of the cost of `JSON.stringify` on large outputs.
 *
 * FP32 values print as the shortest decimal of their float64 value (what Triton's JSON writer prints for
 * a float widened to double). NaN and ±Infinity have no JSON form and are written as null.
 */
import { encodeBinaryTensor } from './binary.js';
import type { HostTensor } from './datatypes.js';

/** A response body: JSON alone, or (binary tensor extension) the JSON header followed by tensor bytes. */
export type EncodedResponse = { json: string; binary?: undefined } | { json: string; binary: Uint8Array[]; headerLength: number; length: number };

const NO_BINARY: ReadonlySet<string> = new Set();

/**
 * The response to an inference request. Outputs named in `binaryOutputs` go after the JSON as binary
 * tensor data (`"parameters":{"binary_data_size":N}` in place of `"data"`), in the order of the JSON.
 */
export function encodeInferResponse(
  modelName: string,
  version: number,
  id: string | undefined,
  outputs: ReadonlyMap<string, HostTensor>,
  binaryOutputs: ReadonlySet<string> = NO_BINARY,
): EncodedResponse {
  let s = `{"model_name":${JSON.stringify(modelName)},"model_version":"${version}"`;
  if (id !== undefined) s += `,"id":${JSON.stringify(id)}`;
  s += ',"outputs":[';
  let first = true;
  const binary: Uint8Array[] = [];
  let length = 0;
  for (const [name, t] of outputs) {
    if (!first) s += ',';
    first = false;
    s += `{"name":${JSON.stringify(name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}],`;
    if (binaryOutputs.has(name)) {
      const bytes = encodeBinaryTensor(t);
      binary.push(bytes);
      length += bytes.length;
      s += `"parameters":{"binary_data_size":${bytes.length}}}`;
    } else {
      s += `"data":[${encodeData(t)}]}`;
    }
  }
  s += ']}';
  if (binary.length === 0) return { json: s };
  const headerLength = Buffer.byteLength(s);
  return { json: s, binary, headerLength, length: headerLength + length };
}

function encodeData(t: HostTensor): string {
  const d = t.data;
  if (Array.isArray(d)) return d.map((v) => JSON.stringify(v)).join(',');
  if (t.datatype === 'BOOL') return Array.from(d as Uint8Array, (v) => (v ? 'true' : 'false')).join(',');
  if (t.datatype === 'FP32' || t.datatype === 'FP64') {
    const f = d as Float32Array;
    for (let i = 0; i < f.length; i++) {
      if (!Number.isFinite(f[i]!)) return Array.from(f, (v) => (Number.isFinite(v) ? String(v) : 'null')).join(',');
    }
  }
  // TypedArray.prototype.join: native, and exact for BigInt64Array.
  return (d as Float32Array).join(',');
}
