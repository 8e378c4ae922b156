/**
 * The ONNX protobuf classes (`onnx-proto`, generated from ONNX 1.10's `onnx.proto`, protobufjs 6).
 *
 * `onnx-proto` is CommonJS with `module.exports = $root`, so Node's ESM loader exposes it only as a
 * default export: importing `{ onnx }` by name would type-check but fail at run time.
 */
import onnxProto from 'onnx-proto';

export const onnx = onnxProto.onnx;
export type ModelProto = import('onnx-proto').onnx.ModelProto;
export type IModelProto = import('onnx-proto').onnx.IModelProto;
export type IGraphProto = import('onnx-proto').onnx.IGraphProto;
export type INodeProto = import('onnx-proto').onnx.INodeProto;
export type ITensorProto = import('onnx-proto').onnx.ITensorProto;
export type IValueInfoProto = import('onnx-proto').onnx.IValueInfoProto;
export type IAttributeProto = import('onnx-proto').onnx.IAttributeProto;

/**
 * The structural type protobufjs accepts for an int64 field (it reads `.low` / `.high`, like a `Long`).
 * We build it ourselves from a bigint so that values beyond 2^53 (int64 keys, INT64_MIN) stay exact
 * without importing the `long` package, which gnnctl does not depend on directly.
 */
export interface LongLike {
  low: number;
  high: number;
  unsigned: boolean;
}

/** An int64 for a protobuf field: a plain number when it is a safe integer, else exact low/high words. */
export function int64(v: number | bigint): number {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new RangeError(`int64 value must be a safe integer (got ${v})`);
    return v;
  }
  if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  const u = BigInt.asUintN(64, v);
  const long: LongLike = { low: Number(u & 0xffffffffn) | 0, high: Number(u >> 32n) | 0, unsigned: false };
  // protobufjs' typings say `number | Long`; its writer only reads low/high (LongBits.from).
  return long as unknown as number;
}

/** Reads an int64 protobuf field back (number, or a Long from protobufjs when `long` is installed). */
export function int64ToBigInt(v: unknown): bigint {
  if (typeof v === 'number') return BigInt(v);
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string') return BigInt(v);
  if (v && typeof v === 'object' && 'low' in v && 'high' in v) {
    const { low, high } = v as { low: number; high: number };
    return BigInt.asIntN(64, (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0));
  }
  throw new TypeError(`not an int64 value: ${String(v)}`);
}
