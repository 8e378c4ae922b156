/**
 * The KServe V2 gRPC service (`inference.GRPCInferenceService`) as a `@grpc/grpc-js` package definition,
 * built from the embedded upstream declarations (`grpc_service.proto`, which imports Triton's
 * `model_config.proto` for the ModelConfig call). Server and test clients load the same definition, so
 * they cannot drift apart.
 *
 * Field names stay snake_case as in the proto (Triton's Python and C++ clients see the same names);
 * 64-bit integers are decimal strings (exact for INT64 tensors and nanosecond statistics); enums are
 * their names; bytes are Buffers; unset scalars decode to their defaults; oneofs name the field set.
 */
import { fromJSON, type PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { GRPC_SERVICE_PROTO } from './grpc_service_proto.generated.js';
import { MODEL_CONFIG_PROTO } from './model_config_proto.generated.js';

/** The full name grpc-js registers the service under (`/inference.GRPCInferenceService/ModelInfer`). */
export const GRPC_SERVICE_NAME = 'inference.GRPCInferenceService';

export const GRPC_LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true } as const;

let definition: PackageDefinition | undefined;
let root: protobuf.Root | undefined;

function grpcRoot(): protobuf.Root {
  if (!root) {
    root = new protobuf.Root();
    // One root holds both files: the `import "model_config.proto"` resolves to the types parsed first.
    protobuf.parse(MODEL_CONFIG_PROTO, root, { keepCase: true });
    protobuf.parse(GRPC_SERVICE_PROTO, root, { keepCase: true });
    root.resolveAll();
  }
  return root;
}

export function grpcPackageDefinition(): PackageDefinition {
  definition ??= fromJSON(grpcRoot().toJSON() as Parameters<typeof fromJSON>[0], GRPC_LOADER_OPTIONS);
  return definition;
}

/** A message type of the service (e.g. `ModelInferRequest`), for clients that serialize messages once up front. */
export function grpcMessageType(name: string): protobuf.Type {
  return grpcRoot().lookupType(`inference.${name}`);
}
