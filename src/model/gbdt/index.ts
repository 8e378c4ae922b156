/** Gradient-boosted trees: fit, predict, serialise; see docs/models.md. */
export { GbdtModel, type GbdtFitInput, type GbdtHistory, type GbdtModelJSON } from './gbdt_model.js';
export { BinMapper, MISSING_BIN, type FeatureKind, type GbdtData } from './bin_mapper.js';
export { DEFAULT_GBDT_PARAMS, resolveGbdtParams, type GbdtParams, type GbdtLossName } from './params.js';
export { Tree } from './tree.js';
export { gbdtToOnnx, gbdtOnnxGraph, type GbdtOnnxOptions } from './onnx_export.js';
