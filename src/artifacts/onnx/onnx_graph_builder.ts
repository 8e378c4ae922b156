import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ArtifactError, suggest } from '../../core/errors.js';
import { tempSibling, writeFileAtomic } from '../../core/atomic.js';
import { VERSION } from '../../core/version.js';
import { makeAttributeProto, type AttributeValue } from './attributes.js';
import { int64, onnx, type IModelProto, type INodeProto, type ITensorProto, type IValueInfoProto } from './proto.js';
import { makeTensorProto, type TensorSpec } from './tensor.js';
import { ElemType, elemByteSize, elemTypeOf, type Dim, type TensorData } from './types.js';

/** ONNX domain of the classic ML operators (LabelEncoder, …). `''` is the default `ai.onnx` domain. */
export const ML_DOMAIN = 'ai.onnx.ml';

/**
 * Opsets gnnctl writes by default: ONNX 1.12's set (IR version 8, ai.onnx 17, ai.onnx.ml 3), kept
 * for older runtimes although the schema (`artifacts/onnx/onnx.proto`, IR 10) describes newer ones; the
 * models use no field that IR 8 lacks. onnxruntime-node 1.30 runs all of them; LabelEncoder with string→int64 and int64→int64 mappings and
 * `default_int64` works from ai.onnx.ml 2 on (checked in test/artifacts/onnx/lookup.test.ts).
 */
export const DEFAULT_IR_VERSION = 8;
export const DEFAULT_OPSET = 17;
export const DEFAULT_ML_OPSET = 3;

/**
 * Protobuf refuses messages of 2 GiB or more (ORT's parser included). A model whose encoding would
 * reach this must move its large initializers to an external data file.
 */
export const PROTOBUF_LIMIT_BYTES = 2 ** 31 - 1;

/** External tensors start on a page boundary so onnxruntime can memory-map them. */
const EXTERNAL_DATA_ALIGNMENT = 4096;

/** Tensors at least this large move to external data when `toFiles` needs to (onnx's own default). */
const AUTO_EXTERNAL_THRESHOLD_BYTES = 1024;

/**
 * Integer tensors smaller than this always stay inline, whatever the threshold: they may be shape
 * inputs (Reshape's shape, Pad's pads, ReduceSum's axes, …), and onnxruntime's shape inference reads
 * those from the model file only ("Cannot parse data from external tensors" otherwise).
 */
const MIN_EXTERNAL_INTEGER_BYTES = 1024;

/** Room kept under the protobuf limit for everything that is not initializer payload. */
const AUTO_SINGLE_FILE_MARGIN_BYTES = 64 * 2 ** 20;

export interface OnnxGraphBuilderOptions {
  /** Graph name (ONNX `GraphProto.name`). Default `"gnnctl"`. */
  graphName?: string;
  /** ai.onnx opset. Default {@link DEFAULT_OPSET}. */
  opset?: number;
  /** ai.onnx.ml opset, imported only when an `ai.onnx.ml` node is added. Default {@link DEFAULT_ML_OPSET}. */
  mlOpset?: number;
  /** `ModelProto.ir_version`. Default {@link DEFAULT_IR_VERSION}. */
  irVersion?: number;
  /** Default `"gnnctl"` and gnnctl's version. */
  producerName?: string;
  producerVersion?: string;
  /** `ModelProto.domain`, reverse-DNS of the model's namespace. Optional. */
  domain?: string;
  /** `ModelProto.model_version` (an int64). Optional. */
  modelVersion?: number;
  /** Model-level doc string. */
  docString?: string;
}

export interface NodeOptions {
  /** Attributes, each built with `attr.*` so ints and floats are unambiguous. */
  attributes?: Record<string, AttributeValue>;
  /** Operator domain; `''` (ai.onnx) by default, {@link ML_DOMAIN} for LabelEncoder and friends. */
  domain?: string;
  /** Node name (made unique with a suffix if taken); derived from the op type when omitted. */
  name?: string;
  docString?: string;
}

