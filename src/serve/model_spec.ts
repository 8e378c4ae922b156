/**
 * A model's `config.pbtxt`, turned into what the server needs at request time: input and output tensor
 * specs (KServe datatypes, shapes, padding values), the batching policy and the version policy.
 *
 * Everything the server cannot honour fails here, at load, with every problem listed: a config that
 * loads serves as written, never half-understood.
 */
import { ConfigError, suggest, type ConfigProblem } from '../core/errors.js';
import type { TritonModelConfig, TritonModelInput, TritonModelOutput } from '../artifacts/triton/pbtxt.js';
import { allocValues, parseScalar, v2FromTriton, type PadValue, type V2Datatype } from './datatypes.js';

/** The `parameters` key prefix that names an input's padding value: `pad_value:<input name>`. */
export const PAD_VALUE_PREFIX = 'pad_value:';
/**
 * The `parameters` key prefix that names the value an input takes when a request leaves it out or sends
 * `null` for an element: `missing_value:<input name>` (e.g. `nan` for a numeric column the model
 * standardises, which maps NaN to the training mean and sets the null indicator it learned).
 */
export const MISSING_VALUE_PREFIX = 'missing_value:';
/**
 * The `parameters` key prefix that caps an input's variable dimensions: `max_sequence_length:<input>`
 * (an RTI sequence longer than the model was distilled with is refused, see `decode.ts`).
 */
export const MAX_SEQUENCE_LENGTH_PREFIX = 'max_sequence_length:';

export interface TensorSpec {
  name: string;
  datatype: V2Datatype;
  /** The config's `dims`: without the batch dimension when the model batches; `-1` is variable. */
  dims: number[];
  /** The full shape as model metadata reports it: `[-1, ...dims]` when the model batches. */
  shape: number[];
  /** Whether any of `dims` is `-1`. */
  variable: boolean;
  /**
   * What variable dimensions are padded with when requests of different sizes share a batch: the
   * `pad_value:<name>` parameter, else the type's zero (0, "" or false).
   */
  pad: PadValue;
  /** Inputs only: Triton's `optional` (a request may leave it out). */
  optional: boolean;
  /**
   * Inputs only: the `missing_value:<name>` parameter. When set, a request may leave the input out (fixed
   * dims only) or send `null` elements, and the server fills in this value.
   */
  missing?: PadValue;
  /** Inputs only: the `max_sequence_length:<name>` parameter, the largest size of each variable dimension. */
  maxSequenceLength?: number;
}

export interface BatchingPolicy {
  /** `max_queue_delay_microseconds`: how long the oldest request may wait for others to join it. */
  maxQueueDelayUs: number;
  /** `preferred_batch_size`, ascending: a batch of one of these sizes runs without waiting further. */
  preferredBatchSizes: number[];
  /**
   * `default_queue_policy.max_queue_size`: requests waiting beyond this many are refused with 503
   * (0, the default: no limit).
   */
  maxQueueSize: number;
}

export type VersionPolicy = { kind: 'latest'; count: number } | { kind: 'all' } | { kind: 'specific'; versions: number[] };

export interface ServedModelSpec {
  name: string;
  platform: string;
  /** 0: the model does not batch (shapes are exactly `dims`); else the largest batch it accepts. */
  maxBatchSize: number;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  inputByName: Map<string, TensorSpec>;
  outputByName: Map<string, TensorSpec>;
  /** Set when the config has `dynamic_batching`; without it every request runs on its own. */
  dynamicBatching?: BatchingPolicy;
  /**
   * Whether requests whose variable dimensions differ may share a batch, padded. Only when every
   * output has fixed dims: an output that follows a padded input's length could not be cut back to each
   * request's own shape, so such models batch only requests whose shapes match exactly.
   */
  padVariableDims: boolean;
  /** Sum of `instance_group[].count` (default 1): how many batches of this model may run at once. */
  instanceCount: number;
  versionPolicy: VersionPolicy;
  /** `default_model_filename`, default `model.onnx`. */
  modelFilename: string;
  /** The config as parsed (served by `GET /v2/models/{name}/config`). */
  config: TritonModelConfig;
}

const SUPPORTED_PLATFORMS = new Set(['onnxruntime_onnx']);

/**
 * Builds the spec of the model in folder `dirName` from its parsed config. Throws a ConfigError listing
 * every problem (`file` names the config file in it).
 */
