/**
 * The wire form of the one hot call, ModelInfer, read and written field by field with protobufjs's
 * `Reader`/`Writer` instead of proto-loader's reflection path (decode to a message, then `toObject`
 * with defaults, 64-bit integers as strings, and `fromObject` + encode on the way out).
 *
 * `decodeModelInferRequest` gives exactly the object proto-loader gives (`GRPC_LOADER_OPTIONS`: snake_case
 * names, defaults filled, int64 as decimal strings, oneofs named, bytes as Buffers viewing the received
 * message without a copy); the rare typed `contents` submessage is left to protobufjs's own decoder.
 * `encodeModelInferResponse` writes what gnnctl answers with: names, datatypes, shapes and raw output
 * bytes. Both are checked against the protobufjs types in `test/serve/grpc_infer_codec.test.ts`.
 */
import protobuf from 'protobufjs';
import { GRPC_LOADER_OPTIONS, grpcMessageType } from '../artifacts/triton/grpc_service.js';

const { Reader, Writer } = protobuf;

/** The ModelInfer message shapes, as proto-loader decodes them with `GRPC_LOADER_OPTIONS` (oneofs: the name of the field set). */
export interface InferParameter {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param';
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
}

export interface TensorContents {
  bool_contents: boolean[];
  int_contents: number[];
  int64_contents: string[];
  uint_contents: number[];
  uint64_contents: string[];
  fp32_contents: number[];
  fp64_contents: number[];
  bytes_contents: Buffer[];
}

interface InferInputTensor {
  name: string;
  datatype: string;
  shape: string[];
  parameters: Record<string, InferParameter>;
  contents: TensorContents | null;
}

export interface ModelInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameter>;
  inputs: InferInputTensor[];
  outputs: { name: string; parameters: Record<string, InferParameter> }[];
  raw_input_contents: Buffer[];
}

/** The protobuf wire types checked here: varint and length-delimited. */
const VARINT = 0;
const LEN = 2;

type ProtoReader = protobuf.Reader;

function int64String(r: ProtoReader): string {
  const v = r.int64() as number | { toString(): string };
  return typeof v === 'number' ? String(v) : v.toString();
}

function readParameter(r: ProtoReader, end: number): InferParameter {
  const p: InferParameter = {};
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === VARINT) {
      p.bool_param = r.bool();
      p.parameter_choice = 'bool_param';
    } else if (field === 2 && (tag & 7) === VARINT) {
      p.int64_param = int64String(r);
      p.parameter_choice = 'int64_param';
    } else if (field === 3 && (tag & 7) === LEN) {
      p.string_param = r.string();
      p.parameter_choice = 'string_param';
    } else r.skipType(tag & 7);
  }
  return p;
}

/** One `map<string, InferParameter>` entry into `into` (a repeated key keeps the last value, as protobuf says). */
function readParameterEntry(r: ProtoReader, into: Record<string, InferParameter>): void {
  const end = r.uint32() + r.pos;
  let key = '';
  let value: InferParameter = {};
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === LEN) key = r.string();
    else if (tag >>> 3 === 2 && (tag & 7) === LEN) value = readParameter(r, r.uint32() + r.pos);
    else r.skipType(tag & 7);
  }
  into[key] = value;
}

function readShape(r: ProtoReader, tag: number, shape: string[]): void {
  if ((tag & 7) === LEN) {
    const end = r.uint32() + r.pos;
    while (r.pos < end) shape.push(int64String(r));
  } else shape.push(int64String(r));
}

let contentsType: protobuf.Type | undefined;

function readInput(r: ProtoReader, end: number): ModelInferRequest['inputs'][number] {
  const t: ModelInferRequest['inputs'][number] = { name: '', datatype: '', shape: [], parameters: {}, contents: null };
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        t.name = r.string();
        break;
      case 2:
        t.datatype = r.string();
        break;
      case 3:
        readShape(r, tag, t.shape);
        break;
      case 4:
        readParameterEntry(r, t.parameters);
        break;
      case 5: {
        contentsType ??= grpcMessageType('InferTensorContents');
        const len = r.uint32();
        t.contents = contentsType.toObject(contentsType.decode(r, len), GRPC_LOADER_OPTIONS) as TensorContents;
        break;
      }
      default:
        r.skipType(tag & 7);
    }
  }
  return t;
}

function readOutput(r: ProtoReader, end: number): ModelInferRequest['outputs'][number] {
  const o: ModelInferRequest['outputs'][number] = { name: '', parameters: {} };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) o.name = r.string();
    else if (tag >>> 3 === 2) readParameterEntry(r, o.parameters);
    else r.skipType(tag & 7);
  }
  return o;
}

/** A serialized `ModelInferRequest` (grpc-js's request deserializer for ModelInfer). */
export function decodeModelInferRequest(bytes: Buffer): ModelInferRequest {
  const r = Reader.create(bytes);
  const req: ModelInferRequest = { model_name: '', model_version: '', id: '', parameters: {}, inputs: [], outputs: [], raw_input_contents: [] };
  while (r.pos < r.len) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        req.model_name = r.string();
        break;
      case 2:
        req.model_version = r.string();
        break;
      case 3:
        req.id = r.string();
        break;
      case 4:
        readParameterEntry(r, req.parameters);
        break;
      case 5:
        req.inputs.push(readInput(r, r.uint32() + r.pos));
        break;
      case 6:
        req.outputs.push(readOutput(r, r.uint32() + r.pos));
        break;
      case 7:
        req.raw_input_contents.push(r.bytes() as Buffer);
        break;
      default:
        r.skipType(tag & 7);
    }
  }
  return req;
}

/** What gnnctl answers a ModelInfer call with. */
export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  outputs: { name: string; datatype: string; shape: readonly number[] }[];
  raw_output_contents: Uint8Array[];
}

/** A `ModelInferResponse` serialized (grpc-js's response serializer for ModelInfer). */
export function encodeModelInferResponse(res: ModelInferResponse): Buffer {
  const w = Writer.create();
  if (res.model_name !== '') w.uint32((1 << 3) | LEN).string(res.model_name);
  if (res.model_version !== '') w.uint32((2 << 3) | LEN).string(res.model_version);
  if (res.id !== '') w.uint32((3 << 3) | LEN).string(res.id);
  for (const o of res.outputs) {
    w.uint32((5 << 3) | LEN).fork();
    w.uint32((1 << 3) | LEN).string(o.name);
    w.uint32((2 << 3) | LEN).string(o.datatype);
    if (o.shape.length > 0) {
      w.uint32((3 << 3) | LEN).fork();
      for (const d of o.shape) w.int64(d);
      w.ldelim();
    }
    w.ldelim();
  }
  for (const b of res.raw_output_contents) w.uint32((6 << 3) | LEN).bytes(b);
  return w.finish() as Buffer;
}