export interface ToFilesOptions {
  /**
   * Initializers whose payload has at least this many bytes go to the external data file.
   * `'auto'` (default): none while the whole model fits under the 2 GiB protobuf limit, otherwise every
   * tensor of 1 KiB or more. `Infinity` never externalizes; `0` externalizes every numeric initializer
   * except integer tensors under 1 KiB, which may be shape inputs that onnxruntime must read inline.
   * String tensors always stay inline (ONNX has no external encoding for them).
   */
  externalDataThreshold?: number | 'auto';
  /**
   * Picks the external initializers by name instead of by size (a caller that knows which tensors grow
   * with the data, e.g. export's entity tables). Small integer tensors and strings stay inline whatever
   * it answers, for the reasons above. Takes precedence over `externalDataThreshold`.
   */
  externalize?: (name: string, bytes: number) => boolean;
  /** File name of the model inside `dir`. Default `model.onnx`; the data file is `<fileName>.data`. */
  fileName?: string;
}

export interface ModelFiles {
  modelPath: string;
  /** Present when at least one tensor was written to external data. */
  dataPath?: string;
  /** Names of the initializers stored externally. */
  externalTensors: string[];
  modelBytes: number;
  dataBytes: number;
}

interface Initializer {
  proto: ITensorProto;
  elemType: ElemType;
  /** Fixed-size payload (absent for STRING tensors and streamed ones). */
  raw?: Uint8Array;
  /** A payload produced at write time by a callback (see `addStreamedInitializer`), always external. */
  stream?: { bytes: number; writer: PayloadWriter };
}

/**
 * Produces a streamed initializer's payload: calls `write` with consecutive little-endian chunks whose
 * lengths add up to exactly the tensor's byte size. Called once, by `writeFiles`, in initializer order.
 */
export type PayloadWriter = (write: (chunk: Uint8Array) => void) => Promise<void> | void;

/**
 * Builds an ONNX model by hand: declared inputs and outputs, initializers from typed arrays, nodes
 * in topological order, opset imports and metadata, serialized with `toBytes()` or written with
 * `toFiles()` (external data for models past the 2 GiB protobuf limit).
 *
 * The builder checks as it goes, so a mistake fails at the call that made it: a node input must name a
 * graph input, an initializer or an earlier node's output; names are unique across the whole graph;
 * declared outputs must be produced by the time the model is serialized.
 *
 * ```ts
 * const g = new OnnxGraphBuilder();
 * const x = g.addInput('x', 'FLOAT', ['batch', 4]);
 * const w = g.constant(new Float32Array(8), [4, 2]);
 * g.addOutput('y', 'FLOAT', ['batch', 2], { from: g.op('MatMul', [x, w]) });
 * const bytes = g.toBytes();
 * ```
 */
export class OnnxGraphBuilder {
  private readonly opts: Required<Pick<OnnxGraphBuilderOptions, 'graphName' | 'irVersion' | 'producerName' | 'producerVersion'>> &
    OnnxGraphBuilderOptions;
  private readonly opsets = new Map<string, number>();
  private readonly usedDomains = new Set<string>(['']);
  private readonly inputs: IValueInfoProto[] = [];
  private readonly outputs: IValueInfoProto[] = [];
  private readonly initializers: Initializer[] = [];
  private readonly nodes: INodeProto[] = [];
  private readonly metadata = new Map<string, string>();
  /** Every name in use: values (inputs, initializers, node outputs) and node names. */
  private readonly taken = new Set<string>();
  /** Values a node may consume, with their element type where the builder knows it. */
  private readonly values = new Map<string, ElemType | undefined>();
  private docString: string | undefined;

