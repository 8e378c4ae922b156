/**
 * The TypeScript view of Triton's `inference.ModelConfig` (config.pbtxt, and the JSON answer of
 * `GET /v2/models/{name}/config`). The schema itself is `model_config.proto` (see
 * `schema.ts`); these types only give gnnctl's code names for what it reads and writes.
 *
 * Field names are the proto's own snake_case names, so the object, the file and the HTTP answer read
 * alike. Enum values are their names (`'TYPE_FP32'`), 64-bit integers are JavaScript numbers (gnnctl
 * refuses values beyond 2^53 rather than rounding them), maps are plain objects.
 */

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

export interface TritonEnsembleStep {
  model_name?: string;
  /** -1 for the latest version. */
  model_version?: number;
  /** Step model input name -> ensemble tensor name. */
  input_map?: Record<string, string>;
  /** Step model output name -> ensemble tensor name. */
  output_map?: Record<string, string>;
  model_namespace?: string;
}

/** `ModelEnsembling`: the steps of an ensemble (`platform: "ensemble"`). */
export interface TritonEnsembleScheduling {
  step?: TritonEnsembleStep[];
  /** Per-step limit of in-flight requests; 0 means no limit. */
  max_inflight_requests?: number;
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
  ensemble_scheduling?: TritonEnsembleScheduling;
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

