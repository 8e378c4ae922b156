import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import type { TritonModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { modelSpecFromConfig, selectVersions, type VersionPolicy } from '../../src/serve/model_spec.js';
import { INT64_MIN, RTI_PATH } from './helpers.js';
import { syntheticConfig } from '../../src/loadgen/synthetic_model.js';

function problems(config: TritonModelConfig, dir = 'm'): string[] {
  try {
    modelSpecFromConfig(config, dir);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error('expected a ConfigError');
}

describe('modelSpecFromConfig', () => {
  it('reads the export contract: datatypes, shapes with the batch dim, pad values, batching', () => {
    const spec = modelSpecFromConfig(syntheticConfig({ maxBatchSize: 32, maxQueueDelayUs: 250, preferredBatchSizes: [16, 8] }), 'online-model');
    expect(spec.maxBatchSize).toBe(32);
    expect(spec.inputs.map((i) => [i.name, i.datatype, i.shape])).toEqual([
      ['anchor_time', 'INT64', [-1, 1]],
      ['transactions.customer_id', 'BYTES', [-1, 1]],
      ['transactions.price', 'FP32', [-1, 1]],
      [`${RTI_PATH}:price`, 'FP32', [-1, -1, 1]],
      [`${RTI_PATH}:t_dat`, 'INT64', [-1, -1, 1]],
    ]);
    expect(spec.inputByName.get(`${RTI_PATH}:t_dat`)!.pad).toBe(INT64_MIN);
    expect(spec.inputByName.get(`${RTI_PATH}:price`)!.pad).toBe(0);
    expect(spec.dynamicBatching).toEqual({ maxQueueDelayUs: 250, preferredBatchSizes: [8, 16], maxQueueSize: 0 });
    expect(spec.padVariableDims).toBe(true);
    expect(spec.versionPolicy).toEqual({ kind: 'latest', count: 1 });
    expect(spec.outputs[0]).toMatchObject({ name: 'probability', datatype: 'FP32', shape: [-1, 1] });
  });

  it('reports every problem at once', () => {
    const found = problems({
      name: 'other',
      platform: 'tensorflow_savedmodel',
      max_batch_size: 4,
      input: [
        { name: 'x', data_type: 'TYPE_FP16', dims: [0] },
        { name: 'x', data_type: 'TYPE_FP32', dims: [2], reshape: { shape: [2] } },
      ],
      output: [],
      dynamic_batching: { preferred_batch_size: [8] },
      parameters: { 'pad_value:nope': { string_value: '0' } },
    });
    expect(found.join('\n')).toMatch(/name: .*"other".*"m"/);
    expect(found.join('\n')).toMatch(/platform: gnnctl serve runs ONNX models only/);
    expect(found.join('\n')).toMatch(/input\[0\]\.data_type: TYPE_FP16 is not supported/);
    expect(found.join('\n')).toMatch(/input\[0\]\.dims\[0\]: must be -1/);
    expect(found.join('\n')).toMatch(/input\[1\]\.reshape/);
    expect(found.join('\n')).toMatch(/input\[1\]\.name: input "x" is declared twice/);
    expect(found.join('\n')).toMatch(/output: the config declares no outputs/);
    expect(found.join('\n')).toMatch(/preferred_batch_size: each size must be in 1..max_batch_size = 4 \(got 8\)/);
    expect(found.join('\n')).toMatch(/pad_value:nope.*names no input/);
  });

  it('refuses a pad value that is not of the input type', () => {
    const cfg = syntheticConfig();
    cfg.parameters = { [`pad_value:${RTI_PATH}:t_dat`]: { string_value: '-1e3' } };
    expect(problems(cfg, 'online-model').join()).toMatch(/not a INT64 value: expected an integer/);
  });

  it('reads missing_value and max_sequence_length, and refuses bad ones', () => {
    const cfg = syntheticConfig();
    cfg.parameters = { 'missing_value:transactions.price': { string_value: 'nan' }, [`max_sequence_length:${RTI_PATH}:price`]: { string_value: '32' } };
    const spec = modelSpecFromConfig(cfg, 'online-model');
    expect(spec.inputByName.get('transactions.price')!.missing).toBeNaN();
    expect(spec.inputByName.get(`${RTI_PATH}:price`)!.maxSequenceLength).toBe(32);
    cfg.parameters = {
      'missing_value:anchor_time': { string_value: 'soon' },
      'max_sequence_length:transactions.price': { string_value: '8' },
      [`max_sequence_length:${RTI_PATH}:price`]: { string_value: '0' },
      'missing_value:transactions.prise': { string_value: '0' },
    };
    expect(problems(cfg, 'online-model')).toEqual([
      'parameters["missing_value:anchor_time"]: not a INT64 value: expected an integer (got "soon")',
      'parameters["max_sequence_length:transactions.price"]: input "transactions.price" has no variable dimension to cap (dims [1])',
      `parameters["max_sequence_length:${RTI_PATH}:price"]: must be a positive integer (got "0")`,
      'parameters["missing_value:transactions.prise"]: names no input of the model',
    ]);
  });

  it('refuses dynamic batching without a batch dimension', () => {
    expect(problems({ platform: 'onnxruntime_onnx', max_batch_size: 0, input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }], output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }], dynamic_batching: {} }).join()).toMatch(
      /dynamic batching needs max_batch_size > 0/,
    );
  });

  it('does not pad when an output has a variable dimension', () => {
    const cfg = syntheticConfig();
    cfg.output = [{ name: 'probability', data_type: 'TYPE_FP32', dims: [-1] }];
    expect(modelSpecFromConfig(cfg, 'online-model').padVariableDims).toBe(false);
  });
});

describe('selectVersions', () => {
  const available = [3, 1, 10, 2];
  it.each<[VersionPolicy, number[]]>([
    [{ kind: 'latest', count: 1 }, [10]],
    [{ kind: 'latest', count: 2 }, [3, 10]],
    [{ kind: 'all' }, [1, 2, 3, 10]],
    [{ kind: 'specific', versions: [2, 7] }, [2]],
  ])('%j', (policy, expected) => {
    expect(selectVersions(policy, available)).toEqual(expected);
  });

  it('parses version_policy from the config', () => {
    const spec = modelSpecFromConfig(syntheticConfig({ config: { version_policy: { specific: { versions: [1, 3] } } } }), 'online-model');
    expect(spec.versionPolicy).toEqual({ kind: 'specific', versions: [1, 3] });
  });
});