  constructor(options: OnnxGraphBuilderOptions = {}) {
    this.opts = {
      graphName: 'gnnctl',
      irVersion: DEFAULT_IR_VERSION,
      producerName: 'gnnctl',
      producerVersion: VERSION,
      ...options,
    };
    this.opsets.set('', options.opset ?? DEFAULT_OPSET);
    this.opsets.set(ML_DOMAIN, options.mlOpset ?? DEFAULT_ML_OPSET);
    this.docString = options.docString;
  }

  /** The opset version the model imports for `domain` (`''` = ai.onnx). */
  opsetVersion(domain = ''): number | undefined {
    return this.opsets.get(domain);
  }

  /** Sets (or adds) the opset version imported for a domain, e.g. a custom operator domain. */
  setOpset(domain: string, version: number): this {
    this.opsets.set(domain, version);
    return this;
  }

  setDocString(doc: string): this {
    this.docString = doc;
    return this;
  }

  /** A `metadata_props` entry (string key/value, readable by any ONNX tool). Later values replace earlier ones. */
  setMetadata(key: string, value: string): this {
    this.metadata.set(key, value);
    return this;
  }

  /**
   * A name not used anywhere in the graph yet, derived from `prefix` (characters other than letters,
   * digits, `_` and `.` become `_`): `prefix`, then `prefix_1`, `prefix_2`, …. The name is reserved.
   */
  uniqueName(prefix: string): string {
    const base = prefix.replace(/[^A-Za-z0-9_.]/g, '_') || 'v';
    let name = base;
    for (let k = 1; this.taken.has(name); k++) name = `${base}_${k}`;
    this.taken.add(name);
    return name;
  }

  /** The element type of a graph input or initializer; `undefined` for node outputs (no shape inference here). */
  elemTypeOf(name: string): ElemType | undefined {
    return this.values.get(name);
  }

  /** Whether `name` is a value nodes can consume. */
  has(name: string): boolean {
    return this.values.has(name);
  }

  /**
   * Declares a graph input. `shape` lists fixed sizes, symbolic names (`'batch'`) or `null`; omit it for
   * an input of unknown rank. Returns the name, for chaining into nodes.
   */
  addInput(name: string, elemType: ElemType, shape?: readonly Dim[], docString?: string): string {
    this.reserve(name, 'input');
    this.inputs.push(valueInfo(name, elemType, shape, docString));
    this.values.set(name, elemType);
    return name;
  }

  /**
   * Declares a graph output. With `from`, an Identity node copies that value to the output name (so a
   * helper's generated name can become `prediction`); without it, a later node must produce `name`.
   */
  addOutput(name: string, elemType: ElemType, shape?: readonly Dim[], options: { from?: string; docString?: string } = {}): string {
    if (this.outputs.some((o) => o.name === name)) throw new Error(`output "${name}" is declared twice`);
    if (options.from !== undefined) {
      this.addNode('Identity', [options.from], [name]);
    } else if (!this.values.has(name)) {
      // Reserve now so nothing else takes the name; a node must still produce it.
      if (this.taken.has(name)) throw new Error(`output "${name}": the name is already used by a node`);
      this.taken.add(name);
    }
    this.outputs.push(valueInfo(name, elemType, shape, options.docString));
    return name;
  }

  /** Adds an initializer under exactly `name` (which must be free). Returns the name. */
  addInitializer(name: string, data: TensorData, dims: readonly number[], options: { elemType?: ElemType; docString?: string } = {}): string {
    this.reserve(name, 'initializer');
    const spec: TensorSpec = { data, dims, elemType: options.elemType };
    const proto = makeTensorProto(name, spec, options.docString);
    const elemType = options.elemType ?? elemTypeOf(data);
    this.initializers.push({ proto, elemType, raw: proto.rawData ?? undefined });
    this.values.set(name, elemType);
    return name;
  }

