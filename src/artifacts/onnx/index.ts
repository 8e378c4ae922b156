/** gnnctl's one ONNX writer: a typed graph builder (one IR version and opset set), tensors, attributes, and the subgraphs the exported models need. */
export { OnnxGraphBuilder, ML_DOMAIN, DEFAULT_IR_VERSION, DEFAULT_OPSET, DEFAULT_ML_OPSET, PROTOBUF_LIMIT_BYTES } from './onnx_graph_builder.js';
export type { OnnxGraphBuilderOptions, NodeOptions, ToFilesOptions, ModelFiles } from './onnx_graph_builder.js';
export { attr, type AttributeValue } from './attributes.js';
export { ElemType, type Dim, type TensorData } from './types.js';
export type { TensorSpec } from './tensor.js';
export { onnx, int64ToBigInt } from './proto.js';
export { cast, concat, floatScalar, int64s, squeeze, unsqueeze } from './ops/basic.js';
export { dense, type Activation, type DenseWeights } from './ops/dense.js';
export { standardize, type StandardizeStats } from './ops/standardize.js';
export { lookupIndex, embeddingLookup, keyedEmbedding, fallbackRow, type Vocabulary, type EmbeddingTable, type EmbeddingFallback } from './ops/lookup.js';
export { maskedMeanPool, maskedAttentionPool, MASKED_SCORE, type AttentionScore } from './ops/pooling.js';
export { relativeTime, INT64_MIN, NS_PER_UNIT, type TimeUnit, type RelativeTimeOptions } from './ops/time.js';
