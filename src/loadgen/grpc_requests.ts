/**
 * The load generator's gRPC side: its JSON request pool turned into serialized `ModelInferRequest`
 * messages (every input as `raw_input_contents`, as Triton's clients send them), and a transport that
 * sends those bytes unchanged over a few HTTP/2 channels, so the generator spends no time encoding
 * protobuf while it measures.
 */
import * as grpc from '@grpc/grpc-js';
import { GRPC_SERVICE_NAME, grpcMessageType } from '../artifacts/triton/grpc_service.js';
import { encodeBinaryTensor } from '../serve/binary.js';
import type { HostTensor, TensorValues, V2Datatype } from '../serve/datatypes.js';
import { parseJsonBody } from '../serve/json_body.js';
import type { Transport } from './open_loop.js';

interface JsonInput {
  name: string;
  datatype: V2Datatype;
  shape: number[];
  data: unknown[];
}

/** A KServe V2 JSON request body as the serialized gRPC request for `model` (and `version`). */
export function grpcRequestBytes(body: Buffer, model: string, version?: string): Buffer {
  const parsed = parseJsonBody(body.toString('utf8')) as { id?: string; inputs: JsonInput[] };
  const inputs = parsed.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape }));
  const raw = parsed.inputs.map((t) => Buffer.from(encodeBinaryTensor({ datatype: t.datatype, shape: t.shape, data: typedValues(t.datatype, t.data.flat(Infinity)) } as HostTensor)));
  const type = grpcMessageType('ModelInferRequest');
  const message = type.fromObject({ model_name: model, model_version: version ?? '', ...(parsed.id ? { id: parsed.id } : {}), inputs, raw_input_contents: raw });
  return Buffer.from(type.encode(message).finish());
}

function typedValues(d: V2Datatype, v: unknown[]): TensorValues {
  switch (d) {
    case 'FP32':
      return Float32Array.from(v as number[]);
    case 'FP64':
      return Float64Array.from(v as number[]);
    case 'INT64':
      return BigInt64Array.from(v, (x) => BigInt(x as string | number));
    case 'UINT64':
      return BigUint64Array.from(v, (x) => BigInt(x as string | number));
    case 'INT32':
      return Int32Array.from(v as number[]);
    case 'INT16':
      return Int16Array.from(v as number[]);
    case 'INT8':
      return Int8Array.from(v as number[]);
    case 'UINT32':
      return Uint32Array.from(v as number[]);
    case 'UINT16':
      return Uint16Array.from(v as number[]);
    case 'UINT8':
      return Uint8Array.from(v as number[]);
    case 'BOOL':
      return Uint8Array.from(v, (x) => (x ? 1 : 0));
    case 'BYTES':
      return v.map(String);
  }
}

/**
 * Sends pre-serialized `ModelInferRequest`s round-robin over `channels` HTTP/2 connections (each its own
 * subchannel, so they do not collapse into one). An error is `grpc_<STATUS>`.
 */
export function grpcTransport(address: string, requests: readonly Buffer[], options: { channels?: number; timeoutMs?: number } = {}): Transport {
  const n = Math.max(1, options.channels ?? 4);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const clients = Array.from({ length: n }, () => new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'grpc.max_receive_message_length': -1 }));
  const path = `/${GRPC_SERVICE_NAME}/ModelInfer`;
  const identity = (b: Buffer) => b;
  return {
    send(i, done) {
      const client = clients[i % n]!;
      client.makeUnaryRequest(path, identity, identity, requests[i % requests.length]!, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err) =>
        done(err ? `grpc_${grpc.status[err.code] ?? err.code}` : undefined),
      );
    },
    close() {
      for (const c of clients) c.close();
    },
  };
}
