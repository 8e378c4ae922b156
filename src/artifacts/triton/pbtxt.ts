/**
 * Reads and writes Triton's `config.pbtxt` with protobufjs: its text-format extension
 * (`protobufjs/ext/textformat`) parses and prints the protobuf text format against Triton's own
 * `model_config.proto` (loaded in `schema.ts`). gnnctl adds only what protobufjs does not do:
 *
 * - errors a person can act on (field path, line and column, every problem at once, "did you mean"),
 *   from `pbtxt_diagnostics.ts` when protobufjs refuses a text;
 * - a strict check of the object before writing (`object_check.ts`), since protobufjs' conversion
 *   from plain objects drops unknown keys and coerces wrong types silently;
 * - the plain-object form callers use (`TritonModelConfig`: enum names, 64-bit integers as numbers).
 */
import textformat from 'protobufjs/ext/textformat.js';
import type protobuf from 'protobufjs';
import { configError, explainTextFormatError } from './pbtxt_diagnostics.js';
import { checkMessageObject } from './object_check.js';
import { fieldOf, isIntegerType, modelConfigType, slotOf, type Slot } from './schema.js';
import type { ProtoMessage, TritonModelConfig } from './model_config.js';

export type * from './model_config.js';

export interface ParseModelConfigOptions {
  /** The file the text came from, named in errors. Default `config.pbtxt`. */
  file?: string;
}

/**
 * Prints a model configuration as protobuf text format, as protobuf's own printer does: fields in
 * field-number order, one `name: value` line per scalar (repeated fields repeat the line), one
 * `name { … }` block per message and per map entry (map entries sorted by key), two-space indentation,
 * enums as bare names, strings double-quoted with C escapes. Throws a ConfigError listing every field
 * the schema does not know or whose value has the wrong type (`cfg` may come from untyped JSON).
 */
export function writeModelConfig(cfg: TritonModelConfig): string {
  const type = modelConfigType();
  const problems = checkMessageObject(type, cfg as ProtoMessage);
  if (problems.length > 0) throw configError('cannot write Triton model config', problems, 'TritonModelConfig');
  const text = textformat.toText(type, type.fromObject(cfg as ProtoMessage));
  return `${text}\n`;
}

/**
 * Parses a `config.pbtxt` into a TritonModelConfig. protobufjs reads the text against the schema
 * (`#` comments; `field: value`, `field { … }`, `field: { … }`, `field < … >`; repeated fields as repeated
 * entries or `[a, b]` lists, also of messages; `,` or `;` after a field; decimal, hex and octal integers,
 * floats with `inf`/`nan`; single- or double-quoted strings with C escapes, adjacent strings joined; enums
 * by name or number; booleans as `true`/`True`/`t`/`1` and the like; map fields as
 * `parameters { key: "x" value: { string_value: "y" } }`).
 *
 * Refused, with a ConfigError whose `problems` carry path, line and column and whose `where` is the
 * file: unknown field names, enum values not in the enum, values of the wrong type or out of range
 * (64-bit integers also beyond 2^53), a non-repeated field set twice or given a list, two members of a
 * oneof, and syntax errors.
 *
 * The result has the fields the text sets (proto3: absent means default), except that every `input`
 * and `output` gets `name`, `data_type` and `dims` (`""`, `TYPE_INVALID`, `[]` when absent) and a
 * `reshape` gets `shape` (`[]`: `reshape: { shape: [ ] }` means "reshape to a scalar"), and every
 * `parameters` entry gets `string_value` (`""`): the writer leaves proto3 defaults out, as protobuf does,
 * and these are the fields callers read without checking.
 */
export function parseModelConfig(text: string, options: ParseModelConfigOptions = {}): TritonModelConfig {
  const file = options.file ?? 'config.pbtxt';
  const type = modelConfigType();
  let message: protobuf.Message;
  try {
    message = textformat.fromText(type, text);
  } catch (e) {
    throw explainTextFormatError(type, text, file, e);
  }
  const obj = type.toObject(message, { enums: String, longs: String, defaults: false, arrays: false, objects: false }) as ProtoMessage;
  // Values protobufjs accepts but the plain-object form cannot carry faithfully (an enum number
  // outside the enum, an int64 beyond 2^53): the diagnostics layer reports where they are.
  if (!toPlain(type, obj)) throw explainTextFormatError(type, text, file);
  for (const io of [...((obj.input as ProtoMessage[] | undefined) ?? []), ...((obj.output as ProtoMessage[] | undefined) ?? [])]) {
    io.name ??= '';
    io.data_type ??= 'TYPE_INVALID';
    io.dims ??= [];
    if (io.reshape && typeof io.reshape === 'object') (io.reshape as ProtoMessage).shape ??= [];
  }
  for (const p of Object.values((obj.parameters as Record<string, ProtoMessage> | undefined) ?? {})) p.string_value ??= '';
  return obj as TritonModelConfig;
}

/** Turns protobufjs' 64-bit strings into numbers, in place; false if a value does not fit the plain form. */
function toPlain(type: protobuf.Type, obj: ProtoMessage): boolean {
  let ok = true;
  const value = (slot: Slot, v: unknown): unknown => {
    if (slot.message) {
      ok = toPlain(slot.message, v as ProtoMessage) && ok;
      return v;
    }
    if (slot.enumType && typeof v === 'number') ok = false;
    if (typeof v === 'string' && slot.scalar && isIntegerType(slot.scalar)) {
      const n = Number(v);
      if (!Number.isSafeInteger(n)) ok = false;
      return n;
    }
    return v;
  };
  for (const [key, v] of Object.entries(obj)) {
    const field = fieldOf(type, key);
    if (!field) continue;
    const slot = slotOf(field);
    if (slot.map) {
      const map = v as ProtoMessage;
      for (const k of Object.keys(map)) map[k] = value(slot.map.value, map[k]);
    } else if (slot.repeated) {
      obj[key] = (v as unknown[]).map((item) => value(slot, item));
    } else {
      obj[key] = value(slot, v);
    }
  }
  return ok;
}
