import protobuf from 'protobufjs';
import textformat from 'protobufjs/ext/textformat.js';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.js';
import { MODEL_CONFIG_PROTO } from '../../../src/artifacts/triton/model_config_proto.generated.js';
import { parseModelConfig, writeModelConfig } from '../../../src/artifacts/triton/pbtxt.js';

/** An independent load of the schema (not through src/artifacts/triton/schema.ts). */
function upstreamType(): protobuf.Type {
  const root = protobuf.parse(MODEL_CONFIG_PROTO, { keepCase: true }).root;
  root.resolveAll();
  return root.lookupType('inference.ModelConfig');
}

const SIGNED = new Set(['int32', 'sint32', 'sfixed32', 'int64', 'sint64', 'sfixed64']);

/** A non-default text-format value for a scalar or enum (a default would be indistinguishable from unset). */
function scalarText(type: string, resolved: protobuf.ReflectionObject | null, name: string): string {
  if (resolved instanceof protobuf.Enum) return Object.keys(resolved.values).at(-1)!; // by name, the last value
  if (type === 'string' || type === 'bytes') return JSON.stringify(`${name} é"\\`);
  if (type === 'bool') return 'true';
  if (type === 'float' || type === 'double') return '1.5';
  return SIGNED.has(type) ? '-7' : '7';
}

/**
 * config.pbtxt text that sets every field of `type` once, recursively (repeated fields with two
 * values, maps with one entry). A oneof can hold one member per message, so `variant` picks which
 * (member `variant % n`); oneofs have 2 or 3 members, so variants 0..5 together set every field of
 * the schema, nested oneofs included. `covered` collects the full names of the fields set.
 */
function fixture(type: protobuf.Type, variant: number, covered: Set<string>, indent = ''): string {
  const lines: string[] = [];
  for (const f of type.fieldsArray) {
    f.resolve();
    if (f.partOf) {
      const members = f.partOf.fieldsArray;
      if (members[variant % members.length] !== f) continue;
    }
    covered.add(f.fullName);
    if (f instanceof protobuf.MapField) {
      const key = f.keyType === 'string' ? '"k"' : '3';
      const value = f.resolvedType instanceof protobuf.Type ? `value {\n${fixture(f.resolvedType, variant, covered, `${indent}    `)}${indent}  }` : `value: ${scalarText(f.type, f.resolvedType, f.name)}`;
      lines.push(`${indent}${f.name} {\n${indent}  key: ${key}\n${indent}  ${value}\n${indent}}`);
    } else if (f.resolvedType instanceof protobuf.Type) {
      const body = fixture(f.resolvedType, variant, covered, `${indent}  `);
      lines.push(`${indent}${f.name} {\n${body}${indent}}`);
    } else {
      const v = scalarText(f.type, f.resolvedType, f.name);
      lines.push(f.repeated ? `${indent}${f.name}: [ ${v}, ${v} ]` : `${indent}${f.name}: ${v}`);
    }
  }
  return lines.map((l) => `${l}\n`).join('');
}

/** Full names of every field reachable from `type`. */
function allFields(type: protobuf.Type, out = new Set<string>(), seen = new Set<protobuf.Type>()): Set<string> {
  if (seen.has(type)) return out;
  seen.add(type);
  for (const f of type.fieldsArray) {
    f.resolve();
    out.add(f.fullName);
    if (f.resolvedType instanceof protobuf.Type) allFields(f.resolvedType, out, seen);
  }
  return out;
}

