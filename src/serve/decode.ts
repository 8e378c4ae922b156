/**
 * A KServe V2 inference request (parsed JSON) checked against a model's spec and turned into typed
 * tensors. Every problem is an HTTP 400 whose message names the input and what was expected, in the
 * spirit of Triton's messages.
 *
 * `data` may be flat or nested (row-major, each level as long as its dimension). 64-bit integers may
 * also come as decimal strings: `json_body.ts` turns long integer literals into strings so that they stay
 * exact, and JSON clients that cannot write exact int64 numbers (JavaScript) can send strings too.
 */
import { decodeBinaryTensor, ELEMENT_BYTES } from './binary.js';
import { allocValues, INT64_RANGE, intRange, UINT64_RANGE, type HostTensor, type PadValue, type TensorValues, type V2Datatype } from './datatypes.js';
import { badRequest, HttpError } from './http_error.js';
import type { ServedModelSpec, TensorSpec } from './model_spec.js';

export interface InferRequest {
  /** The request's `id`, echoed in the response. */
  id?: string;
  /** Decoded inputs by name, in the model's input order (absent optional inputs are left out). */
  inputs: Map<string, HostTensor>;
  /** Rows in this request (the batch dimension); 1 for models that do not batch. */
  batch: number;
  /** Outputs the client asked for, in its order; undefined means all of them. */
  outputs?: string[];
  /**
   * Triton's `timeout` request parameter: microseconds the request may take in the server before it is
   * answered with a deadline error (undefined: the server's default).
   */
  timeoutUs?: number;
  /** Outputs to return as binary tensor data (the binary tensor extension); empty: all as JSON. */
  binaryOutputs?: ReadonlySet<string>;
  /**
   * Requests with equal keys may share a batch: the set of inputs present, and, when the model cannot
   * pad variable dimensions, their sizes.
   */
  batchKey: string;
}

/** Axes (input name, axis in the full shape) that must have equal sizes within one request. */
export type DimGroup = { input: string; axis: number }[];

export interface DecodeOptions {
  /** Groups of axes sharing one symbolic dimension in the ONNX model (e.g. every RTI input's `seq`). */
  sharedDims?: readonly DimGroup[];
  /**
   * The bytes after the JSON header when the request came with `Inference-Header-Content-Length`
   * (see `binary.ts`): inputs with `binary_data_size` take their bytes from it, in input order.
   */
  binary?: Uint8Array;
  /**
   * The server's cap (`--max-sequence-length`) on every variable dimension of inputs that have no
   * `max_sequence_length:<input>` parameter of their own. Undefined: no cap.
   */
  maxSequenceLength?: number;
}