  /**
   * Adds an initializer whose payload is not held in memory: `writer` produces it chunk by chunk when the
   * model is written with `writeFiles`, straight into the external data file (a 20M × 64 FLOAT entity
   * table is 5 GB: past V8's buffer limits and the 2 GiB protobuf limit alike). Its dims and type are
   * fixed now, so the graph and the shape checks do not need the data. Always stored externally.
   */
  addStreamedInitializer(name: string, elemType: ElemType, dims: readonly number[], writer: PayloadWriter, options: { docString?: string; unique?: boolean } = {}): string {
    if (elemType === 'STRING') throw new Error(`initializer "${name}": STRING tensors cannot be streamed (ONNX has no external encoding for them)`);
    for (const d of dims) if (!Number.isSafeInteger(d) || d < 0) throw new RangeError(`initializer "${name}": dims must be non-negative integers (got [${dims.join(', ')}])`);
    // unique: a fresh name derived from `name` (as `constant` does), e.g. two keys embedding one table.
    if (options.unique) name = this.uniqueName(name);
    else this.reserve(name, 'initializer');
    const proto: ITensorProto = { name, dims: dims.map((d) => int64(d)), dataType: ElemType[elemType] };
    if (options.docString) proto.docString = options.docString;
    const bytes = dims.reduce((n, d) => n * d, 1) * elemByteSize(elemType);
    this.initializers.push({ proto, elemType, stream: { bytes, writer } });
    this.values.set(name, elemType);
    return name;
  }

  /** Adds an initializer under a fresh name derived from `options.name` (default `const`). Returns the name. */
  constant(data: TensorData, dims: readonly number[], options: { name?: string; elemType?: ElemType; docString?: string } = {}): string {
    const name = this.uniqueName(options.name ?? 'const');
    this.taken.delete(name); // addInitializer reserves it again
    return this.addInitializer(name, data, dims, options);
  }

