/**
 * Triton's `config.pbtxt`: a typed `TritonModelConfig`, a writer that prints protobuf text format the
 * way Triton's documentation shows it, and a text-format parser that validates every field name, enum
 * value and scalar against the real `inference.ModelConfig` schema (loaded with protobufjs reflection
 * from `model_config_proto.ts`).
 *
 * Field names are the proto's own snake_case names, as in `config.pbtxt` and in Triton's JSON model
 * configuration (`GET /v2/models/{name}/config`), so the object, the file and the HTTP answer read alike.
 * Enum values are their names (`'TYPE_FP32'`), 64-bit integers are JavaScript numbers (gnnctl refuses
 * values beyond 2^53 rather than rounding them), maps are plain objects.
 */
import protobuf from 'protobufjs';
import { ConfigError, formatValue, suggest, type ConfigProblem } from '../../core/errors.js';
import { MODEL_CONFIG_PROTO } from './model_config_proto.js';

// ---------------------------------------------------------------------------------------------
// Types

export type TritonDataType =
  | 'TYPE_INVALID'
  | 'TYPE_BOOL'
  | 'TYPE_UINT8'
  | 'TYPE_UINT16'
  | 'TYPE_UINT32'
  | 'TYPE_UINT64'
  | 'TYPE_INT8'
  | 'TYPE_INT16'
  | 'TYPE_INT32'
  | 'TYPE_INT64'
  | 'TYPE_FP16'
  | 'TYPE_FP32'
  | 'TYPE_FP64'
  | 'TYPE_STRING'
  | 'TYPE_BF16';

/** A sub-message gnnctl does not model in detail (validated against the schema all the same). */
export type ProtoMessage = Record<string, unknown>;

export interface TritonTensorReshape {
  shape: number[];
}

