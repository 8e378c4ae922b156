/**
 * The load generator's gRPC side: its JSON request pool turned into serialized `ModelInferRequest`
 * messages (every input as `raw_input_contents`, as Triton's clients send them), and a transport that
 * sends those bytes unchanged over a few HTTP/2 connections, so the generator spends no time encoding
 * protobuf while it measures.
 *
 * The default transport (`raw`) is `raw_grpc.ts`'s lean HTTP/2 client, the counterpart of the HTTP
 * generator's `raw_http.ts`, so a gRPC-against-HTTP comparison measures the server rather than the
 * generators sharing its 2 cores. `node` uses `@grpc/grpc-js`'s client, as an application would.
 */
import * as grpc from '@grpc/grpc-js';
import { GRPC_SERVICE_NAME, grpcMessageType } from '../artifacts/triton/grpc_service.js';
import { encodeBinaryTensor } from '../serve/binary.js';
import type { HostTensor, TensorValues, V2Datatype } from '../serve/datatypes.js';
import { parseJsonBody } from '../serve/json_body.js';
import type { Transport } from './open_loop.js';
import { grpcRequestHeaderBlock, RawGrpcConnection } from './raw_grpc.js';

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

/** gRPC's length-prefixed message framing: a compressed flag (0), the length (4 bytes big-endian), the message. */
export function grpcFrame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

export interface GrpcTransportOptions {
  /** HTTP/2 connections, calls spread round-robin. Default 4. */
  channels?: number;
  /**
   * Most calls in flight over all connections (`raw` client), later ones wait in the generator and the
   * wait counts in their latency — as the HTTP generator's one request per connection. Default 64.
   */
  maxInFlight?: number;
  /** The call deadline (`grpc-timeout`). Default 10 s. */
  timeoutMs?: number;
  /** `raw` (default): `raw_grpc.ts`'s lean HTTP/2 client; `node`: `@grpc/grpc-js`'s client. */
  client?: 'raw' | 'node';
}

/**
 * Sends pre-serialized `ModelInferRequest`s round-robin over `channels` HTTP/2 connections. An error is
 * `grpc_<STATUS>` with the grpc-js client; the raw client reads no status (`grpc_error`, `http2_rst_<code>`).
 */
export function grpcTransport(address: string, requests: readonly Buffer[], options: GrpcTransportOptions = {}): Transport {
  const n = Math.max(1, options.channels ?? 4);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return options.client === 'node' ? grpcJsTransport(address, requests, n, timeoutMs) : rawGrpcTransport(address, requests, n, timeoutMs, Math.max(1, Math.ceil((options.maxInFlight ?? 64) / n)));
}

function rawGrpcTransport(address: string, requests: readonly Buffer[], n: number, timeoutMs: number, perConnection: number): Transport {
  const framed = requests.map(grpcFrame);
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  const block = grpcRequestHeaderBlock(`/${GRPC_SERVICE_NAME}/ModelInfer`, address, timeoutMs);
  const connections: RawGrpcConnection[] = [];
  const connection = (k: number): RawGrpcConnection => {
    let c = connections[k];
    // A connection the server closed or sent GOAWAY on is replaced for the next calls.
    if (!c || c.closed) connections[k] = c = new RawGrpcConnection(host, port, block, perConnection);
    return c;
  };
  return {
    send(i, done) {
      connection(i % n).call(framed[i % framed.length]!, done);
    },
    close() {
      for (const c of connections) c.close();
    },
  };
}

function grpcJsTransport(address: string, requests: readonly Buffer[], n: number, timeoutMs: number): Transport {
  // Each client its own subchannel, so the connections do not collapse into one.
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
