/**
 * Node attributes. JavaScript numbers cannot say whether `1` is an int or a float, and ONNX rejects
 * an attribute of the wrong kind, so every attribute is built with an explicit constructor:
 * `{ axis: attr.int(-1), alpha: attr.float(0.2), keys_strings: attr.strings(vocab) }`.
 */
import { assertUnreachable } from '../../core/errors.js';
import { onnx, int64, type IAttributeProto } from './proto.js';
import { makeTensorProto, type TensorSpec } from './tensor.js';

export type AttributeValue =
  | { kind: 'int'; value: number | bigint }
  | { kind: 'float'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'tensor'; value: TensorSpec }
  | { kind: 'ints'; value: readonly (number | bigint)[] | BigInt64Array }
  | { kind: 'floats'; value: readonly number[] | Float32Array }
  | { kind: 'strings'; value: readonly string[] }
  | { kind: 'tensors'; value: readonly TensorSpec[] };

export const attr = {
  /** INT (int64): integers beyond 2^53 as bigint. */
  int: (value: number | bigint): AttributeValue => ({ kind: 'int', value }),
  /** FLOAT (stored as float32 by ONNX). */
  float: (value: number): AttributeValue => ({ kind: 'float', value }),
  string: (value: string): AttributeValue => ({ kind: 'string', value }),
  tensor: (value: TensorSpec): AttributeValue => ({ kind: 'tensor', value }),
  ints: (value: readonly (number | bigint)[] | BigInt64Array): AttributeValue => ({ kind: 'ints', value }),
  floats: (value: readonly number[] | Float32Array): AttributeValue => ({ kind: 'floats', value }),
  strings: (value: readonly string[]): AttributeValue => ({ kind: 'strings', value }),
  tensors: (value: readonly TensorSpec[]): AttributeValue => ({ kind: 'tensors', value }),
} as const;

const T = onnx.AttributeProto.AttributeType;

export function makeAttributeProto(name: string, a: AttributeValue): IAttributeProto {
  const enc = new TextEncoder();
  switch (a.kind) {
    case 'int':
      return { name, type: T.INT, i: int64(a.value) };
    case 'float':
      return { name, type: T.FLOAT, f: a.value };
    case 'string':
      return { name, type: T.STRING, s: enc.encode(a.value) };
    case 'tensor':
      return { name, type: T.TENSOR, t: makeTensorProto('', a.value) };
    case 'ints':
      return { name, type: T.INTS, ints: Array.from(a.value, (v) => int64(v)) };
    case 'floats':
      return { name, type: T.FLOATS, floats: Array.from(a.value) };
    case 'strings':
      return { name, type: T.STRINGS, strings: a.value.map((s) => enc.encode(s)) };
    case 'tensors':
      return { name, type: T.TENSORS, tensors: a.value.map((t) => makeTensorProto('', t)) };
    default:
      return assertUnreachable(a);
  }
}