export function modelSpecFromConfig(config: TritonModelConfig, dirName: string, file = `${dirName}/config.pbtxt`): ServedModelSpec {
  const problems: ConfigProblem[] = [];
  const problem = (path: string, message: string, hint?: string) => problems.push({ path, message, ...(hint ? { hint } : {}) });

  if (config.name !== undefined && config.name !== '' && config.name !== dirName) {
    problem('name', `the config names the model "${config.name}" but its folder is "${dirName}"`, 'Triton requires them to match: rename one');
  }
  const platform = config.platform || (config.backend === 'onnxruntime' ? 'onnxruntime_onnx' : '');
  if (!SUPPORTED_PLATFORMS.has(platform)) {
    problem('platform', `gnnctl serve runs ONNX models only (got platform "${config.platform ?? ''}", backend "${config.backend ?? ''}")`, 'set platform: "onnxruntime_onnx"');
  }
  const maxBatchSize = config.max_batch_size ?? 0;
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 0) problem('max_batch_size', `must be a non-negative integer (got ${maxBatchSize})`);
  const batching = maxBatchSize > 0;
  for (const unsupported of ['sequence_batching', 'ensemble_scheduling', 'batch_input', 'batch_output'] as const) {
    const v = config[unsupported];
    if (v !== undefined && !(Array.isArray(v) && v.length === 0)) problem(unsupported, `${unsupported} is not supported by gnnctl serve`);
  }

  const inputs = (config.input ?? []).map((t, i) => tensorSpec(t, `input[${i}]`, batching, true, problem));
  const outputs = (config.output ?? []).map((t, i) => tensorSpec(t, `output[${i}]`, batching, false, problem));
  if (inputs.length === 0) problem('input', 'the config declares no inputs');
  if (outputs.length === 0) problem('output', 'the config declares no outputs');
  const inputByName = indexByName(inputs, 'input', problem);
  const outputByName = indexByName(outputs, 'output', problem);

  for (const [key, param] of Object.entries(config.parameters ?? {})) {
    const prefix = [PAD_VALUE_PREFIX, MISSING_VALUE_PREFIX, MAX_SEQUENCE_LENGTH_PREFIX].find((p) => key.startsWith(p));
    if (!prefix) continue;
    const inputName = key.slice(prefix.length);
    const spec = inputByName.get(inputName);
    if (!spec) {
      problem(`parameters["${key}"]`, `names no input of the model`, suggest(inputName, [...inputByName.keys()]));
      continue;
    }
    if (prefix === MAX_SEQUENCE_LENGTH_PREFIX) {
      const n = Number(param.string_value);
      if (!spec.variable) problem(`parameters["${key}"]`, `input "${inputName}" has no variable dimension to cap (dims ${JSON.stringify(spec.dims)})`);
      else if (!(Number.isSafeInteger(n) && n >= 1)) problem(`parameters["${key}"]`, `must be a positive integer (got "${param.string_value}")`);
      else spec.maxSequenceLength = n;
      continue;
    }
    const v = parseScalar(spec.datatype, param.string_value ?? '');
    if (typeof v === 'string' && spec.datatype !== 'BYTES') {
      problem(`parameters["${key}"]`, `not a ${spec.datatype} value: ${v} (got "${param.string_value}")`);
    } else if (prefix === PAD_VALUE_PREFIX) {
      spec.pad = v;
    } else {
      spec.missing = v;
    }
  }

  let dynamicBatching: BatchingPolicy | undefined;
  if (config.dynamic_batching) {
    const db = config.dynamic_batching;
    const delay = db.max_queue_delay_microseconds ?? 0;
    const preferred = [...(db.preferred_batch_size ?? [])].sort((a, b) => a - b);
    if (!batching) problem('dynamic_batching', 'dynamic batching needs max_batch_size > 0');
    if (!(delay >= 0)) problem('dynamic_batching.max_queue_delay_microseconds', `must be >= 0 (got ${delay})`);
    for (const p of preferred) {
      if (!(p >= 1 && p <= maxBatchSize)) problem('dynamic_batching.preferred_batch_size', `each size must be in 1..max_batch_size = ${maxBatchSize} (got ${p})`);
    }
    if (db.priority_levels) problem('dynamic_batching.priority_levels', 'request priorities are not supported by gnnctl serve');
    const policy = db.default_queue_policy ?? {};
    if (policy.default_timeout_microseconds) problem('dynamic_batching.default_queue_policy.default_timeout_microseconds', 'queue timeouts are not supported by gnnctl serve');
    const maxQueueSize = policy.max_queue_size ?? 0;
    if (!(Number.isInteger(maxQueueSize) && maxQueueSize >= 0)) problem('dynamic_batching.default_queue_policy.max_queue_size', `must be a non-negative integer (got ${maxQueueSize})`);
    dynamicBatching = { maxQueueDelayUs: delay, preferredBatchSizes: preferred, maxQueueSize };
  }

  const instanceCount = Math.max(1, (config.instance_group ?? []).reduce((n, g) => n + (g.count ?? 1), 0));
  const versionPolicy = parseVersionPolicy(config, problem);
  const modelFilename = config.default_model_filename || 'model.onnx';
  if (modelFilename.includes('/')) problem('default_model_filename', `must be a file name (got "${modelFilename}")`);

  if (problems.length > 0) throw new ConfigError(`model "${dirName}": config.pbtxt cannot be served`, problems, { where: file });
  return {
    name: dirName,
    platform,
    maxBatchSize,
    inputs,
    outputs,
    inputByName,
    outputByName,
    dynamicBatching,
    padVariableDims: outputs.every((o) => !o.variable),
    instanceCount,
    versionPolicy,
    modelFilename,
    config,
  };
}

