/**
 * Triton's `inference.ModelConfig` schema, loaded with protobufjs from `model_config.proto` (the
 * upstream declarations; see docs/triton_model_config.md), plus the few reflection helpers that the
 * text-format reader/writer (`pbtxt.ts`) and the friendly-error layer (`pbtxt_diagnostics.ts`) share.
 *
 * Nothing here restates the schema: field names, numbers, types, enums, maps and oneofs all come from
 * the proto, so a Triton field gnnctl has never heard of is still read, checked and written.
 */
import protobuf from 'protobufjs';
import { MODEL_CONFIG_PROTO } from './model_config_proto.generated.js';

let modelConfig: protobuf.Type | undefined;

/** The `inference.ModelConfig` message type (parsed once; field names kept in snake_case as in config.pbtxt). */
export function modelConfigType(): protobuf.Type {
  if (!modelConfig) {
    const root = protobuf.parse(MODEL_CONFIG_PROTO, { keepCase: true }).root;
    root.resolveAll();
    modelConfig = root.lookupType('inference.ModelConfig');
  }
  return modelConfig;
}

export type IntegerType = 'int32' | 'sint32' | 'sfixed32' | 'uint32' | 'fixed32' | 'int64' | 'sint64' | 'sfixed64' | 'uint64' | 'fixed64';

const INT_RANGES: Record<IntegerType, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

export function isIntegerType(t: string): t is IntegerType {
  return t in INT_RANGES;
}

/**
 * Why an integer does not fit its field, or undefined when it does. 64-bit values must also be safe
 * JavaScript integers: the config object carries them as numbers, and gnnctl refuses rather than rounds.
 */
export function integerProblem(v: bigint, t: IntegerType): string | undefined {
  const [lo, hi] = INT_RANGES[t];
  if (v < lo || v > hi) return `${v} is out of range for ${t} [${lo}, ${hi}]`;
  if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER)) return `${v} is beyond ±2^53, which gnnctl cannot represent exactly`;
  return undefined;
}

/**
 * One value slot of a message as the text format sees it: a field, or the `key` / `value` of a map
 * entry (protobufjs reflects a map as one MapField; text format spells it as repeated entry messages).
 */
export interface Slot {
  name: string;
  /** Scalar type name (`int64`, `string`, …) for scalars; the message or enum otherwise. */
  scalar?: string;
  enumType?: protobuf.Enum;
  message?: protobuf.Type;
  repeated: boolean;
  /** For a map field: the entry's key and value slots. */
  map?: { key: Slot; value: Slot };
  oneof?: string;
}

const slotCache = new WeakMap<protobuf.Field, Slot>();

export function slotOf(field: protobuf.Field): Slot {
  const hit = slotCache.get(field);
  if (hit) return hit;
  field.resolve();
  let slot: Slot;
  if (field instanceof protobuf.MapField) {
    const key: Slot = { name: 'key', scalar: field.keyType, repeated: false };
    const value = valueSlot('value', field.type, field.resolvedType);
    slot = { name: field.name, repeated: true, map: { key, value } };
  } else {
    slot = { ...valueSlot(field.name, field.type, field.resolvedType), repeated: field.repeated };
    if (field.partOf) slot.oneof = field.partOf.name;
  }
  slotCache.set(field, slot);
  return slot;
}

function valueSlot(name: string, type: string, resolved: protobuf.Type | protobuf.Enum | null): Slot {
  if (resolved instanceof protobuf.Enum) return { name, enumType: resolved, repeated: false };
  if (resolved instanceof protobuf.Type) return { name, message: resolved, repeated: false };
  return { name, scalar: type, repeated: false };
}

/** The field named `name` of `type` (own fields only: `constructor` is not a field). */
export function fieldOf(type: protobuf.Type, name: string): protobuf.Field | undefined {
  return Object.hasOwn(type.fields, name) ? type.fields[name] : undefined;
}

export function fieldNames(type: protobuf.Type): string[] {
  return type.fieldsArray.map((f) => f.name);
}

/** `message ModelInput`, `enum DataType`, `int32`, `map<string, message ModelParameter>`: for messages. */
export function slotLabel(s: Slot): string {
  if (s.map) return `map<${s.map.key.scalar}, ${slotLabel(s.map.value)}>`;
  if (s.enumType) return `enum ${s.enumType.name}`;
  if (s.message) return `message ${s.message.name}`;
  return s.scalar!;
}
