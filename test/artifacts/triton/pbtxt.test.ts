import protobuf from 'protobufjs';
// protobufjs 8 ships its own text-format reader (line numbers only); it serves here as an independent
// check that what gnnctl writes is protobuf text format and that both readers agree on it.
import textformat from 'protobufjs/ext/textformat.js';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.js';
import { MODEL_CONFIG_PROTO } from '../../../src/artifacts/triton/model_config_proto.generated.js';
import { parseModelConfig, writeModelConfig, type TritonModelConfig } from '../../../src/artifacts/triton/pbtxt.js';
import { explainTextFormatError } from '../../../src/artifacts/triton/pbtxt_diagnostics.js';
import { modelConfigType } from '../../../src/artifacts/triton/schema.js';

const RTI = 'transactions.customer_id->customers.customer_id->transactions.customer_id';

/** The config the export stage writes for the distilled model of the bundled retail example. */
const gnnctlConfig: TritonModelConfig = {
  name: 'online-model',
  platform: 'onnxruntime_onnx',
  max_batch_size: 256,
  input: [
    { name: 'anchor_time', data_type: 'TYPE_INT64', dims: [1] },
    { name: 'transactions.customer_id', data_type: 'TYPE_STRING', dims: [1] },
    { name: 'transactions.price', data_type: 'TYPE_FP32', dims: [1] },
    { name: `${RTI}:price`, data_type: 'TYPE_FP32', dims: [-1, 1], allow_ragged_batch: true },
    { name: `${RTI}:t_dat`, data_type: 'TYPE_INT64', dims: [-1, 1] },
  ],
  output: [{ name: 'prediction', data_type: 'TYPE_FP32', dims: [1] }],
  dynamic_batching: { preferred_batch_size: [16, 64], max_queue_delay_microseconds: 500 },
  instance_group: [{ count: 2, kind: 'KIND_CPU' }],
  version_policy: { latest: { num_versions: 2 } },
  parameters: {
    'gnnctl.run_id': { string_value: 'run-2024-03-09' },
    'quote"and\\slash\n': { string_value: 'ünïcode ✓' },
  },
};

function schemaType(): protobuf.Type {
  const root = protobuf.parse(MODEL_CONFIG_PROTO, { keepCase: true }).root;
  root.resolveAll();
  return root.lookupType('inference.ModelConfig');
}

/** Parses with protobufjs' reader and converts to the same plain-object form as parseModelConfig. */
function parseWithProtobufjs(text: string): Record<string, unknown> {
  const type = schemaType();
  const msg = textformat.fromText(type, text);
  return type.toObject(msg, { enums: String, longs: Number, defaults: false, arrays: false, objects: false }) as Record<string, unknown>;
}

function problemsOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('writeModelConfig', () => {
  it("prints protobuf's canonical text format (as protobuf's own printer does)", () => {
    const text = writeModelConfig({
      name: 'm',
      platform: 'onnxruntime_onnx',
      max_batch_size: 8,
      input: [
        { name: 'a', data_type: 'TYPE_FP32', dims: [16] },
        { name: 'b', data_type: 'TYPE_INT64', dims: [-1, 1], reshape: { shape: [] } },
      ],
      output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }],
      dynamic_batching: { preferred_batch_size: [4, 8], max_queue_delay_microseconds: 100 },
      instance_group: [{ count: 1, kind: 'KIND_CPU' }],
      version_policy: { all: {} },
      parameters: { k: { string_value: 'v' } },
    });
    // Field-number order, repeated fields as repeated lines/blocks, maps as entry blocks.
    expect(text).toBe(
      [
        'name: "m"',
        'platform: "onnxruntime_onnx"',
        'version_policy {',
        '  all {',
        '  }',
        '}',
        'max_batch_size: 8',
        'input {',
        '  name: "a"',
        '  data_type: TYPE_FP32',
        '  dims: 16',
        '}',
        'input {',
        '  name: "b"',
        '  data_type: TYPE_INT64',
        '  dims: -1',
        '  dims: 1',
        '  reshape {',
        '  }',
        '}',
        'output {',
        '  name: "y"',
        '  data_type: TYPE_FP32',
        '  dims: 1',
        '}',
        'instance_group {',
        '  count: 1',
        '  kind: KIND_CPU',
        '}',
        'dynamic_batching {',
        '  preferred_batch_size: 4',
        '  preferred_batch_size: 8',
        '  max_queue_delay_microseconds: 100',
        '}',
        'parameters {',
        '  key: "k"',
        '  value {',
        '    string_value: "v"',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('leaves out proto3 default values (0, false, "", the first enum value), as Triton reads them back', () => {
    const text = writeModelConfig({ max_batch_size: 0, input: [{ name: 'a', data_type: 'TYPE_FP32', dims: [1], allow_ragged_batch: false, format: 'FORMAT_NONE' }] });
    expect(text).toBe('input {\n  name: "a"\n  data_type: TYPE_FP32\n  dims: 1\n}\n');
    expect(parseModelConfig(text)).toEqual({ input: [{ name: 'a', data_type: 'TYPE_FP32', dims: [1] }] });
  });

  it('round-trips write → parse, and protobufjs reads the same config from the text', () => {
    const text = writeModelConfig(gnnctlConfig);
    expect(parseModelConfig(text)).toEqual(gnnctlConfig);
    expect(parseWithProtobufjs(text)).toEqual(gnnctlConfig);
    // Writing the parsed config again gives the same text (a fixed point).
    expect(writeModelConfig(parseModelConfig(text))).toBe(text);
  });

  it('escapes strings so that any name survives', () => {
    const names = ['a"b', 'back\\slash', 'tab\there', 'nl\nx', 'bell\x07', 'ünï ✓', "it's"];
    const cfg: TritonModelConfig = { input: names.map((name) => ({ name, data_type: 'TYPE_STRING', dims: [1] })) };
    const text = writeModelConfig(cfg);
    expect(text).toContain('name: "bell\\007"');
    expect(parseModelConfig(text).input!.map((i) => i.name)).toEqual(names);
    expect((parseWithProtobufjs(text).input as { name: string }[]).map((i) => i.name)).toEqual(names);
  });

  it('keeps fields gnnctl does not model (optimization, warmup, sequence batching)', () => {
    const cfg: TritonModelConfig = {
      name: 'seq',
      backend: 'onnxruntime',
      optimization: { graph: { level: -1 }, execution_accelerators: { cpu_execution_accelerator: [{ name: 'openvino' }] } },
      sequence_batching: { max_sequence_idle_microseconds: 5000000, oldest: { max_candidate_sequences: 4, preferred_batch_size: [2] } },
      model_warmup: [{ name: 'w', batch_size: 1, inputs: { X: { data_type: 'TYPE_FP32', dims: [4], zero_data: true } } }],
      metric_tags: { team: 'fraud' },
    };
    const text = writeModelConfig(cfg);
    expect(parseModelConfig(text)).toEqual(cfg);
    expect(parseWithProtobufjs(text)).toEqual(cfg);
  });

  it('reports unknown fields, bad enums and wrong types with their paths', () => {
    const bad = {
      name: 'm',
      max_batchsize: 8,
      input: [{ name: 'a', data_type: 'TYPE_FLOAT32', dims: [1.5] }],
      instance_group: [{ kind: 'KIND_CPU', count: '2' }],
      dynamic_batching: {},
      sequence_batching: {},
    } as unknown as TritonModelConfig;
    const e = problemsOf(() => writeModelConfig(bad));
    expect(e.problems.map((p) => p.path)).toEqual(['max_batchsize', 'input[0].data_type', 'input[0].dims[0]', 'instance_group[0].count', 'sequence_batching']);
    expect(e.problems[0]!.message).toMatch(/unknown field "max_batchsize" in ModelConfig; did you mean "max_batch_size"/);
    expect(e.problems[1]!.message).toMatch(/invalid value "TYPE_FLOAT32" for enum DataType/);
    expect(e.problems[1]!.hint).toMatch(/TYPE_FP32/);
    expect(e.problems[4]!.message).toMatch(/"sequence_batching" and "dynamic_batching" are both set.*oneof "scheduling_choice"/);
  });

  it('refuses integers out of range or beyond 2^53', () => {
    expect(() => writeModelConfig({ max_batch_size: 2 ** 31 })).toThrow(/out of range for int32/);
    expect(() => writeModelConfig({ dynamic_batching: { max_queue_delay_microseconds: -1 } })).toThrow(/out of range for uint64/);
  });
});

describe('parseModelConfig', () => {
  it('reads a config in the style of the Triton docs: comments, lists, nested groups, maps', () => {
    const text = `# Triton model configuration
name: "densenet_onnx"   # trailing comment
platform: "onnxruntime_onnx"
max_batch_size : 8
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape: { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    label_filename: "densenet_labels.txt"
  }
]
instance_group [
  {
    count: 2
    kind: KIND_CPU
  },
  {
    count: 1
    kind: KIND_GPU
    gpus: [ 0, 1 ]
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  default_queue_policy { timeout_action: DELAY, default_timeout_microseconds: 0x10 }
  priority_queue_policy { key: 2 value: { max_queue_size: 7 } }
}
version_policy: { specific: { versions: [1,3]}}
parameters { key: "execution_mode" value: { string_value: "0" } }
parameters: { key: "inter_op_thread_count" value: { string_value: "0" } }
optimization { execution_accelerators {
  gpu_execution_accelerator : [ {
    name : "tensorrt"
    parameters { key: "precision_mode" value: "FP16" }
    parameters { key: "max_workspace_size_bytes" value: "1073741824" }}
  ]
}}
model_warmup [{
    name : "regular sample"
    batch_size: 1
    inputs {
        key: "data_0"
        value: {
            data_type: TYPE_FP32
            dims: [ 3, 224, 224 ]
            zero_data: true
        }
    }
}]
`;
    const expected: TritonModelConfig = {
      name: 'densenet_onnx',
      platform: 'onnxruntime_onnx',
      max_batch_size: 8,
      input: [{ name: 'data_0', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: [3, 224, 224], reshape: { shape: [1, 3, 224, 224] } }],
      output: [{ name: 'fc6_1', data_type: 'TYPE_FP32', dims: [1000], label_filename: 'densenet_labels.txt' }],
      instance_group: [
        { count: 2, kind: 'KIND_CPU' },
        { count: 1, kind: 'KIND_GPU', gpus: [0, 1] },
      ],
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 16 },
        priority_queue_policy: { '2': { max_queue_size: 7 } },
      },
      version_policy: { specific: { versions: [1, 3] } },
      parameters: { execution_mode: { string_value: '0' }, inter_op_thread_count: { string_value: '0' } },
      optimization: {
        execution_accelerators: {
          gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16', max_workspace_size_bytes: '1073741824' } }],
        },
      },
      model_warmup: [{ name: 'regular sample', batch_size: 1, inputs: { data_0: { data_type: 'TYPE_FP32', dims: [3, 224, 224], zero_data: true } } }],
    };
    const cfg = parseModelConfig(text);
    expect(cfg).toEqual(expected);
    expect(parseWithProtobufjs(text)).toEqual(expected);
  });

  it('accepts the other spellings protobuf text format allows', () => {
    const cfg = parseModelConfig(`
      name: 'single' 'quoted' ;
      max_batch_size: 0x10,
      input < name: "a\\x41\\101\\u00e9\\"" data_type: 9 dims: -1 dims: 2 dims: [] >
      input: { name: "b" data_type: TYPE_BOOL dims: [ 010 ] optional: t allow_ragged_batch: True }
      version_policy { latest { num_versions: 1 } }
      model_metrics { metric_control { histogram_options { buckets: [ -5.0, -2, 0, 3.5e0, 5f, inf ] } } }
      output []
      instance_group [ { kind: KIND_MODEL } ]
    `);
    expect(cfg).toEqual({
      name: 'singlequoted',
      max_batch_size: 16,
      input: [
        { name: 'aAAé"', data_type: 'TYPE_INT64', dims: [-1, 2] },
        { name: 'b', data_type: 'TYPE_BOOL', dims: [8], optional: true, allow_ragged_batch: true },
      ],
      version_policy: { latest: { num_versions: 1 } },
      model_metrics: { metric_control: [{ histogram_options: { buckets: [-5, -2, 0, 3.5, 5, Infinity] } }] },
      // `output []` is an empty repeated field, which protobuf does not tell apart from an absent one.
      instance_group: [{ kind: 'KIND_MODEL' }],
    });
  });

  it('gives inputs and outputs their proto3 defaults', () => {
    expect(parseModelConfig('input { name: "x" }\noutput {}').input).toEqual([{ name: 'x', data_type: 'TYPE_INVALID', dims: [] }]);
    expect(parseModelConfig('input { name: "x" reshape {} }').input![0]!.reshape).toEqual({ shape: [] });
    expect(parseModelConfig('')).toEqual({});
  });

  it('reports an unknown field with line, column, path and a suggestion', () => {
    const text = 'name: "m"\ninput [\n  {\n    name: "a"\n    data_typ: TYPE_FP32\n  }\n]\n';
    const e = problemsOf(() => parseModelConfig(text, { file: 'repo/m/config.pbtxt' }));
    expect(e.where).toBe('repo/m/config.pbtxt');
    expect(e.problems).toEqual([
      { path: 'input[0].data_typ', message: 'unknown field "data_typ" in ModelInput', line: 5, col: 5, hint: 'did you mean "data_type"?' },
    ]);
    expect(e.message).toBe('invalid Triton model config: line 5, col 5: input[0].data_typ: unknown field "data_typ" in ModelInput');
    expect(e.describe()).toContain('repo/m/config.pbtxt: invalid Triton model config');
    expect(e.describe()).toContain('input[0].data_typ (line 5, col 5)');
  });

  it('reports a bad enum value at the value', () => {
    const e = problemsOf(() => parseModelConfig('instance_group [ { kind: KIND_CPUS } ]'));
    expect(e.problems).toHaveLength(1);
    expect(e.problems[0]).toMatchObject({ path: 'instance_group[0].kind', message: 'invalid value KIND_CPUS for enum Kind (field "kind")', line: 1, col: 26 });
    expect(e.problems[0]!.hint).toMatch(/^did you mean "KIND_CPU"/);
    const n = problemsOf(() => parseModelConfig('input { data_type: 99 }'));
    expect(n.problems[0]).toMatchObject({ path: 'input[0].data_type', line: 1, col: 20, message: '99 is not a value of enum DataType (field "data_type")' });
  });

  it('reports values of the wrong type', () => {
    const cases: [string, string, number, number, RegExp][] = [
      ['max_batch_size: "8"', 'max_batch_size', 1, 17, /expected an integer for "max_batch_size" \(int32\), found "8"/],
      ['max_batch_size: 8.5', 'max_batch_size', 1, 17, /expected an integer.*found 8.5/],
      ['name: 5', 'name', 1, 7, /expected a quoted string for "name" \(string\), found 5/],
      ['input { optional: yes }', 'input[0].optional', 1, 19, /expected true or false/],
      ['max_batch_size: 3000000000', 'max_batch_size', 1, 17, /3000000000 is out of range for int32/],
      ['dynamic_batching { max_queue_delay_microseconds: -5 }', 'dynamic_batching.max_queue_delay_microseconds', 1, 50, /-5 is out of range for uint64/],
      // protobufjs reads it (it fits uint64); the plain-object form could not carry it exactly.
      ['dynamic_batching { max_queue_delay_microseconds: 9007199254740993 }', 'dynamic_batching.max_queue_delay_microseconds', 1, 50, /9007199254740993 is beyond ±2\^53/],
      ['dynamic_batching: 5', 'dynamic_batching', 1, 19, /"dynamic_batching" is a message ModelDynamicBatching; expected "\{" to start it, found "5"/],
      ['name { }', 'name', 1, 6, /"name" is a string value, not a message/],
      ['max_batch_size: [1, 2]', 'max_batch_size', 1, 17, /not a repeated field/],
      ['input { dims: [ 1, TYPE_FP32 ] }', 'input[0].dims[1]', 1, 20, /expected an integer.*found TYPE_FP32/],
    ];
    for (const [text, path, line, col, message] of cases) {
      const e = problemsOf(() => parseModelConfig(text));
      expect(e.problems, text).toHaveLength(1);
      expect(e.problems[0], text).toMatchObject({ path, line, col });
      expect(e.problems[0]!.message, text).toMatch(message);
    }
  });

  it('reports a field set twice and two members of a oneof', () => {
    const e = problemsOf(() => parseModelConfig('name: "a"\nname: "b"\ndynamic_batching {}\nsequence_batching {}\n'));
    expect(e.problems).toEqual([
      { path: 'name', message: 'field "name" is set more than once (first at line 1, col 1); it is not repeated', line: 2, col: 1 },
      { path: 'sequence_batching', message: '"sequence_batching" is set along with "dynamic_batching", but only one member of the oneof "scheduling_choice" may be', line: 4, col: 1 },
    ]);
  });

  it('reports syntax errors with line and column: unclosed brace, stray tokens, bad strings', () => {
    const cases: [string, number, number, RegExp][] = [
      ['name: "m"\ninput [\n  {\n    name: "a"\n', 3, 3, /unclosed "\{": reached the end of the file before the matching "\}"/],
      ['input [ { name: "a" }', 1, 7, /unclosed "\[": reached the end of the file before the matching "\]"/],
      ['name: "m" }', 1, 11, /unexpected "\}" with no open "\{"/],
      ['input { name: "a" >', 1, 19, /expected "\}" to close the "\{" at line 1, col 7, found ">"/],
      ['name "m"', 1, 6, /expected ":" after field name "name", found string "m"/],
      ['name: "abc\nplatform: "x"', 1, 7, /unterminated string/],
      ['name: "\\q"', 1, 8, /unknown escape sequence \\q/],
      ['name: "\\xff"', 1, 7, /not valid UTF-8/],
      ['max_batch_size: 09', 1, 17, /malformed number "09"/],
      ['max_batch_size: 12ab', 1, 17, /malformed number "12a"/],
      ['name: "m" @', 1, 11, /unexpected character "@"/],
      ['[ext.field]: 1', 1, 1, /extension and Any fields/],
      ['max_batch_size:', 1, 16, /expected a value for "max_batch_size", found the end of the file/],
      ['input { dims: [1 2] }', 1, 18, /expected "," or "\]" in the list of "dims", found "2"/],
      // protobuf's own parser (and so Triton) refuses a trailing comma in a list.
      ['instance_group [ { kind: KIND_MODEL }, ]', 1, 40, /expected a value after "," in the list of "instance_group" \(protobuf text format allows no trailing comma\)/],
    ];
    for (const [text, line, col, message] of cases) {
      const e = problemsOf(() => parseModelConfig(text));
      const last = e.problems[e.problems.length - 1]!;
      expect(last, text).toMatchObject({ line, col });
      expect(last.message, text).toMatch(message);
    }
  });

  it('reports every schema problem at once and keeps going after an unknown block', () => {
    const text = [
      'name: "m"',
      'unknown_block { a: 1 nested { b: [1, 2] } }',
      'max_batch_size: "x"',
      'input [ { name: "a" data_type: TYPE_FP33 dims: [ 1 ] } ]',
      'instance_group [ { kind: KIND_CPU count: 1 } ]',
    ].join('\n');
    const e = problemsOf(() => parseModelConfig(text));
    expect(e.problems.map((p) => [p.path, p.line, p.col])).toEqual([
      ['unknown_block', 2, 1],
      ['max_batch_size', 3, 17],
      ['input[0].data_type', 4, 32],
    ]);
    expect(e.message).toMatch(/\(and 2 more\)$/);
  });
});

describe('explainTextFormatError', () => {
  it("falls back to protobufjs' own message and line when the checker finds nothing to add", () => {
    const e = explainTextFormatError(modelConfigType(), 'name: "m"\n', 'm/config.pbtxt', new Error('some refusal (line 1)'));
    expect(e.where).toBe('m/config.pbtxt');
    expect(e.problems).toEqual([{ path: '', message: 'some refusal', line: 1 }]);
    expect(e.message).toBe('invalid Triton model config: line 1: some refusal');
  });
});