/** Checks and decodes `body` (the parsed request) for the model described by `spec`. Throws HttpError 400. */
export function decodeInferRequest(body: unknown, spec: ServedModelSpec, options: DecodeOptions = {}): InferRequest {
  if (!isObject(body)) throw badRequest(`the request body must be a JSON object (got ${jsonKind(body)})`);
  const { id, inputs, outputs, parameters } = body as Record<string, unknown>;
  if (id !== undefined && typeof id !== 'string') throw badRequest(`"id" must be a string (got ${jsonKind(id)})`);
  if (parameters !== undefined && !isObject(parameters)) throw badRequest(`"parameters" must be an object (got ${jsonKind(parameters)})`);
  const binaryAll = parameters?.binary_data_output;
  if (binaryAll !== undefined && typeof binaryAll !== 'boolean') throw badRequest(`parameters.binary_data_output must be true or false (got ${jsonKind(binaryAll)})`);
  if (!Array.isArray(inputs)) throw badRequest(`"inputs" must be an array of input tensors (got ${jsonKind(inputs)})`);
  const timeout = parameters?.timeout;
  if (timeout !== undefined && !(Number.isSafeInteger(timeout) && (timeout as number) >= 0)) {
    throw badRequest(`parameters.timeout must be a non-negative integer number of microseconds, as in Triton (got ${jsonKind(timeout)})`);
  }
  const binary = options.binary;
  let binaryAt = 0;

  const batching = spec.maxBatchSize > 0;
  const decoded = new Map<string, HostTensor>();
  let batch = -1;
  let batchFrom = '';
  for (let i = 0; i < inputs.length; i++) {
    const t = inputs[i] as unknown;
    if (!isObject(t)) throw badRequest(`inputs[${i}] must be an object with name, datatype, shape and data (got ${jsonKind(t)})`);
    const name = t.name;
    if (typeof name !== 'string') throw badRequest(`inputs[${i}].name must be a string (got ${jsonKind(name)})`);
    const ts = spec.inputByName.get(name);
    if (!ts) throw badRequest(`unexpected inference input "${name}" for model "${spec.name}"; the model's inputs are ${quoteList(spec.inputs.map((s) => s.name))}`);
    if (decoded.has(name)) throw badRequest(`inference input "${name}" is given more than once`);
    if (t.datatype !== ts.datatype) {
      throw badRequest(`inference input "${name}" has datatype ${formatJson(t.datatype)}, but model "${spec.name}" expects ${ts.datatype}`);
    }
    const shape = checkShape(t.shape, ts, spec, options.maxSequenceLength);
    if (batching) {
      if (batch < 0) {
        batch = shape[0]!;
        batchFrom = name;
      } else if (shape[0] !== batch) {
        throw badRequest(`inputs "${batchFrom}" and "${name}" have different batch sizes (${batch} and ${shape[0]})`);
      }
    }
    const binarySize = isObject(t.parameters) ? t.parameters.binary_data_size : undefined;
    let data: TensorValues;
    if (binarySize === undefined) {
      data = decodeData(t.data, shape, ts);
    } else {
      if (!Number.isSafeInteger(binarySize) || (binarySize as number) < 0) {
        throw badRequest(`inference input "${name}": parameters.binary_data_size must be a non-negative integer number of bytes (got ${formatJson(binarySize)})`);
      }
      if (t.data !== undefined) throw badRequest(`inference input "${name}" has both "data" and parameters.binary_data_size; send its elements one way only`);
      if (!binary) {
        throw badRequest(
          `inference input "${name}" has parameters.binary_data_size, but the request has no Inference-Header-Content-Length header; binary tensor data follows the JSON header, whose length in bytes that header must give`,
        );
      }
      const size = binarySize as number;
      if (binaryAt + size > binary.length) {
        throw badRequest(`inference input "${name}": binary_data_size ${size} runs past the end of the body (${binary.length - binaryAt} binary bytes left after the inputs before it)`);
      }
      data = decodeBinaryTensor(binary.subarray(binaryAt, binaryAt + size), ts.datatype, elementCount(shape), name, shape);
      binaryAt += size;
    }
    decoded.set(name, { datatype: ts.datatype, shape, data });
  }
  if (binary && binaryAt !== binary.length) {
    throw badRequest(`the request body has ${binary.length - binaryAt} bytes after the JSON header and the binary inputs' data that belong to no input (check each input's binary_data_size and Inference-Header-Content-Length)`);
  }

  // Inputs with a missing value that the request left out: filled, one value per element. An optional
  // input with a variable dimension is filled empty (size 0 there): an omitted list, e.g. a recommender's
  // candidates, is no list. A non-optional sequence (an RTI column) must be sent: its length is shared with
  // the other columns of its path.
  for (const s of spec.inputs) {
    if (decoded.has(s.name) || s.missing === undefined || (s.variable && !s.optional)) continue;
    if (batching && batch < 0) break;
    const dims = s.dims.map((d) => (d === -1 ? 0 : d));
    const shape = batching ? [batch, ...dims] : dims;
    decoded.set(s.name, { datatype: s.datatype, shape, data: allocValues(s.datatype, elementCount(shape), s.missing) });
  }
  const missing = spec.inputs.filter((s) => !s.optional && !decoded.has(s.name));
  if (missing.length > 0) {
    throw badRequest(`model "${spec.name}" expects input${missing.length > 1 ? 's' : ''} ${quoteList(missing.map((s) => s.name))}, missing from the request (got ${quoteList([...decoded.keys()])})`);
  }
  // Model order, so that merged batches and keys do not depend on the order the client listed inputs in.
  const ordered = new Map<string, HostTensor>();
  for (const s of spec.inputs) {
    const t = decoded.get(s.name);
    if (t) ordered.set(s.name, t);
  }

  for (const group of options.sharedDims ?? []) {
    let first: { input: string; size: number } | undefined;
    for (const { input, axis } of group) {
      const t = ordered.get(input);
      if (!t) continue;
      const size = t.shape[axis]!;
      if (!first) first = { input, size };
      else if (size !== first.size) {
        throw badRequest(`inputs "${first.input}" and "${input}" share a dimension in the model but have sizes ${first.size} and ${size} (shapes ${formatJson(ordered.get(first.input)!.shape)} and ${formatJson(t.shape)})`);
      }
    }
  }

  const requested = requestedOutputs(outputs, spec, binaryAll === true);
  return {
    id,
    inputs: ordered,
    batch: batching ? batch : 1,
    outputs: requested.names,
    binaryOutputs: requested.binary,
    batchKey: batchKey(spec, ordered),
    ...(timeout === undefined ? {} : { timeoutUs: timeout as number }),
  };
}

