/**
 * Element types, shapes and tensor payloads as the ONNX builder takes them from TypeScript.
 */
import { assertUnreachable } from '../../core/errors.js';

/** ONNX tensor element types: `TensorProto.DataType` names and numbers. */
export const ElemType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
} as const;
export type ElemType = keyof typeof ElemType;

/**
 * One dimension of a declared shape: a fixed size, a symbolic name (`'batch'`, `'seq'`: ONNX `dim_param`,
 * ORT accepts any size and checks that equal names get equal sizes), or `null` for an unnamed free dim.
 */
export type Dim = number | string | null;

/**
 * Tensor payloads. The element type follows from the array type; `Uint8Array` is UINT8 unless the
 * caller says BOOL, and `boolean[]` is BOOL.
 */
export type TensorData =
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
  | readonly string[]
  | readonly boolean[];

/** The element type an array type implies (see {@link TensorData}). */
export function elemTypeOf(data: TensorData): ElemType {
  if (data instanceof Float32Array) return 'FLOAT';
  if (data instanceof Float64Array) return 'DOUBLE';
  if (data instanceof BigInt64Array) return 'INT64';
  if (data instanceof BigUint64Array) return 'UINT64';
  if (data instanceof Int32Array) return 'INT32';
  if (data instanceof Int16Array) return 'INT16';
  if (data instanceof Int8Array) return 'INT8';
  if (data instanceof Uint8Array) return 'UINT8';
  if (data instanceof Uint16Array) return 'UINT16';
  if (data instanceof Uint32Array) return 'UINT32';
  if (data.length === 0) {
    throw new TypeError('an empty plain array has no element type: pass a typed array or an explicit elemType');
  }
  if (typeof data[0] === 'string') return 'STRING';
  if (typeof data[0] === 'boolean') return 'BOOL';
  throw new TypeError(`unsupported tensor data (got an array of ${typeof data[0]})`);
}

/** Bytes per element of the fixed-size types (STRING has none). */
export function elemByteSize(t: ElemType): number {
  switch (t) {
    case 'BOOL':
    case 'UINT8':
    case 'INT8':
      return 1;
    case 'UINT16':
    case 'INT16':
    case 'FLOAT16':
      return 2;
    case 'FLOAT':
    case 'INT32':
    case 'UINT32':
      return 4;
    case 'DOUBLE':
    case 'INT64':
    case 'UINT64':
      return 8;
    case 'STRING':
      return 0;
    default:
      return assertUnreachable(t);
  }
}

/** Product of fixed dims; throws on negative or non-integer dims. */
export function numElements(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0) throw new RangeError(`tensor dims must be non-negative integers (got [${dims.join(', ')}])`);
    n *= d;
  }
  return n;
}