describe("Triton's upstream model_config.proto", () => {
  const type = upstreamType();
  const covered = new Set<string>();
  const VARIANTS = [0, 1, 2, 3, 4, 5];
  const fixtures = VARIANTS.map((v) => fixture(type, v, covered));
  /** The message a config object encodes (proto3: a field at its default value is not distinguishable from unset). */
  const canonical = (c: object) => type.toObject(type.fromObject(c), { enums: String, longs: Number });

  it('the fixtures set every field of the schema, all messages and oneof members included', () => {
    const all = allFields(type);
    expect(all.size).toBeGreaterThan(150);
    expect([...all].filter((f) => !covered.has(f))).toEqual([]);
    expect(fixtures[2]).toContain('ensemble_scheduling {');
    expect(fixtures[2]).toContain('max_inflight_requests: 7');
  });

  it.each(VARIANTS)('variant %i parses, equals what protobufjs reads, and round-trips through the writer', (variant) => {
    const text = fixtures[variant]!;
    const cfg = parseModelConfig(text);
    const independent = type.toObject(textformat.fromText(type, text), { enums: String, longs: Number, defaults: false, arrays: false, objects: false });
    // parseModelConfig adds defaults for a few fields callers read; every value here is non-default.
    expect(cfg).toEqual(independent);
    const written = writeModelConfig(cfg);
    // Single-valued enums (BatchOutput.Kind) can only hold their default, which the writer leaves out.
    expect(canonical(parseModelConfig(written))).toEqual(canonical(cfg));
    expect(writeModelConfig(parseModelConfig(written))).toBe(written);
  });

  it('fixtures hold what they say: strings with escapes, negative and 64-bit integers, enums by name, maps', () => {
    const cfg = parseModelConfig(fixtures[2]!);
    expect(cfg.name).toBe('name é"\\');
    expect(cfg.max_batch_size).toBe(-7);
    expect(cfg.input![0]!.dims).toEqual([-7, -7]);
    expect(cfg.input![0]!.data_type).toBe('TYPE_BF16');
    expect(cfg.dynamic_batching).toBeUndefined();
    expect(cfg.ensemble_scheduling!.step![0]!.input_map).toEqual({ k: 'input_map é"\\' });
    expect(cfg.version_policy).toEqual({ specific: { versions: [-7, -7] } });
    const dyn = parseModelConfig(fixtures[0]!).dynamic_batching!;
    expect(dyn.priority_queue_policy).toEqual({ 3: { timeout_action: 'DELAY', default_timeout_microseconds: 7, allow_timeout_override: true, max_queue_size: 7 } });
  });

  it('ModelEnsembling.max_inflight_requests is accepted; the old hand-copied max_inflight_responses is not', () => {
    const cfg = parseModelConfig('platform: "ensemble"\nensemble_scheduling {\n  step { model_name: "a" model_version: -1 }\n  max_inflight_requests: 16\n}\n');
    expect(cfg.ensemble_scheduling).toEqual({ step: [{ model_name: 'a', model_version: -1 }], max_inflight_requests: 16 });
    expect(writeModelConfig(cfg)).toContain('  max_inflight_requests: 16\n');
    let err: unknown;
    try {
      parseModelConfig('ensemble_scheduling {\n  max_inflight_responses: 16\n}\n', { file: 'repo/ens/config.pbtxt' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).where).toBe('repo/ens/config.pbtxt');
    expect((err as ConfigError).problems).toEqual([
      {
        path: 'ensemble_scheduling.max_inflight_responses',
        message: 'unknown field "max_inflight_responses" in ModelEnsembling',
        line: 2,
        col: 3,
        hint: 'did you mean "max_inflight_requests"?',
      },
    ]);
  });

  it('bad values deep in upstream-only messages name the field path, line and column', () => {
    const text = ['sequence_batching {', '  state {', '    initial_state { data_type: TYPE_FP99 zero_data: 2 }', '  }', '}'].join('\n');
    let err: ConfigError | undefined;
    try {
      parseModelConfig(text);
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err?.problems).toMatchObject([
      { path: 'sequence_batching.state[0].initial_state[0].data_type', line: 3, col: 32, hint: expect.stringMatching(/did you mean "TYPE_FP16" or "TYPE_FP32" or "TYPE_FP64"/) },
      { path: 'sequence_batching.state[0].initial_state[0].zero_data', line: 3, col: 53, message: expect.stringMatching(/expected true or false/) },
    ]);
  });
});
