/**
 * Checks a model-config object (typed in code, or read from JSON) against the protobufjs reflection of
 * `inference.ModelConfig` before it is written: protobufjs' `fromObject` converts leniently (a string
 * `"2"` becomes 2, an unknown enum name or an unknown key silently vanishes), and a config.pbtxt that
 * says something other than what the caller meant is worse than an error naming the field.
 */
import type protobuf from 'protobufjs';
import { formatValue, suggest, type ConfigProblem } from '../../core/errors.js';
import { fieldNames, fieldOf, integerProblem, isIntegerType, slotLabel, slotOf, type Slot } from './schema.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every problem of `obj` as an instance of `type`, with dotted paths (`input[0].data_type`). */
export function checkMessageObject(type: protobuf.Type, obj: Obj, path = ''): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const oneofSet = new Map<string, string>();
  for (const [key, v] of Object.entries(obj)) {
    if (v === undefined || v === null) continue;
    const p = path ? `${path}.${key}` : key;
    const field = fieldOf(type, key);
    if (!field) {
      problems.push({ path: p, message: `unknown field "${key}" in ${type.name}; ${suggest(key, fieldNames(type))}` });
      continue;
    }
    const slot = slotOf(field);
    if (slot.oneof) {
      const other = oneofSet.get(slot.oneof);
      if (other) problems.push({ path: p, message: `"${key}" and "${other}" are both set, but they belong to the oneof "${slot.oneof}"` });
      oneofSet.set(slot.oneof, key);
    }
    if (slot.map) {
      if (!isObject(v)) problems.push({ path: p, message: `expected an object (${slotLabel(slot)})`, hint: `got ${formatValue(v)}` });
      else for (const [k, item] of Object.entries(v)) {
        const kp = `${p}[${JSON.stringify(k)}]`;
        if (slot.map.key.scalar !== 'string') problems.push(...checkValue(slot.map.key, /^-?\d+$/.test(k) ? Number(k) : k, kp));
        if (item !== undefined) problems.push(...checkValue(slot.map.value, item, kp));
      }
    } else if (slot.repeated) {
      if (!Array.isArray(v)) problems.push({ path: p, message: `expected a list for repeated field "${key}"`, hint: `got ${formatValue(v)}` });
      else v.forEach((item, i) => problems.push(...checkValue(slot, item, `${p}[${i}]`)));
    } else {
      problems.push(...checkValue(slot, v, p));
    }
  }
  return problems;
}

function checkValue(slot: Slot, v: unknown, path: string): ConfigProblem[] {
  const bad = (what: string): ConfigProblem[] => [{ path, message: `expected ${what} for ${slot.name}`, hint: `got ${formatValue(v)}` }];
  if (slot.message) return isObject(v) ? checkMessageObject(slot.message, v, path) : bad(`a ${slot.message.name} object`);
  if (slot.enumType) {
    const e = slot.enumType;
    if ((typeof v === 'string' && Object.hasOwn(e.values, v)) || (typeof v === 'number' && e.valuesById[v] !== undefined)) return [];
    return [{ path, message: `invalid value ${formatValue(v)} for enum ${e.name}`, hint: suggest(String(v), Object.keys(e.values)) }];
  }
  const t = slot.scalar!;
  if (t === 'string' || t === 'bytes') return typeof v === 'string' ? [] : bad('a string');
  if (t === 'bool') return typeof v === 'boolean' ? [] : bad('true or false');
  if (t === 'float' || t === 'double') return typeof v === 'number' ? [] : bad('a number');
  if (!isIntegerType(t)) return [];
  if (typeof v !== 'number' || !Number.isInteger(v)) return bad(`an integer (${t})`);
  const problem = integerProblem(BigInt(v), t);
  return problem ? [{ path, message: problem }] : [];
}