/**
 * A raw binary request (`Inference-Header-Content-Length: 0`, see `binary.ts`): the body is the bytes of
 * the model's only input, at batch 1. The shape comes from the config: its one variable dimension (if
 * any) from the byte count; a BYTES input must hold exactly one element. All outputs go back as binary.
 */
export function decodeRawBinaryRequest(bytes: Uint8Array, spec: ServedModelSpec, options: DecodeOptions = {}): InferRequest {
  const raw = 'a raw binary request (Inference-Header-Content-Length: 0)';
  if (spec.inputs.length !== 1) {
    throw badRequest(
      `${raw} carries one input, but model "${spec.name}" has ${spec.inputs.length} (${quoteList(spec.inputs.map((s) => s.name))}); send the JSON inference header first and give its length in Inference-Header-Content-Length`,
    );
  }
  const ts = spec.inputs[0]!;
  const variable = ts.dims.filter((d) => d === -1).length;
  let dims: number[];
  if (ts.datatype === 'BYTES') {
    if (ts.dims.some((d) => d !== 1 && d !== -1)) throw badRequest(`${raw}: a BYTES input takes one element, but "${ts.name}" has dims ${formatJson(ts.dims)}`);
    dims = ts.dims.map(() => 1);
  } else {
    if (variable > 1) throw badRequest(`${raw}: input "${ts.name}" has ${variable} variable dimensions ${formatJson(ts.dims)}; its shape cannot follow from the byte count, so send the JSON header`);
    const size = ELEMENT_BYTES[ts.datatype];
    const fixed = ts.dims.reduce((n, d) => (d === -1 ? n : n * d), 1);
    if (bytes.length % (size * fixed) !== 0 || (variable === 0 && bytes.length !== size * fixed)) {
      throw badRequest(
        `${raw}: ${bytes.length} bytes are not ${variable === 0 ? `the ${size * fixed}` : `a multiple of ${size * fixed}`} bytes input "${ts.name}" (${ts.datatype}, dims ${formatJson(ts.dims)}) takes`,
      );
    }
    dims = ts.dims.map((d) => (d === -1 ? bytes.length / (size * fixed) : d));
  }
  const shape = checkShape(spec.maxBatchSize > 0 ? [1, ...dims] : dims, ts, spec, options.maxSequenceLength);
  const inputs = new Map([[ts.name, { datatype: ts.datatype, shape, data: decodeBinaryTensor(bytes, ts.datatype, elementCount(shape), ts.name, shape) }]]);
  return { inputs, batch: 1, binaryOutputs: new Set(spec.outputs.map((o) => o.name)), batchKey: batchKey(spec, inputs) };
}

