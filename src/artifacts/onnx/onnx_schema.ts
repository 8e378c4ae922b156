/**
 * The ONNX file format (`ModelProto`), read and written with protobufjs (the project's one protobuf
 * runtime) from `onnx.proto` (the declarations of the ONNX specification; see that file), instead of the `onnx-proto` package and the second, older protobufjs it
 * brought along.
 *
 * Field names are protobufjs' camelCase conversion of the proto's (`ir_version` -> `irVersion`), the
 * same names `onnx-proto` used. The interfaces below type what gnnctl builds and reads; the schema
 * itself (every field, number and enum) is the proto.
 */
import protobuf from 'protobufjs';
import { ONNX_PROTO } from './onnx_proto.generated.js';

/**
 * An int64 field value: a number, or an object with the exact 32-bit words (a `Long`, or the
 * `{ low, high, unsigned }` gnnctl builds for values beyond 2^53; protobufjs' writer reads only those).
 */
export type Int64 = number | { low: number; high: number; unsigned: boolean };

export interface IStringStringEntryProto {
  key?: string | null;
  value?: string | null;
}

export interface IOperatorSetIdProto {
  domain?: string | null;
  version?: Int64 | null;
}

export interface ITensorShapeDimension {
  dimValue?: Int64 | null;
  dimParam?: string | null;
  denotation?: string | null;
}

export interface ITypeProto {
  tensorType?: { elemType?: number | null; shape?: { dim?: ITensorShapeDimension[] | null } | null } | null;
  sequenceType?: { elemType?: ITypeProto | null } | null;
  mapType?: { keyType?: number | null; valueType?: ITypeProto | null } | null;
  optionalType?: { elemType?: ITypeProto | null } | null;
  denotation?: string | null;
}

export interface IValueInfoProto {
  name?: string | null;
  type?: ITypeProto | null;
  docString?: string | null;
  metadataProps?: IStringStringEntryProto[] | null;
}

/** A tensor's name, element type (`onnx.TensorProto.DataType`) and shape: numbers fixed, strings symbolic. */
export function tensorValueInfo(name: string, elemType: number, dims: readonly (number | string)[]): IValueInfoProto {
  return { name, type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } } };
}

export interface ITensorProto {
  dims?: Int64[] | null;
  dataType?: number | null;
  floatData?: number[] | null;
  int32Data?: number[] | null;
  stringData?: Uint8Array[] | null;
  int64Data?: Int64[] | null;
  name?: string | null;
  docString?: string | null;
  rawData?: Uint8Array | null;
  externalData?: IStringStringEntryProto[] | null;
  dataLocation?: number | null;
  doubleData?: number[] | null;
  uint64Data?: Int64[] | null;
  metadataProps?: IStringStringEntryProto[] | null;
}

export interface IAttributeProto {
  name?: string | null;
  refAttrName?: string | null;
  docString?: string | null;
  type?: number | null;
  f?: number | null;
  i?: Int64 | null;
  s?: Uint8Array | null;
  t?: ITensorProto | null;
  g?: IGraphProto | null;
  tp?: ITypeProto | null;
  floats?: number[] | null;
  ints?: Int64[] | null;
  strings?: Uint8Array[] | null;
  tensors?: ITensorProto[] | null;
  graphs?: IGraphProto[] | null;
  typeProtos?: ITypeProto[] | null;
}

export interface INodeProto {
  input?: string[] | null;
  output?: string[] | null;
  name?: string | null;
  opType?: string | null;
  domain?: string | null;
  overload?: string | null;
  attribute?: IAttributeProto[] | null;
  docString?: string | null;
  metadataProps?: IStringStringEntryProto[] | null;
}

export interface IGraphProto {
  node?: INodeProto[] | null;
  name?: string | null;
  initializer?: ITensorProto[] | null;
  docString?: string | null;
  input?: IValueInfoProto[] | null;
  output?: IValueInfoProto[] | null;
  valueInfo?: IValueInfoProto[] | null;
  metadataProps?: IStringStringEntryProto[] | null;
}

export interface IModelProto {
  irVersion?: Int64 | null;
  opsetImport?: IOperatorSetIdProto[] | null;
  producerName?: string | null;
  producerVersion?: string | null;
  domain?: string | null;
  modelVersion?: Int64 | null;
  docString?: string | null;
  graph?: IGraphProto | null;
  metadataProps?: IStringStringEntryProto[] | null;
}

