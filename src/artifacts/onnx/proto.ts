/**
 * The ONNX protobuf messages, from `onnx.proto` read with protobufjs (see
 * `artifacts/onnx/onnx_schema.ts`), plus the int64 helpers the builder needs.
 */
export { onnx, type ModelProto, type IModelProto, type IGraphProto, type INodeProto, type ITensorProto, type IValueInfoProto, type IAttributeProto } from './onnx_schema.js';

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
  // The Int64 field type admits it; protobufjs' writer reads only low/high (LongBits.from).
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