function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function checkShape(shape: unknown, ts: TensorSpec, spec: ServedModelSpec, serverCap: number | undefined): number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    throw badRequest(`inference input "${ts.name}": "shape" must be an array of non-negative integers (got ${formatJson(shape)}; expected ${formatJson(ts.shape)})`);
  }
  const s = shape as number[];
  const batching = spec.maxBatchSize > 0;
  const dims = ts.dims;
  if (s.length !== dims.length + (batching ? 1 : 0)) {
    throw badRequest(`inference input "${ts.name}" has shape ${formatJson(s)} but model "${spec.name}" expects ${dims.length + (batching ? 1 : 0)} dimensions: ${formatJson(ts.shape)}`);
  }
  if (batching) {
    if (s[0]! < 1) throw badRequest(`inference input "${ts.name}": the batch size (first dimension) must be at least 1 (got shape ${formatJson(s)})`);
    if (s[0]! > spec.maxBatchSize) {
      throw badRequest(`inference request batch size ${s[0]} for model "${spec.name}" is larger than its max_batch_size ${spec.maxBatchSize} (input "${ts.name}")`);
    }
  }
  const off = batching ? 1 : 0;
  const cap = ts.maxSequenceLength ?? serverCap;
  for (let i = 0; i < dims.length; i++) {
    if (dims[i] !== -1 && s[i + off] !== dims[i]) {
      throw badRequest(`inference input "${ts.name}" has shape ${formatJson(s)}, but model "${spec.name}" expects ${formatJson(ts.shape)} (-1 = any size)`);
    }
    // Refused rather than cut to the most recent elements: the server cannot tell which elements are the
    // most recent without knowing which input holds their times, and a silently shortened sequence
    // gives a different answer than the client asked for. Checked before any element is read.
    if (dims[i] === -1 && cap !== undefined && s[i + off]! > cap) {
      const from = ts.maxSequenceLength !== undefined ? `max_sequence_length:${ts.name} in config.pbtxt` : 'gnnctl serve --max-sequence-length';
      throw badRequest(
        `inference input "${ts.name}" has ${s[i + off]} elements along dimension ${i + off} (shape ${formatJson(s)}), more than its cap of ${cap} (${from}); send the ${cap} most recent`,
      );
    }
  }
  return s.slice();
}

function decodeData(data: unknown, shape: number[], ts: TensorSpec): TensorValues {
  if (!Array.isArray(data)) throw badRequest(`inference input "${ts.name}": "data" must be an array (got ${jsonKind(data)})`);
  let n = 1;
  for (const d of shape) n *= d;
  let flat: unknown[] = data;
  if (data.length > 0 && Array.isArray(data[0])) {
    flat = new Array<unknown>(n);
    let k = 0;
    const walk = (a: unknown, depth: number, path: string): void => {
      if (depth === shape.length) {
        if (Array.isArray(a)) throw badRequest(`inference input "${ts.name}": data${path} is nested deeper than the shape ${formatJson(shape)}`);
        flat[k++] = a;
        return;
      }
      if (!Array.isArray(a)) throw badRequest(`inference input "${ts.name}": data${path} must be an array of ${shape[depth]} for shape ${formatJson(shape)} (got ${jsonKind(a)})`);
      if (a.length !== shape[depth]) {
        throw badRequest(`inference input "${ts.name}": data${path} has ${a.length} elements, but shape ${formatJson(shape)} needs ${shape[depth]} at that level`);
      }
      for (let i = 0; i < a.length; i++) walk(a[i], depth + 1, `${path}[${i}]`);
    };
    walk(data, 0, '');
  } else if (data.length !== n) {
    throw badRequest(`inference input "${ts.name}" has ${data.length} data elements, but its shape ${formatJson(shape)} holds ${n}`);
  }
  return convert(flat, ts.datatype, ts.name, ts.missing);
}

/**
 * Typed elements from JSON values; one tight loop per type. With a missing value (`missing_value:<input>`),
 * `null` elements take it: replaced up front, so the loops stay as they are.
 */
/** What `json_body.ts` turns into a string: an integer literal of 16 or more digits. */
const LONG_INTEGER = /^-?\d{16,}$/;