function tensorSpec(
  t: TritonModelInput | TritonModelOutput,
  path: string,
  batching: boolean,
  isInput: boolean,
  problem: (path: string, message: string, hint?: string) => void,
): TensorSpec {
  const name = t.name ?? '';
  if (name === '') problem(`${path}.name`, 'is empty');
  const datatype = v2FromTriton(t.data_type ?? 'TYPE_INVALID');
  if (!datatype) problem(`${path}.data_type`, `${t.data_type ?? 'TYPE_INVALID'} is not supported by gnnctl serve`, 'use TYPE_FP32, TYPE_INT64, TYPE_STRING, …');
  const dims = t.dims ?? [];
  dims.forEach((d, i) => {
    if (!(Number.isInteger(d) && (d === -1 || d >= 1))) problem(`${path}.dims[${i}]`, `must be -1 (variable) or a positive size (got ${d})`);
  });
  if (!batching && dims.length === 0) problem(`${path}.dims`, 'a model without batching needs at least one dimension');
  if (t.reshape) problem(`${path}.reshape`, 'reshape is not supported by gnnctl serve', 'declare the dims the ONNX model has');
  if (t.is_shape_tensor) problem(`${path}.is_shape_tensor`, 'shape tensors are not supported by gnnctl serve');
  const dt = datatype ?? 'FP32';
  return {
    name,
    datatype: dt,
    dims: [...dims],
    shape: batching ? [-1, ...dims] : [...dims],
    variable: dims.includes(-1),
    pad: allocValues(dt, 1)[0] as PadValue,
    optional: isInput && Boolean((t as TritonModelInput).optional),
  };
}

function indexByName(specs: TensorSpec[], what: string, problem: (path: string, message: string) => void): Map<string, TensorSpec> {
  const map = new Map<string, TensorSpec>();
  specs.forEach((s, i) => {
    if (map.has(s.name)) problem(`${what}[${i}].name`, `${what} "${s.name}" is declared twice`);
    map.set(s.name, s);
  });
  return map;
}

function parseVersionPolicy(config: TritonModelConfig, problem: (path: string, message: string) => void): VersionPolicy {
  const p = config.version_policy;
  if (!p) return { kind: 'latest', count: 1 };
  if ('all' in p) return { kind: 'all' };
  if ('specific' in p) {
    const versions = p.specific.versions ?? [];
    if (versions.length === 0) problem('version_policy.specific.versions', 'lists no version');
    return { kind: 'specific', versions };
  }
  const count = p.latest.num_versions ?? 0;
  if (!(count >= 1)) problem('version_policy.latest.num_versions', `must be >= 1 (got ${count})`);
  return { kind: 'latest', count: Math.max(1, count) };
}

/** The versions to serve out of the complete ones available (ascending). */
export function selectVersions(policy: VersionPolicy, available: readonly number[]): number[] {
  const sorted = [...new Set(available)].sort((a, b) => a - b);
  switch (policy.kind) {
    case 'all':
      return sorted;
    case 'latest':
      return sorted.slice(Math.max(0, sorted.length - policy.count));
    case 'specific': {
      const wanted = new Set(policy.versions);
      return sorted.filter((v) => wanted.has(v));
    }
  }
}
