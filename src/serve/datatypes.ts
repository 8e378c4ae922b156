/**
 * Tensor element types as the three parties name them: Triton's `config.pbtxt` (`TYPE_FP32`), the KServe
 * V2 protocol (`FP32`) and onnxruntime (`float32`), with the JS array that holds each one's elements.
 *
 * gnnctl serves the types its exports use and the common numeric ones. FP16 and BF16 are left out: JSON
 * carries them as numbers, and converting them to half-precision bits here would be code no export needs.
 */
import type { TritonDataType } from '../artifacts/triton/pbtxt.js';

/** KServe V2 / Triton datatype names, as they appear in requests, responses and model metadata. */
export type V2Datatype = 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP32' | 'FP64' | 'BYTES';

/** onnxruntime-node tensor types gnnctl serve uses. */
export type OrtType = 'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64' | 'float32' | 'float64' | 'string';

/** Elements of one tensor, row-major. BOOL is a Uint8Array of 0/1 (what onnxruntime-node takes). */
export type TensorValues =
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | string[];

/** A tensor in the server: elements and full shape (batch dimension first when the model batches). */
export interface HostTensor {
  datatype: V2Datatype;
  data: TensorValues;
  shape: number[];
}

interface TypeInfo {
  triton: TritonDataType;
  ort: OrtType;
  /** Allocates `n` elements filled with the type's zero. */
  alloc(n: number): TensorValues;
}

const INFO: Record<V2Datatype, TypeInfo> = {
  BOOL: { triton: 'TYPE_BOOL', ort: 'bool', alloc: (n) => new Uint8Array(n) },
  UINT8: { triton: 'TYPE_UINT8', ort: 'uint8', alloc: (n) => new Uint8Array(n) },
  UINT16: { triton: 'TYPE_UINT16', ort: 'uint16', alloc: (n) => new Uint16Array(n) },
  UINT32: { triton: 'TYPE_UINT32', ort: 'uint32', alloc: (n) => new Uint32Array(n) },
  UINT64: { triton: 'TYPE_UINT64', ort: 'uint64', alloc: (n) => new BigUint64Array(n) },
  INT8: { triton: 'TYPE_INT8', ort: 'int8', alloc: (n) => new Int8Array(n) },
  INT16: { triton: 'TYPE_INT16', ort: 'int16', alloc: (n) => new Int16Array(n) },
  INT32: { triton: 'TYPE_INT32', ort: 'int32', alloc: (n) => new Int32Array(n) },
  INT64: { triton: 'TYPE_INT64', ort: 'int64', alloc: (n) => new BigInt64Array(n) },
  FP32: { triton: 'TYPE_FP32', ort: 'float32', alloc: (n) => new Float32Array(n) },
  FP64: { triton: 'TYPE_FP64', ort: 'float64', alloc: (n) => new Float64Array(n) },
  BYTES: { triton: 'TYPE_STRING', ort: 'string', alloc: (n) => new Array<string>(n).fill('') },
};

const FROM_TRITON = new Map<string, V2Datatype>(Object.entries(INFO).map(([v2, i]) => [i.triton, v2 as V2Datatype]));
const FROM_ORT = new Map<string, V2Datatype>(Object.entries(INFO).map(([v2, i]) => [i.ort, v2 as V2Datatype]));

export const V2_DATATYPES = Object.keys(INFO) as V2Datatype[];

/** `TYPE_FP32` → `FP32`; undefined for types gnnctl serve does not handle (FP16, BF16, INVALID). */
export function v2FromTriton(t: string): V2Datatype | undefined {
  return FROM_TRITON.get(t);
}

/** onnxruntime's `float32` → `FP32`; undefined for types gnnctl serve does not handle. */
export function v2FromOrt(t: string): V2Datatype | undefined {
  return FROM_ORT.get(t);
}

export function ortType(d: V2Datatype): OrtType {
  return INFO[d].ort;
}

/** `n` elements of type `d`, each equal to `fill` (the type's zero when omitted). */
export function allocValues(d: V2Datatype, n: number, fill?: PadValue): TensorValues {
  const out = INFO[d].alloc(n);
  if (fill !== undefined && !isZero(fill)) (out as { fill(v: unknown): unknown }).fill(d === 'BOOL' ? (fill ? 1 : 0) : fill);
  return out;
}

/** A scalar of a tensor's element type: the value a variable dimension is padded with. */
export type PadValue = number | bigint | string | boolean;

function isZero(v: PadValue): boolean {
  return v === 0 || v === 0n || v === '' || v === false;
}

const INT_RANGES: Partial<Record<V2Datatype, [number, number]>> = {
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 4294967295],
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-2147483648, 2147483647],
};

export const INT64_RANGE: [bigint, bigint] = [-(2n ** 63n), 2n ** 63n - 1n];
export const UINT64_RANGE: [bigint, bigint] = [0n, 2n ** 64n - 1n];

/** The integer range of a fixed-width integer type (not the 64-bit ones). */
export function intRange(d: V2Datatype): [number, number] | undefined {
  return INT_RANGES[d];
}

/**
 * Parses the text of a `pad_value:<input>` parameter as a scalar of type `d`. Returns an error message
 * instead when the text is not a value of that type.
 */
export function parseScalar(d: V2Datatype, text: string): PadValue | string {
  const t = text.trim();
  switch (d) {
    case 'BYTES':
      return text;
    case 'BOOL':
      if (t === 'true' || t === '1') return true;
      if (t === 'false' || t === '0') return false;
      return `expected true or false`;
    case 'FP32':
    case 'FP64': {
      const lower = t.toLowerCase();
      if (lower === 'nan') return NaN;
      if (lower === 'inf' || lower === '+inf' || lower === 'infinity') return Infinity;
      if (lower === '-inf' || lower === '-infinity') return -Infinity;
      const v = Number(t);
      return t !== '' && Number.isFinite(v) ? v : `expected a number`;
    }
    case 'INT64':
    case 'UINT64': {
      if (!/^-?\d+$/.test(t)) return `expected an integer`;
      const v = BigInt(t);
      const [lo, hi] = d === 'INT64' ? INT64_RANGE : UINT64_RANGE;
      return v < lo || v > hi ? `${t} is out of range for ${d}` : v;
    }
    default: {
      if (!/^-?\d+$/.test(t)) return `expected an integer`;
      const v = Number(t);
      const [lo, hi] = INT_RANGES[d]!;
      return v < lo || v > hi ? `${t} is out of range for ${d}` : v;
    }
  }
}
