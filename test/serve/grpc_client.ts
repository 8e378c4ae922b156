/** A `@grpc/grpc-js` client of `inference.GRPCInferenceService` built from the server's own proto, for the gRPC tests. */
import * as grpc from '@grpc/grpc-js';
import { grpcPackageDefinition } from '../../src/artifacts/triton/grpc_service.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Client = grpc.Client & Record<string, (req: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: any) => void) => void>;

export function client(port: number, credentials = grpc.credentials.createInsecure(), options: grpc.ClientOptions = {}): Client {
  const pkg = grpc.loadPackageDefinition(grpcPackageDefinition()) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } };
  return new pkg.inference.GRPCInferenceService(`127.0.0.1:${port}`, credentials, options) as unknown as Client;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function call<T = any>(c: Client, method: string, req: unknown, metadata = new grpc.Metadata()): Promise<T> {
  return new Promise((resolve, reject) => c[method]!(req, metadata, { deadline: Date.now() + 20_000 }, (err, res) => (err ? reject(err) : resolve(res as T))));
}