  /**
   * Adds a node. `outputs` is a list of names, or a count of outputs to name automatically
   * (`<opType>_out`, made unique). Inputs must already exist; `''` marks an omitted optional input.
   * Returns the output names.
   */
  addNode(opType: string, inputs: readonly string[], outputs: readonly string[] | number = 1, options: NodeOptions = {}): string[] {
    const domain = options.domain ?? '';
    if (!this.opsets.has(domain)) {
      throw new Error(`node ${opType}: no opset version for domain "${domain}"; call setOpset("${domain}", version) first`);
    }
    for (const input of inputs) {
      if (input !== '' && !this.values.has(input)) {
        throw new Error(`node ${opType}: input "${input}" is not a graph input, an initializer or an earlier node's output; ${suggest(input, [...this.values.keys()])}`);
      }
    }
    const outNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, () => this.uniqueName(`${opType}_out`))
        : outputs.map((o) => {
            this.claimOutputName(o, opType);
            return o;
          });
    const name = this.uniqueName(options.name ?? opType);
    const node: INodeProto = {
      opType,
      name,
      input: [...inputs],
      output: outNames,
      attribute: Object.entries(options.attributes ?? {}).map(([k, v]) => makeAttributeProto(k, v)),
    };
    if (domain !== '') node.domain = domain;
    if (options.docString) node.docString = options.docString;
    this.nodes.push(node);
    this.usedDomains.add(domain);
    for (const o of outNames) this.values.set(o, undefined);
    return outNames;
  }

  /** `addNode` for the common single-output case. Returns the output name. */
  op(opType: string, inputs: readonly string[], attributes?: Record<string, AttributeValue>, options: Omit<NodeOptions, 'attributes'> = {}): string {
    return this.addNode(opType, inputs, 1, { ...options, attributes })[0]!;
  }

  /** Checks what can only be checked at the end: every declared output is produced. */
  validate(): void {
    if (this.outputs.length === 0) throw new Error('the graph declares no outputs');
    for (const o of this.outputs) {
      if (!this.values.has(o.name!)) throw new Error(`output "${o.name}" is declared but no node produces it`);
    }
  }

  /**
   * The ModelProto. `externalize(name, rawBytes)` may return an external-data location for an
   * initializer; its payload is then left out of the proto (used by `toFiles`).
   */
  toModelProto(externalize?: (name: string, bytes: number) => { location: string; offset: number; length: number } | undefined): IModelProto {
    this.validate();
    const initializer = this.initializers.map((init) => {
      const bytes = init.raw?.byteLength ?? init.stream?.bytes;
      const ext = bytes !== undefined ? externalize?.(init.proto.name!, bytes) : undefined;
      if (init.stream && !ext) throw new Error(`initializer "${init.proto.name}" is streamed: write the model with writeFiles`);
      if (!ext) return init.proto;
      const { rawData: _dropped, ...rest } = init.proto;
      return {
        ...rest,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: ext.location },
          { key: 'offset', value: String(ext.offset) },
          { key: 'length', value: String(ext.length) },
        ],
      };
    });
    const opsetImport = [...this.usedDomains].map((domain) => ({ domain, version: int64(this.opsets.get(domain)!) }));
    const model: IModelProto = {
      irVersion: int64(this.opts.irVersion),
      opsetImport,
      producerName: this.opts.producerName,
      producerVersion: this.opts.producerVersion,
      graph: {
        name: this.opts.graphName,
        node: this.nodes,
        initializer,
        input: this.inputs,
        output: this.outputs,
      },
      metadataProps: [...this.metadata].map(([key, value]) => ({ key, value })),
    };
    if (this.opts.domain) model.domain = this.opts.domain;
    if (this.opts.modelVersion !== undefined) model.modelVersion = int64(this.opts.modelVersion);
    if (this.docString) model.docString = this.docString;
    return model;
  }

  /** Bytes of initializer payload (what dominates the model's size), of those `filter` picks by name if given. */
  payloadBytes(filter?: (name: string) => boolean): number {
    return this.initializers.reduce((n, i) => (filter && !filter(i.proto.name!) ? n : n + (i.raw?.byteLength ?? i.stream?.bytes ?? stringBytes(i.proto))), 0);
  }

  /**
   * The serialized model in one buffer. Throws an ArtifactError when it would pass the 2 GiB protobuf
   * limit: write it with `toFiles`, which moves large initializers to external data.
   */
  toBytes(): Uint8Array {
    const payload = this.payloadBytes();
    if (payload >= PROTOBUF_LIMIT_BYTES) {
      throw new ArtifactError('the ONNX model is too large for one protobuf message (2 GiB limit)', {
        value: `${payload} bytes of initializers`,
        hint: 'write it with toFiles(dir), which stores large initializers in model.onnx.data (ONNX external data)',
      });
    }
    return encodeChecked(this.toModelProto());
  }

  /**
   * Writes `<dir>/model.onnx` and, when any initializer is externalized, `<dir>/model.onnx.data`: each
   * external tensor's little-endian bytes at a 4096-aligned offset, referenced from the model by
   * `data_location: EXTERNAL` and `external_data` entries `location` (relative to the model file),
   * `offset` and `length`, as the ONNX external-data spec defines. onnxruntime resolves the location
   * against the model file's folder, so load the model by path. Both files are written atomically,
   * the data file first, so a reader never sees a model whose data is missing.
   */
  toFiles(dir: string, options: ToFilesOptions = {}): ModelFiles {
    if (this.initializers.some((i) => i.stream)) throw new Error('the model has streamed initializers: write it with writeFiles');
    const plan = this.plan(dir, options);
    const dataBytes = plan.chosen.length > 0 ? writeDataFile(plan.dataPath, plan.dataName, plan.locations, (sink) => plan.chosen.forEach((i) => sink.tensor(i.proto.name!, i.raw!))) : 0;
    return this.finish(plan, dataBytes);
  }

  /**
   * `toFiles` for models with streamed initializers (which always go to the data file, each producing its
   * bytes through its writer, in initializer order): memory stays at one chunk whatever the tensors' size.
   */
  async writeFiles(dir: string, options: ToFilesOptions = {}): Promise<ModelFiles> {
    const plan = this.plan(dir, options);
    let dataBytes = 0;
    if (plan.chosen.length > 0) {
      dataBytes = await writeDataFileAsync(plan.dataPath, plan.dataName, plan.locations, async (sink) => {
        for (const init of plan.chosen) {
          const name = init.proto.name!;
          if (!init.stream) {
            sink.tensor(name, init.raw!);
            continue;
          }
          sink.begin(name);
          let written = 0;
          await init.stream.writer((chunk) => {
            written += chunk.byteLength;
            if (written > init.stream!.bytes) throw new ArtifactError(`initializer "${name}": its writer produced more than the ${init.stream!.bytes} bytes its dims announce`, { hint: 'this is a bug in gnnctl' });
            sink.chunk(chunk);
          });
          if (written !== init.stream.bytes) throw new ArtifactError(`initializer "${name}": its writer produced ${written} bytes, its dims announce ${init.stream.bytes}`, { hint: 'this is a bug in gnnctl (or the source file changed while exporting)' });
          sink.end();
        }
      });
    }
    return this.finish(plan, dataBytes);
  }

  /** Which initializers go to the data file, and where the files go. */
  private plan(dir: string, options: ToFilesOptions): { dir: string; modelPath: string; dataPath: string; dataName: string; chosen: Initializer[]; locations: Map<string, { location: string; offset: number; length: number }> } {
    const fileName = options.fileName ?? 'model.onnx';
    if (basename(fileName) !== fileName) throw new Error(`fileName must be a bare file name (got "${fileName}")`);
    const dataName = `${fileName}.data`;
    const threshold = this.resolveThreshold(options.externalDataThreshold ?? 'auto');
    mkdirSync(dir, { recursive: true });
    const pick = options.externalize ?? ((_: string, bytes: number) => bytes >= threshold);
    const chosen = this.initializers.filter((i) => i.stream || (i.raw && pick(i.proto.name!, i.raw.byteLength) && !isShapeCandidate(i)));
    return { dir, modelPath: join(dir, fileName), dataPath: join(dir, dataName), dataName, chosen, locations: new Map() };
  }

  private finish(plan: ReturnType<OnnxGraphBuilder['plan']>, dataBytes: number): ModelFiles {
    const bytes = encodeChecked(this.toModelProto((name) => plan.locations.get(name)));
    writeFileAtomic(plan.modelPath, bytes);
    return {
      modelPath: plan.modelPath,
      dataPath: plan.chosen.length > 0 ? plan.dataPath : undefined,
      externalTensors: [...plan.locations.keys()],
      modelBytes: bytes.byteLength,
      dataBytes,
    };
  }

  private resolveThreshold(t: number | 'auto'): number {
    if (t !== 'auto') {
      if (Number.isNaN(t) || t < 0) throw new RangeError(`externalDataThreshold must be >= 0 or 'auto' (got ${t})`);
      return t;
    }
    return this.payloadBytes() < PROTOBUF_LIMIT_BYTES - AUTO_SINGLE_FILE_MARGIN_BYTES ? Infinity : AUTO_EXTERNAL_THRESHOLD_BYTES;
  }

  private reserve(name: string, what: string): void {
    if (name === '') throw new Error(`${what} names must not be empty`);
    if (this.taken.has(name)) throw new Error(`${what} "${name}": the name is already used in this graph`);
    this.taken.add(name);
  }

  /** A node output may take a name reserved by `addOutput` (the declared output it produces). */
  private claimOutputName(name: string, opType: string): void {
    if (name === '') throw new Error(`node ${opType}: output names must not be empty`);
    const declaredOutput = this.outputs.some((o) => o.name === name);
    if (this.values.has(name) || (this.taken.has(name) && !declaredOutput)) {
      throw new Error(`node ${opType}: output "${name}" is already used in this graph`);
    }
    this.taken.add(name);
  }
}

