// Public exports of svc-classify. Everything a user imports is listed here.
export { SvcError } from './errors.js';
export type { SvcErrorCode } from './errors.js';
export { cpuInfo } from './native/index.js';
export type { NativeCpuInfo } from './native/index.js';
export { Encoder } from './native/encoder.js';
export type { EncoderOptions, EncoderPrecision } from './native/encoder.js';
export { train } from './train/train.js';
export type { TrainOptions, TrainProgress } from './train/train.js';
export { validateTrainRequest, trainRequestSchema, kMinExamples, kMaxExamples, kMaxTextLength } from './train/request.js';
export type { TrainRequest, TrainExample, TaskType } from './train/request.js';
export { Classifier } from './predict/classifier.js';
export type { Prediction, PredictOptions, LoadOptions } from './predict/classifier.js';
export { DirectoryHub, isHubId, parseHubId } from './model/hub.js';
export type { Hub, HubId } from './model/hub.js';
export { kManifestFormatVersion } from './model/manifest.js';
export type { Manifest, TrainingMetrics, TrainingSettings } from './model/manifest.js';
export { configurePool, closePool } from './pool/pool.js';
export type { PoolOptions } from './pool/pool.js';