export interface TritonModelInput {
  name: string;
  data_type: TritonDataType;
  /** Shape without the batch dimension when `max_batch_size > 0`; `-1` for a variable dimension. */
  dims: number[];
  format?: 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
  reshape?: TritonTensorReshape;
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface TritonModelOutput {
  name: string;
  data_type: TritonDataType;
  dims: number[];
  reshape?: TritonTensorReshape;
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface TritonQueuePolicy {
  timeout_action?: 'REJECT' | 'DELAY';
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

export interface TritonDynamicBatching {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: TritonQueuePolicy;
  /** Keyed by priority level (a uint64, as a decimal string). */
  priority_queue_policy?: Record<string, TritonQueuePolicy>;
}

export interface TritonInstanceGroup {
  name?: string;
  kind?: 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
  count?: number;
  rate_limiter?: ProtoMessage;
  gpus?: number[];
  secondary_devices?: ProtoMessage[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
}

/** Exactly one of `latest`, `all`, `specific` (a oneof in the schema). */
export type TritonVersionPolicy =
  | { latest: { num_versions?: number } }
  | { all: Record<string, never> }
  | { specific: { versions?: number[] } };

export interface TritonModelParameter {
  string_value: string;
}

/**
 * `inference.ModelConfig`. Every field is optional, as in proto3 (an absent field means its default:
 * 0, "", false, the first enum value, empty list). Fields gnnctl writes are typed in detail; the rest
 * are kept as parsed so a Triton user's config survives a read and a write.
 */
export interface TritonModelConfig {
  name?: string;
  /** `"onnxruntime_onnx"` for gnnctl's exports. */
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: TritonVersionPolicy;
  max_batch_size?: number;
  input?: TritonModelInput[];
  output?: TritonModelOutput[];
  batch_input?: ProtoMessage[];
  batch_output?: ProtoMessage[];
  optimization?: ProtoMessage;
  /** One of `dynamic_batching`, `sequence_batching`, `ensemble_scheduling` (a oneof). */
  dynamic_batching?: TritonDynamicBatching;
  sequence_batching?: ProtoMessage;
  ensemble_scheduling?: ProtoMessage;
  instance_group?: TritonInstanceGroup[];
  default_model_filename?: string;
  cc_model_filenames?: Record<string, string>;
  metric_tags?: Record<string, string>;
  parameters?: Record<string, TritonModelParameter>;
  model_warmup?: ProtoMessage[];
  model_operations?: ProtoMessage;
  model_transaction_policy?: ProtoMessage;
  model_repository_agents?: ProtoMessage;
  response_cache?: ProtoMessage;
  model_metrics?: ProtoMessage;
}

export interface ParseModelConfigOptions {
  /** The file the text came from, named in errors. Default `config.pbtxt`. */
  file?: string;
}

// ---------------------------------------------------------------------------------------------
// Schema: protobufjs reflection flattened into what the parser and the writer need

type ScalarType = 'double' | 'float' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'sint32' | 'sint64' | 'fixed32' | 'fixed64' | 'sfixed32' | 'sfixed64' | 'bool' | 'string' | 'bytes';

interface FieldSpec {
  name: string;
  kind: 'scalar' | 'enum' | 'message';
  scalar?: ScalarType;
  enumType?: protobuf.Enum;
  /** Resolved lazily: message types nest and may recurse. */
  message?: () => MessageSpec;
  repeated: boolean;
  map?: { key: FieldSpec; value: FieldSpec };
  oneof?: string;
}

interface MessageSpec {
  /** Short name for messages (`ModelInput`), and `parameters entry` for map entries. */
  name: string;
  fields: Map<string, FieldSpec>;
}

let modelConfigSpec: MessageSpec | undefined;

/** The `inference.ModelConfig` schema (parsed once). */
function schema(): MessageSpec {
  if (!modelConfigSpec) {
    const root = protobuf.parse(MODEL_CONFIG_PROTO, { keepCase: true }).root;
    root.resolveAll();
    modelConfigSpec = messageSpec(root.lookupType('inference.ModelConfig'), new Map());
  }
  return modelConfigSpec;
}

function messageSpec(type: protobuf.Type, cache: Map<protobuf.Type, MessageSpec>): MessageSpec {
  const hit = cache.get(type);
  if (hit) return hit;
  const spec: MessageSpec = { name: type.name, fields: new Map() };
  cache.set(type, spec);
  for (const f of type.fieldsArray) {
    if (f instanceof protobuf.MapField) {
      const key = valueSpec('key', f.keyType, null, cache);
      const value = valueSpec('value', f.type, f.resolvedType, cache);
      const entry: MessageSpec = { name: `${f.name} entry`, fields: new Map([['key', key], ['value', value]]) };
      spec.fields.set(f.name, { name: f.name, kind: 'message', message: () => entry, repeated: true, map: { key, value } });
    } else {
      const fs = valueSpec(f.name, f.type, f.resolvedType, cache);
      fs.repeated = f.repeated;
      if (f.partOf) fs.oneof = f.partOf.name;
      spec.fields.set(f.name, fs);
    }
  }
  return spec;
}

function valueSpec(name: string, typeName: string, resolved: protobuf.Type | protobuf.Enum | null, cache: Map<protobuf.Type, MessageSpec>): FieldSpec {
  if (resolved instanceof protobuf.Enum) return { name, kind: 'enum', enumType: resolved, repeated: false };
  if (resolved instanceof protobuf.Type) {
    let memo: MessageSpec | undefined;
    return { name, kind: 'message', message: () => (memo ??= messageSpec(resolved, cache)), repeated: false };
  }
  return { name, kind: 'scalar', scalar: typeName as ScalarType, repeated: false };
}

function typeLabel(f: FieldSpec): string {
  if (f.kind === 'enum') return `enum ${f.enumType!.name}`;
  if (f.kind === 'message') return `message ${f.message!().name}`;
  return f.scalar!;
}

// ---------------------------------------------------------------------------------------------
// Scalars shared by the parser and the writer

const INT_RANGES: Partial<Record<ScalarType, [bigint, bigint]>> = {
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

/** Checks an integer against its field type; returns a problem message or the JS number. */
function checkInteger(v: bigint, t: ScalarType): string | number {
  const [lo, hi] = INT_RANGES[t]!;
  if (v < lo || v > hi) return `${v} is out of range for ${t} [${lo}, ${hi}]`;
  if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER)) {
    return `${v} is beyond ±2^53, which gnnctl cannot represent exactly`;
  }
  return Number(v);
}

const ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A double-quoted text-format string. Quotes, backslashes and control characters are escaped (C
 * escapes, else 3-digit octal); other text, non-ASCII included, is written as UTF-8, which protobuf's
 * text parser reads as is.
 */
function quote(s: string): string {
  return `"${s.replace(/[\\"\x00-\x1f\x7f]/g, (c) => ESCAPES[c] ?? `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`)}"`;
}

function formatFloat(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// Writer

/**
 * Prints a model configuration as protobuf text format, in the style of Triton's documentation:
 * fields in schema order, repeated scalars as `dims: [ 16, -1 ]`, repeated messages as
 * `input [ { … }, { … } ]`, maps as one `parameters { key: … value { … } }` block per entry, two-space
 * indentation, enums as bare names, strings double-quoted with C escapes. Unset (undefined) fields are
 * left out; an empty list is written as `[ ]`. Throws a ConfigError listing every field the schema does not know or whose value has the
 * wrong type (`cfg` may come from untyped JSON).
 */
export function writeModelConfig(cfg: TritonModelConfig): string {
  const problems: ConfigProblem[] = [];
  const lines: string[] = [];
  writeMessage(schema(), cfg as ProtoMessage, '', 0, lines, problems);
  if (problems.length > 0) throw configError('cannot write Triton model config', problems, 'TritonModelConfig');
  return `${lines.join('\n')}\n`;
}

function writeMessage(spec: MessageSpec, obj: ProtoMessage, path: string, depth: number, lines: string[], problems: ConfigProblem[]): void {
  const pad = '  '.repeat(depth);
  for (const key of Object.keys(obj)) {
    if (!spec.fields.has(key) && obj[key] !== undefined) {
      problems.push({ path: join(path, key), message: `unknown field "${key}" in ${spec.name}; ${suggest(key, [...spec.fields.keys()])}` });
    }
  }
  const oneofSet = new Map<string, string>();
  for (const f of spec.fields.values()) {
    const v = obj[f.name];
    if (v === undefined || v === null) continue;
    const p = join(path, f.name);
    if (f.oneof) {
      const other = oneofSet.get(f.oneof);
      if (other) problems.push({ path: p, message: `"${f.name}" and "${other}" are both set, but they belong to the oneof "${f.oneof}"` });
      oneofSet.set(f.oneof, f.name);
    }
    if (f.map) {
      if (typeof v !== 'object' || Array.isArray(v)) {
        problems.push({ path: p, message: `expected an object (map of ${f.map.key.scalar} to ${typeLabel(f.map.value)})`, hint: `got ${formatValue(v)}` });
        continue;
      }
      for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
        if (val === undefined) continue;
        const keyText = f.map.key.scalar === 'string' ? quote(k) : formatScalarForWrite(f.map.key, /^-?\d+$/.test(k) ? Number(k) : k, `${p}[${k}]`, problems);
        lines.push(`${pad}${f.name} {`);
        lines.push(`${pad}  key: ${keyText}`);
        writeSingle(f.map.value, val, `${p}[${quote(k)}]`, depth + 1, lines, problems);
        lines.push(`${pad}}`);
      }
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(v)) {
        problems.push({ path: p, message: `expected a list for repeated field "${f.name}"`, hint: `got ${formatValue(v)}` });
        continue;
      }
      if (f.kind === 'message' && v.length === 0) {
        lines.push(`${pad}${f.name} [ ]`);
      } else if (f.kind === 'message') {
        lines.push(`${pad}${f.name} [`);
        v.forEach((item, i) => {
          lines.push(`${pad}  {`);
          if (isPlainObject(item)) writeMessage(f.message!(), item, `${p}[${i}]`, depth + 2, lines, problems);
          else problems.push({ path: `${p}[${i}]`, message: `expected a ${f.message!().name} object`, hint: `got ${formatValue(item)}` });
          lines.push(`${pad}  }${i < v.length - 1 ? ',' : ''}`);
        });
        lines.push(`${pad}]`);
      } else {
        const items = v.map((item, i) => formatScalarForWrite(f, item, `${p}[${i}]`, problems));
        lines.push(items.length === 0 ? `${pad}${f.name}: [ ]` : `${pad}${f.name}: [ ${items.join(', ')} ]`);
      }
      continue;
    }
    writeSingle(f, v, p, depth, lines, problems);
  }
}

function writeSingle(f: FieldSpec, v: unknown, path: string, depth: number, lines: string[], problems: ConfigProblem[]): void {
  const pad = '  '.repeat(depth);
  if (f.kind === 'message') {
    if (!isPlainObject(v)) {
      problems.push({ path, message: `expected a ${f.message!().name} object`, hint: `got ${formatValue(v)}` });
      return;
    }
    const inner: string[] = [];
    writeMessage(f.message!(), v, path, depth + 1, inner, problems);
    if (inner.length === 0) lines.push(`${pad}${f.name} {}`);
    else lines.push(`${pad}${f.name} {`, ...inner, `${pad}}`);
    return;
  }
  lines.push(`${pad}${f.name}: ${formatScalarForWrite(f, v, path, problems)}`);
}

function formatScalarForWrite(f: FieldSpec, v: unknown, path: string, problems: ConfigProblem[]): string {
  const bad = (what: string): string => {
    problems.push({ path, message: `expected ${what} for ${f.name}`, hint: `got ${formatValue(v)}` });
    return '?';
  };
  if (f.kind === 'enum') {
    const e = f.enumType!;
    if (typeof v === 'string' && v in e.values) return v;
    if (typeof v === 'number' && e.valuesById[v] !== undefined) return e.valuesById[v]!;
    problems.push({ path, message: `invalid value ${formatValue(v)} for enum ${e.name}`, hint: suggest(String(v), Object.keys(e.values)) });
    return '?';
  }
  const t = f.scalar!;
  if (t === 'string' || t === 'bytes') return typeof v === 'string' ? quote(v) : bad('a string');
  if (t === 'bool') return typeof v === 'boolean' ? String(v) : bad('true or false');
  if (t === 'float' || t === 'double') return typeof v === 'number' ? formatFloat(v) : bad('a number');
  if (typeof v !== 'number' || !Number.isInteger(v)) return bad(`an integer (${t})`);
  const checked = checkInteger(BigInt(v), t);
  if (typeof checked === 'string') {
    problems.push({ path, message: checked });
    return '?';
  }
  return String(v);
}

function isPlainObject(v: unknown): v is ProtoMessage {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function join(path: string, field: string): string {
  return path ? `${path}.${field}` : field;
}

// ---------------------------------------------------------------------------------------------
// Parser

/**
 * Parses a `config.pbtxt` (protobuf text format) into a TritonModelConfig, checking it against the
 * `inference.ModelConfig` schema.
 *
 * Accepted, as protobuf's own text parser accepts it: `#` comments; `field: value`; `field { … }`,
 * `field: { … }` and `field < … >`; repeated fields as repeated entries and/or `[a, b]` lists (also
 * lists of messages: `input [ { … }, { … } ]`); `,` or `;` after a field; decimal, hex (`0x1f`) and
 * octal (`017`) integers, floats (`1.5`, `1e-3`, `2f`, `inf`, `nan`), negative numbers; strings in single
 * or double quotes with C escapes (`\n`, `\"`, `\x41`, `\101`, `\u00e9`), adjacent strings concatenated;
 * enums by name or number; booleans as `true`/`false`/`True`/`t`/`1`/…; map fields as
 * `parameters { key: "x" value: { string_value: "y" } }` (repeated blocks, or a list of them).
 *
 * Rejected, each with its line and column: unknown field names (with a "did you mean"), enum values
 * not in the enum, values of the wrong type or out of range, a non-repeated field given twice or as a
 * list, two members of one oneof, and syntax errors (unclosed braces, unterminated strings, stray
 * tokens). Schema problems are collected and reported together; a syntax error stops the parse.
 * Errors are ConfigErrors whose `problems` carry path, line and column and whose `where` is the file.
 *
 * The result has the fields the text sets (proto3: absent means default; an explicit `[ ]` is kept as
 * an empty list), except that every `input` and `output` entry gets `name`, `data_type` and `dims`
 * (`""`, `TYPE_INVALID`, `[]` when absent) and a `reshape` gets `shape` (`[]`).
 */
export function parseModelConfig(text: string, options: ParseModelConfigOptions = {}): TritonModelConfig {
  const file = options.file ?? 'config.pbtxt';
  const parser = new TextFormatParser(text, file);
  const obj = parser.parseTopLevel(schema());
  if (parser.problems.length > 0) throw configError('invalid Triton model config', parser.problems, file);
  for (const io of [...((obj.input as ProtoMessage[] | undefined) ?? []), ...((obj.output as ProtoMessage[] | undefined) ?? [])]) {
    io.name ??= '';
    io.data_type ??= 'TYPE_INVALID';
    io.dims ??= [];
    if (isPlainObject(io.reshape)) io.reshape.shape ??= [];
  }
  return obj as TritonModelConfig;
}

function configError(what: string, problems: ConfigProblem[], where: string): ConfigError {
  const first = problems[0]!;
  const at = first.line !== undefined ? `line ${first.line}, col ${first.col}: ` : '';
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return new ConfigError(`${what}: ${at}${first.path ? `${first.path}: ` : ''}${first.message}${more}`, problems, { where });
}

type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'punct' | 'eof';

interface Token {
  kind: TokenKind;
  /** Source text (for strings: the decoded value). */
  text: string;
  line: number;
  col: number;
}

const IDENT_RE = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER_RE = /0[xX][0-9A-Fa-f]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?/y;

/**
 * A recursive-descent parser over a lazily scanned token stream, driven by the schema: the field's
 * declared type decides how its value is read, so a value of the wrong type is reported where it is.
 */
class TextFormatParser {
  readonly problems: ConfigProblem[] = [];
  private pos = 0;
  private line = 1;
  private col = 1;
  private lookahead: Token | undefined;

  constructor(
    private readonly text: string,
    private readonly file: string,
  ) {}

  parseTopLevel(spec: MessageSpec): ProtoMessage {
    return this.parseFields(spec, '', null);
  }

  // -- scanning ------------------------------------------------------------------------------

  private peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  private next(): Token {
    const t = this.peek();
    this.lookahead = undefined;
    return t;
  }

  private advance(n: number): void {
    for (let i = 0; i < n; i++) {
      if (this.text[this.pos] === '\n') {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
      this.pos++;
    }
  }

  private scan(): Token {
    // Whitespace and # comments.
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) return { kind: 'eof', text: '', line: this.line, col: this.col };
      if (c === '#') {
        while (this.pos < this.text.length && this.text[this.pos] !== '\n') this.advance(1);
      } else if (/\s/.test(c)) {
        this.advance(1);
      } else {
        break;
      }
    }
    const line = this.line;
    const col = this.col;
    const c = this.text[this.pos]!;
    if (/[A-Za-z_]/.test(c)) {
      const word = this.match(IDENT_RE)!;
      this.advance(word.length);
      return { kind: 'ident', text: word, line, col };
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(this.text[this.pos + 1] ?? ''))) {
      const num = this.match(NUMBER_RE)!;
      const after = this.text[this.pos + num.length];
      if (after !== undefined && /[A-Za-z0-9_.]/.test(after)) this.syntax(`malformed number "${num}${after}"`, line, col);
      if (/^0[0-9]+$/.test(num) && !/^0[0-7]+$/.test(num)) this.syntax(`malformed number "${num}" (a leading 0 makes it octal)`, line, col);
      this.advance(num.length);
      const isInt = /^(?:0[xX][0-9A-Fa-f]+|[0-9]+)$/.test(num);
      return { kind: isInt ? 'int' : 'float', text: num, line, col };
    }
    if (c === '"' || c === "'") return this.scanString(c, line, col);
    if ('{}<>[]:,;-'.includes(c)) {
      this.advance(1);
      return { kind: 'punct', text: c, line, col };
    }
    return this.syntax(`unexpected character ${JSON.stringify(c)}`, line, col);
  }

  private match(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    return re.exec(this.text)?.[0];
  }

  private scanString(q: string, line: number, col: number): Token {
    const bytes: number[] = [];
    const enc = new TextEncoder();
    this.advance(1);
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined || c === '\n') this.syntax('unterminated string (strings cannot span lines)', line, col);
      if (c === q) {
        this.advance(1);
        break;
      }
      if (c !== '\\') {
        const cp = this.text.codePointAt(this.pos)!;
        const ch = String.fromCodePoint(cp);
        bytes.push(...enc.encode(ch));
        this.advance(ch.length);
        continue;
      }
      const e = this.text[this.pos + 1];
      const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, "'": 39, '"': 34, '?': 63 };
      if (e !== undefined && e in simple) {
        bytes.push(simple[e]!);
        this.advance(2);
      } else if (e !== undefined && /[0-7]/.test(e)) {
        const m = /^[0-7]{1,3}/.exec(this.text.slice(this.pos + 1))!;
        const v = parseInt(m[0], 8);
        if (v > 255) this.syntax(`octal escape \\${m[0]} is above \\377`, this.line, this.col);
        bytes.push(v);
        this.advance(1 + m[0].length);
      } else if (e === 'x' || e === 'X') {
        const m = /^[0-9A-Fa-f]{1,2}/.exec(this.text.slice(this.pos + 2));
        if (!m) this.syntax('\\x escape needs hex digits', this.line, this.col);
        bytes.push(parseInt(m[0], 16));
        this.advance(2 + m[0].length);
      } else if (e === 'u' || e === 'U') {
        const n = e === 'u' ? 4 : 8;
        const m = new RegExp(`^[0-9A-Fa-f]{${n}}`).exec(this.text.slice(this.pos + 2));
        if (!m) this.syntax(`\\${e} escape needs ${n} hex digits`, this.line, this.col);
        const cp = parseInt(m[0], 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) this.syntax(`\\${e}${m[0]} is not a Unicode scalar value`, this.line, this.col);
        bytes.push(...enc.encode(String.fromCodePoint(cp)));
        this.advance(2 + n);
      } else {
        this.syntax(`unknown escape sequence \\${e ?? ''}`, this.line, this.col);
      }
    }
    let value: string;
    try {
      value = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
    } catch {
      return this.syntax('string is not valid UTF-8 (escapes produce bytes, and they must form UTF-8 text)', line, col);
    }
    return { kind: 'string', text: value, line, col };
  }

  // -- errors --------------------------------------------------------------------------------

  /** A syntax error ends the parse: it throws with every problem found so far plus this one. */
  private syntax(message: string, line: number, col: number, path = ''): never {
    this.problems.push({ path, message, line, col });
    throw configError('invalid Triton model config', this.problems, this.file);
  }

  private problem(path: string, message: string, at: Token, hint?: string): void {
    this.problems.push({ path, message, line: at.line, col: at.col, ...(hint ? { hint } : {}) });
  }

  private describe(t: Token): string {
    if (t.kind === 'eof') return 'the end of the file';
    if (t.kind === 'string') return `string ${JSON.stringify(t.text)}`;
    return `"${t.text}"`;
  }

  private isPunct(t: Token, ...ps: string[]): boolean {
    return t.kind === 'punct' && ps.includes(t.text);
  }

  // -- messages ------------------------------------------------------------------------------

  /** Fields until `close` (`}` or `>`), or until the end of the file at top level (`close` null). */
  private parseFields(spec: MessageSpec, path: string, open: { close: string; token: Token } | null): ProtoMessage {
    const obj: ProtoMessage = {};
    const setAt = new Map<string, Token>();
    const oneofs = new Map<string, string>();
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') {
        if (open) this.syntax(`unclosed "${open.token.text}": reached the end of the file before the matching "${open.close}"`, open.token.line, open.token.col, path);
        return obj;
      }
      if (this.isPunct(t, '}', '>')) {
        if (open && t.text === open.close) {
          this.next();
          return obj;
        }
        this.syntax(open ? `expected "${open.close}" to close the "${open.token.text}" at line ${open.token.line}, col ${open.token.col}, found "${t.text}"` : `unexpected "${t.text}" with no open "{"`, t.line, t.col, path);
      }
      if (this.isPunct(t, '[')) this.syntax('extension and Any fields ([...]) are not part of a Triton model config', t.line, t.col, path);
      if (t.kind !== 'ident') this.syntax(`expected a field name, found ${this.describe(t)}`, t.line, t.col, path);
      this.next();
      const field = spec.fields.get(t.text);
      const fpath = join(path, t.text);
      if (!field) {
        this.problem(fpath, `unknown field "${t.text}" in ${spec.name}`, t, suggest(t.text, [...spec.fields.keys()]));
        this.skipFieldValue(fpath);
      } else {
        if (!field.repeated) {
          const prev = setAt.get(field.name);
          if (prev) this.problem(fpath, `field "${field.name}" is set more than once (first at line ${prev.line}, col ${prev.col}); it is not repeated`, t);
          setAt.set(field.name, t);
        }
        if (field.oneof) {
          const other = oneofs.get(field.oneof);
          if (other && other !== field.name) this.problem(fpath, `"${field.name}" is set along with "${other}", but only one member of the oneof "${field.oneof}" may be`, t);
          oneofs.set(field.oneof, field.name);
        }
        this.parseFieldValue(field, obj, fpath);
      }
      const sep = this.peek();
      if (this.isPunct(sep, ',', ';')) this.next();
    }
  }

  private parseFieldValue(field: FieldSpec, obj: ProtoMessage, path: string): void {
    const isMessage = field.kind === 'message';
    let t = this.peek();
    if (this.isPunct(t, ':')) {
      this.next();
      t = this.peek();
    } else if (!isMessage) {
      if (this.isPunct(t, '{', '<')) {
        this.problem(path, `"${field.name}" is a ${typeLabel(field)} value, not a message`, t);
        this.skipValue(path);
        return;
      }
      this.syntax(`expected ":" after field name "${field.name}", found ${this.describe(t)}`, t.line, t.col, path);
    }
    if (this.isPunct(t, '[')) {
      const open = this.next();
      if (!field.repeated) this.problem(path, `"${field.name}" is not a repeated field, so it cannot take a [ ] list`, open);
      // An explicit empty list is kept as one (`reshape: { shape: [ ] }` means "reshape to a scalar").
      else obj[field.name] ??= field.map ? {} : [];
      let i = 0;
      for (;;) {
        const n = this.peek();
        if (this.isPunct(n, ']')) {
          this.next();
          return;
        }
        const unclosed = () => this.syntax(`unclosed "[": reached the end of the file before the matching "]"`, open.line, open.col, path);
        if (n.kind === 'eof') unclosed();
        this.parseOneValue(field, obj, `${path}[${i++}]`);
        const sep = this.peek();
        if (sep.kind === 'eof') unclosed();
        if (this.isPunct(sep, ',')) this.next();
        else if (!this.isPunct(sep, ']')) this.syntax(`expected "," or "]" in the list of "${field.name}", found ${this.describe(sep)}`, sep.line, sep.col, path);
      }
    }
    this.parseOneValue(field, obj, field.repeated ? `${path}[${this.count(obj, field)}]` : path);
  }

  private count(obj: ProtoMessage, field: FieldSpec): number {
    const v = obj[field.name];
    return Array.isArray(v) ? v.length : v && typeof v === 'object' ? Object.keys(v).length : 0;
  }

  /** One value of `field` (one list element for repeated fields), stored into `obj`. */
  private parseOneValue(field: FieldSpec, obj: ProtoMessage, path: string): void {
    let value: unknown;
    if (field.kind === 'message') {
      const t = this.peek();
      if (!this.isPunct(t, '{', '<')) {
        this.problem(path, `"${field.name}" is a ${typeLabel(field)}; expected "{" to start it, found ${this.describe(t)}`, t);
        this.skipValue(path);
        return;
      }
      this.next();
      value = this.parseFields(field.message!(), path, { close: t.text === '{' ? '}' : '>', token: t });
    } else {
      value = this.parseScalar(field, path);
    }
    if (value === undefined) return;
    if (field.map) {
      const entry = value as ProtoMessage;
      const map = (obj[field.name] ??= {}) as Record<string, unknown>;
      // proto3 map semantics: a missing key or value is the default; a repeated key keeps the last value.
      const key = entry.key ?? (field.map.key.scalar === 'string' ? '' : 0);
      map[String(key)] = entry.value ?? defaultValue(field.map.value);
    } else if (field.repeated) {
      ((obj[field.name] ??= []) as unknown[]).push(value);
    } else {
      obj[field.name] = value;
    }
  }

  /** A scalar or enum value; undefined (after recording a problem) when it does not fit the field. */
  private parseScalar(field: FieldSpec, path: string): unknown {
    let t = this.next();
    let negative = false;
    const start = t;
    if (this.isPunct(t, '-')) {
      negative = true;
      t = this.next();
    }
    const got = () => `${negative ? '-' : ''}${t.kind === 'string' ? JSON.stringify(t.text) : t.text}`;
    if (t.kind === 'eof' || (t.kind === 'punct' && !negative)) this.syntax(`expected a value for "${field.name}", found ${this.describe(t)}`, t.line, t.col, path);
    if (t.kind === 'punct') this.syntax(`expected a number after "-", found ${this.describe(t)}`, t.line, t.col, path);

    if (field.kind === 'enum') {
      const e = field.enumType!;
      if (t.kind === 'ident' && !negative) {
        if (t.text in e.values) return t.text;
        this.problem(path, `invalid value ${t.text} for enum ${e.name} (field "${field.name}")`, t, suggest(t.text, Object.keys(e.values)));
        return undefined;
      }
      if (t.kind === 'int') {
        const n = parseIntLiteral(t.text) * (negative ? -1n : 1n);
        const name = e.valuesById[Number(n)];
        if (name !== undefined) return name;
        this.problem(path, `${n} is not a value of enum ${e.name} (field "${field.name}")`, start, `valid values: ${Object.keys(e.values).join(', ')}`);
        return undefined;
      }
      this.problem(path, `expected an enum ${e.name} value for "${field.name}", found ${got()}`, start, `valid values: ${Object.keys(e.values).join(', ')}`);
      return undefined;
    }

    const type = field.scalar!;
    const wrong = (what: string) => {
      this.problem(path, `expected ${what} for "${field.name}" (${type}), found ${got()}`, start);
      return undefined;
    };
    if (type === 'string' || type === 'bytes') {
      if (t.kind !== 'string' || negative) return wrong('a quoted string');
      let s = t.text;
      while (this.peek().kind === 'string') s += this.next().text; // "a" "b" is "ab"
      return s;
    }
    if (type === 'bool') {
      if (negative) return wrong('true or false');
      if (t.kind === 'ident' && ['true', 'True', 't'].includes(t.text)) return true;
      if (t.kind === 'ident' && ['false', 'False', 'f'].includes(t.text)) return false;
      if (t.kind === 'int' && (t.text === '1' || t.text === '0')) return t.text === '1';
      return wrong('true or false');
    }
    if (type === 'float' || type === 'double') {
      const sign = negative ? -1 : 1;
      if (t.kind === 'int') return sign * Number(parseIntLiteral(t.text));
      if (t.kind === 'float') return sign * Number(t.text.replace(/[fF]$/, ''));
      if (t.kind === 'ident') {
        const w = t.text.toLowerCase();
        if (w === 'inf' || w === 'infinity') return sign * Infinity;
        if (w === 'nan') return NaN;
      }
      return wrong('a number');
    }
    // Integer types.
    if (t.kind !== 'int') return wrong('an integer');
    const v = parseIntLiteral(t.text) * (negative ? -1n : 1n);
    const checked = checkInteger(v, type);
    if (typeof checked === 'string') {
      this.problem(path, `${checked} (field "${field.name}")`, start);
      return undefined;
    }
    return checked;
  }

  // -- skipping (after an unknown field or a value of the wrong kind) ----------------------------

  private skipFieldValue(path: string): void {
    if (this.isPunct(this.peek(), ':')) this.next();
    this.skipValue(path);
  }

  private skipValue(path: string): void {
    const t = this.next();
    if (this.isPunct(t, '{', '<', '[')) {
      const close = t.text === '{' ? '}' : t.text === '<' ? '>' : ']';
      const stack: { close: string; token: Token }[] = [{ close, token: t }];
      while (stack.length > 0) {
        const n = this.next();
        if (n.kind === 'eof') {
          const o = stack[stack.length - 1]!.token;
          this.syntax(`unclosed "${o.text}": reached the end of the file before the matching "${stack[stack.length - 1]!.close}"`, o.line, o.col, path);
        }
        if (this.isPunct(n, '{', '<', '[')) stack.push({ close: n.text === '{' ? '}' : n.text === '<' ? '>' : ']', token: n });
        else if (this.isPunct(n, '}', '>', ']')) {
          if (n.text !== stack[stack.length - 1]!.close) this.syntax(`mismatched "${n.text}"`, n.line, n.col, path);
          stack.pop();
        }
      }
      return;
    }
    if (this.isPunct(t, '-')) {
      this.next();
      return;
    }
    if (t.kind === 'eof' || t.kind === 'punct') this.syntax(`expected a value, found ${this.describe(t)}`, t.line, t.col, path);
    if (t.kind === 'string') while (this.peek().kind === 'string') this.next();
  }
}

function parseIntLiteral(text: string): bigint {
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (/^0[0-7]+$/.test(text)) return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}

function defaultValue(f: FieldSpec): unknown {
  if (f.kind === 'message') return {};
  if (f.kind === 'enum') return f.enumType!.valuesById[0];
  if (f.scalar === 'string' || f.scalar === 'bytes') return '';
  if (f.scalar === 'bool') return false;
  return 0;
}