function valueInfo(name: string, elemType: ElemType, shape: readonly Dim[] | undefined, docString?: string): IValueInfoProto {
  const tensorType: { elemType: number; shape?: { dim: object[] } } = { elemType: ElemType[elemType] };
  if (shape) {
    tensorType.shape = {
      dim: shape.map((d) => {
        if (d === null) return {};
        if (typeof d === 'string') return { dimParam: d };
        if (!Number.isInteger(d) || d < 0) throw new RangeError(`value "${name}": fixed dims must be non-negative integers (got ${d})`);
        return { dimValue: int64(d) };
      }),
    };
  }
  const info: IValueInfoProto = { name, type: { tensorType } };
  if (docString) info.docString = docString;
  return info;
}

function isShapeCandidate(i: Initializer): boolean {
  const integer = i.elemType === 'INT64' || i.elemType === 'INT32' || i.elemType === 'UINT64' || i.elemType === 'UINT32';
  return integer && i.raw!.byteLength < MIN_EXTERNAL_INTEGER_BYTES;
}

function stringBytes(t: ITensorProto): number {
  return (t.stringData ?? []).reduce((n, s) => n + s.byteLength + 2, 0);
}

function encodeChecked(model: IModelProto): Uint8Array {
  const bytes = onnx.ModelProto.encode(model).finish();
  if (bytes.byteLength >= PROTOBUF_LIMIT_BYTES) {
    throw new ArtifactError('the encoded ONNX model is over the 2 GiB protobuf limit', {
      value: `${bytes.byteLength} bytes`,
      hint: 'lower externalDataThreshold so more initializers go to model.onnx.data',
    });
  }
  return bytes;
}

