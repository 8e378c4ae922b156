/**
 * Inference responses as Triton writes them in JSON:
 * `{"model_name", "model_version", "id"?, "outputs": [{"name", "datatype", "shape", "data"}]}`, data flat
 * and row-major. Built as a string directly: typed arrays are joined natively, never boxed one element
 * at a time, which is most of the cost of `JSON.stringify` on large outputs.
 *
 * FP32 values print as the shortest decimal of their float64 value (what Triton's JSON writer prints for
 * a float widened to double). NaN and ±Infinity have no JSON form and are written as null.
 */
import type { HostTensor } from './datatypes.js';

export function encodeInferResponse(modelName: string, version: number, id: string | undefined, outputs: ReadonlyMap<string, HostTensor>): string {
  let s = `{"model_name":${JSON.stringify(modelName)},"model_version":"${version}"`;
  if (id !== undefined) s += `,"id":${JSON.stringify(id)}`;
  s += ',"outputs":[';
  let first = true;
  for (const [name, t] of outputs) {
    if (!first) s += ',';
    first = false;
    s += `{"name":${JSON.stringify(name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}],"data":[${encodeData(t)}]}`;
  }
  return `${s}]}`;
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