function convert(a: unknown[], d: V2Datatype, name: string, missingValue?: PadValue): TensorValues {
  const n = a.length;
  if (missingValue !== undefined) {
    for (let i = 0; i < n; i++) {
      if (a[i] === null) {
        // As the loops below read it: 64-bit integers as decimal strings.
        const fill = typeof missingValue === 'bigint' ? String(missingValue) : d === 'BOOL' ? Boolean(missingValue) : missingValue;
        a = a.slice();
        for (let j = i; j < n; j++) if (a[j] === null) a[j] = fill;
        break;
      }
    }
  }
  const bad = (i: number, what: string): HttpError =>
    badRequest(`inference input "${name}": element ${i} is ${formatJson(a[i])}, not ${what} (datatype ${d})`);
  switch (d) {
    case 'FP32':
    case 'FP64': {
      const out = d === 'FP32' ? new Float32Array(n) : new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const v = a[i];
        // An integer literal of 16+ digits arrives as a string (`json_body.ts` keeps int64s exact); as
        // Triton does, a float input takes its nearest value.
        if (typeof v === 'number') out[i] = v;
        else if (typeof v === 'string' && LONG_INTEGER.test(v)) out[i] = Number(v);
        else throw bad(i, 'a number');
      }
      return out;
    }
    case 'INT64':
    case 'UINT64': {
      const out = d === 'INT64' ? new BigInt64Array(n) : new BigUint64Array(n);
      const [lo, hi] = d === 'INT64' ? INT64_RANGE : UINT64_RANGE;
      for (let i = 0; i < n; i++) {
        const v = a[i];
        let b: bigint;
        if (typeof v === 'number') {
          if (!Number.isSafeInteger(v)) throw bad(i, Number.isInteger(v) ? 'an exact integer (write large integers with all their digits, or as a string)' : 'an integer');
          b = BigInt(v);
        } else if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) {
          b = BigInt(v);
        } else {
          throw bad(i, 'an integer');
        }
        if (b < lo || b > hi) throw bad(i, `in range [${lo}, ${hi}]`);
        out[i] = b;
      }
      return out;
    }
    case 'BYTES': {
      const out = new Array<string>(n);
      for (let i = 0; i < n; i++) {
        const v = a[i];
        if (typeof v !== 'string') throw bad(i, 'a string');
        out[i] = v;
      }
      return out;
    }
    case 'BOOL': {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const v = a[i];
        if (typeof v !== 'boolean') throw bad(i, 'true or false');
        out[i] = v ? 1 : 0;
      }
      return out;
    }
    default: {
      const [lo, hi] = intRange(d)!;
      const out = allocValues(d, n) as Exclude<TensorValues, string[] | BigInt64Array | BigUint64Array>;
      for (let i = 0; i < n; i++) {
        const v = a[i];
        if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(i, 'an integer');
        if (v < lo || v > hi) throw bad(i, `in range [${lo}, ${hi}]`);
        out[i] = v;
      }
      return out;
    }
  }
}

/** The outputs asked for (undefined: all) and which of them go back as binary data. */
function requestedOutputs(outputs: unknown, spec: ServedModelSpec, binaryAll: boolean): { names?: string[]; binary: Set<string> } {
  if (outputs === undefined) return { binary: new Set(binaryAll ? spec.outputs.map((o) => o.name) : []) };
  if (!Array.isArray(outputs)) throw badRequest(`"outputs" must be an array of {"name": …} objects (got ${jsonKind(outputs)})`);
  const names: string[] = [];
  const binary = new Set<string>();
  outputs.forEach((o: unknown, i) => {
    if (!isObject(o) || typeof o.name !== 'string') throw badRequest(`outputs[${i}] must be an object with a string "name" (got ${formatJson(o)})`);
    if (!spec.outputByName.has(o.name)) {
      throw badRequest(`unexpected inference output "${o.name}" for model "${spec.name}"; the model's outputs are ${quoteList(spec.outputs.map((s) => s.name))}`);
    }
    if (names.includes(o.name)) throw badRequest(`inference output "${o.name}" is requested more than once`);
    if (o.parameters !== undefined && !isObject(o.parameters)) throw badRequest(`outputs[${i}].parameters must be an object (got ${jsonKind(o.parameters)})`);
    if (o.parameters?.classification !== undefined) {
      throw badRequest(`inference output "${o.name}": the classification extension is not supported by gnnctl serve; ask for the output without "classification" and rank the scores in the client`);
    }
    const own = o.parameters?.binary_data;
    if (own !== undefined && typeof own !== 'boolean') throw badRequest(`outputs[${i}].parameters.binary_data must be true or false (got ${jsonKind(own)})`);
    // An output's own binary_data overrides the request's binary_data_output.
    if (own ?? binaryAll) binary.add(o.name);
    names.push(o.name);
  });
  return { names, binary };
}

function batchKey(spec: ServedModelSpec, inputs: Map<string, HostTensor>): string {
  let key = inputs.size === spec.inputs.length ? '' : [...inputs.keys()].join('\u0000');
  if (!spec.padVariableDims) {
    for (const s of spec.inputs) {
      if (s.variable && inputs.has(s.name)) key += `|${inputs.get(s.name)!.shape.slice(1).join(',')}`;
    }
  }
  return key;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function jsonKind(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${formatJson(v)}`;
}

function formatJson(v: unknown): string {
  const s = v === undefined ? 'undefined' : JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

function quoteList(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.map((n) => `"${n}"`).join(', ');
}