/** Appends tensors to an external data file, each at a 4096-aligned offset, recording where each went. */
class DataSink {
  bytes = 0;
  private current: { name: string; offset: number } | null = null;
  constructor(
    private readonly fd: number,
    private readonly location: string,
    private readonly locations: Map<string, { location: string; offset: number; length: number }>,
  ) {}

  begin(name: string): void {
    const pad = (EXTERNAL_DATA_ALIGNMENT - (this.bytes % EXTERNAL_DATA_ALIGNMENT)) % EXTERNAL_DATA_ALIGNMENT;
    if (pad > 0) writeAll(this.fd, new Uint8Array(pad));
    this.bytes += pad;
    this.current = { name, offset: this.bytes };
  }

  chunk(bytes: Uint8Array): void {
    writeAll(this.fd, bytes);
    this.bytes += bytes.byteLength;
  }

  end(): void {
    const c = this.current!;
    this.locations.set(c.name, { location: this.location, offset: c.offset, length: this.bytes - c.offset });
    this.current = null;
  }

  tensor(name: string, raw: Uint8Array): void {
    this.begin(name);
    this.chunk(raw);
    this.end();
  }
}

/** Writes the data file under a temporary name and renames it when complete; returns its size. */
function writeDataFile(path: string, location: string, locations: Map<string, { location: string; offset: number; length: number }>, fill: (sink: DataSink) => void): number {
  const tmp = tempSibling(path);
  const fd = openSync(tmp, 'w');
  try {
    const sink = new DataSink(fd, location, locations);
    fill(sink);
    closeSync(fd);
    renameSync(tmp, path);
    return sink.bytes;
  } catch (e) {
    closeQuietly(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
}

async function writeDataFileAsync(path: string, location: string, locations: Map<string, { location: string; offset: number; length: number }>, fill: (sink: DataSink) => Promise<void>): Promise<number> {
  const tmp = tempSibling(path);
  const fd = openSync(tmp, 'w');
  try {
    const sink = new DataSink(fd, location, locations);
    await fill(sink);
    closeSync(fd);
    renameSync(tmp, path);
    return sink.bytes;
  } catch (e) {
    closeQuietly(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off);
}
