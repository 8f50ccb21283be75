/**
 * ONNX export of svc-classify's encoders and classifiers: the reference the native engine is
 * checked and benchmarked against, and the files transformers.js loads.
 */
export { buildClassifierOnnx, buildEncoderOnnx, type LinearHead, type OnnxExportOptions, type OnnxPrecision } from './export.js';
export { loadBertWeights, parseBertConfig, type BertConfig, type BertWeights } from './bert-weights.js';
export { GraphBuilder, OnnxType, type OnnxAttribute, type OnnxDim, type OnnxTensor } from './graph.js';
export { ProtoWriter } from './protobuf.js';
export { quantizePerOutputChannel, type QuantizedWeight } from './quantize.js';
export { writeTransformersJsModelDir, type TransformersJsDirOptions } from './transformers-dir.js';