/** A decoded ModelProto: protobufjs gives every repeated field of a decoded message, empty or not. */
export interface ModelProto extends IModelProto {
  opsetImport: IOperatorSetIdProto[];
  metadataProps: IStringStringEntryProto[];
}

/** A message type with the typed subset of protobufjs' reflection API that gnnctl uses. */
export interface MessageCodec<T, Decoded extends T = T> {
  /** The protobufjs reflection type (every field of the proto, for anything not typed here). */
  readonly type: protobuf.Type;
  /** Checks a plain object against the schema; an error message, or null when it is valid. */
  verify(message: T): string | null;
  encode(message: T): protobuf.Writer;
  decode(bytes: Uint8Array): Decoded;
}

let root: protobuf.Root | undefined;

const UNPACKABLE = new Set(['string', 'bytes']);

/**
 * The `onnx` package of the schema (parsed once).
 *
 * Every repeated numeric field is written packed. onnx.proto is proto2, where only the fields marked
 * `[packed = true]` are packed by default; `onnx-proto` (protobufjs 6) packed them all, and keeping
 * that keeps model.onnx as small as before: an unpacked int64 list (LabelEncoder's `keys_int64s`, a
 * tensor's `dims`) costs one more byte per element, 0.2 MB per 100k keys. Protobuf parsers must read
 * either encoding of a repeated scalar (the wire format allows both), onnxruntime and onnx included.
 */
export function onnxRoot(): protobuf.Root {
  if (!root) {
    const parsed = protobuf.parse(ONNX_PROTO).root;
    packRepeatedScalars(parsed);
    parsed.resolveAll();
    root = parsed;
  }
  return root;
}

function packRepeatedScalars(ns: protobuf.NamespaceBase): void {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) {
      for (const f of nested.fieldsArray) {
        // Messages and strings are never packed; enum fields are resolved later and packable too.
        const scalar = f.type in protobuf.types.basic;
        const enumLike = !scalar && nested.lookupTypeOrEnum(f.type) instanceof protobuf.Enum;
        if (f.repeated && !UNPACKABLE.has(f.type) && (scalar || enumLike)) f.setOption('packed', true);
      }
    }
    if (nested instanceof protobuf.Namespace) packRepeatedScalars(nested);
  }
}

function codec<T, Decoded extends T = T>(name: string): MessageCodec<T, Decoded> {
  let type: protobuf.Type | undefined;
  const get = () => (type ??= onnxRoot().lookupType(name));
  return {
    get type() {
      return get();
    },
    verify: (m) => get().verify(m as Record<string, unknown>),
    encode: (m) => get().encode(m as Record<string, unknown>),
    decode: (bytes) => get().decode(bytes) as unknown as Decoded,
  };
}

/** Values of an enum of the schema, by name (`onnx.TensorProto.DataType.FLOAT` is 1). */
function enumValues<K extends string>(name: string): Readonly<Record<K, number>> {
  return onnxRoot().lookupEnum(name).values as Record<K, number>;
}

type DataTypeName =
  | 'UNDEFINED' | 'FLOAT' | 'UINT8' | 'INT8' | 'UINT16' | 'INT16' | 'INT32' | 'INT64' | 'STRING' | 'BOOL' | 'FLOAT16' | 'DOUBLE' | 'UINT32' | 'UINT64'
  | 'COMPLEX64' | 'COMPLEX128' | 'BFLOAT16' | 'FLOAT8E4M3FN' | 'FLOAT8E4M3FNUZ' | 'FLOAT8E5M2' | 'FLOAT8E5M2FNUZ' | 'UINT4' | 'INT4';
type AttributeTypeName =
  | 'UNDEFINED' | 'FLOAT' | 'INT' | 'STRING' | 'TENSOR' | 'GRAPH' | 'SPARSE_TENSOR' | 'TYPE_PROTO'
  | 'FLOATS' | 'INTS' | 'STRINGS' | 'TENSORS' | 'GRAPHS' | 'SPARSE_TENSORS' | 'TYPE_PROTOS';

/** The parts of the `onnx` package gnnctl uses, under the names `onnx-proto` gave them. */
export const onnx = {
  ModelProto: codec<IModelProto, ModelProto>('onnx.ModelProto'),
  get TensorProto() {
    return {
      DataType: enumValues<DataTypeName>('onnx.TensorProto.DataType'),
      DataLocation: enumValues<'DEFAULT' | 'EXTERNAL'>('onnx.TensorProto.DataLocation'),
    };
  },
  get AttributeProto() {
    return { AttributeType: enumValues<AttributeTypeName>('onnx.AttributeProto.AttributeType') };
  },
};
