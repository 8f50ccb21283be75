// The library: train, predict, embed and tokenize, with the pool's settings. Nothing here loads
// Fastify or SQLite; the service pieces (routes, store, proxy) are in `svc-classify/server`.
// This list is the supported API: etc/api/svc-classify.api.md records it (`npm run api`), CI fails
// when it drifts, and test/types/ pins its types. The zod schemas are the HTTP contract's and live
// in `svc-classify/server`; here, `validateTrainRequest` and `validateClassifyRequest` check input.
export { SvcError } from './errors.js';
export type { SvcErrorCode } from './errors.js';
export { cpuInfo } from './native/index.js';
export type { NativeCpuInfo } from './native/index.js';
export { Encoder } from './native/encoder.js';
export type { EncoderOptions, EncoderPrecision, PrecisionSetting } from './native/encoder.js';
export { kernelChoice, kernelCacheDir } from './native/kernel-choice.js';
export type { KernelChoice } from './native/kernel-choice.js';
export type { KernelName, KernelRate } from './native/kernel-pick.js';
export { Adapter } from './native/adapter.js';
export type { AdapterSegments } from './native/adapter.js';
export { Tokenizer } from './native/tokenizer.js';
export type { EncodedBatch, EncodeBatchOptions, EncodeOptions, TokenizerFileOptions, TruncationSide } from './native/tokenizer.js';
export { train } from './train/train.js';
export { registerBaseModel, registeredBaseModels } from './model/base-models.js';
export type { BaseModel, BaseModelFamily, BaseModelPooling } from './model/base-models.js';
export { labelWithTeacher } from './train/label-with-teacher.js';
export type { TeacherLabelling, TeacherOptions } from './train/label-with-teacher.js';
export { kMaxTeacherTexts, teacherTrainRequestSchema, validateTeacherTrainRequest } from './contract/teacher-request.js';
export type { TeacherTrainRequest } from './contract/teacher-request.js';
export type { TeacherCost, TrainingData } from './contract/training-data.js';
export type { ProviderEndpoint, ProviderName, ProviderOptions } from './teacher/providers.js';
export type { TrainOptions, TrainProgress } from './train/train.js';
export {
  validateTrainRequest,
  kMinExamples,
  kMaxExamples,
  kMaxTextLength,
  kDefaultNumIterations,
  kMaxNumIterations,
  kDefaultMaxPairs,
  kTaskTypes,
  kMinClasses,
  kMaxClasses,
  kMinExamplesPerClass,
  kDefaultFinetuneMethod,
  kDefaultAdapterRank,
} from './contract/train-request.js';
export type {
  FinetuneMethod,
  TrainRequest,
  TrainExample,
  TaskType,
  BinaryTrainRequest,
  MultiClassTrainRequest,
  MultiLabelTrainRequest,
  ClassExample,
  LabelSetExample,
} from './contract/train-request.js';
export { classify, kClassifyCachedHeads } from './train/classify.js';
export type { ClassifyOptions, ClassifyResponse, ClassifyPrediction } from './train/classify.js';
export {
  validateClassifyRequest,
  kMaxClassifyInputs,
  kMaxClassifyExamples,
  kMinClassifyExamplesPerLabel,
  kTruncateModes,
} from './contract/classify-request.js';
export type { ClassifyRequest, TruncateMode } from './contract/classify-request.js';
export { kZeroShotTemplates } from './train/zero-shot.js';
export { Classifier, kDefaultThreshold } from './predict/classifier.js';
export type {
  Prediction,
  ClassPrediction,
  LabelSetPrediction,
  PredictionExtras,
  PredictionOf,
  PredictOptions,
  LoadOptions,
  SaveOptions,
} from './predict/classifier.js';
export type { Neighbour } from './predict/nearest.js';
export { DirectoryHub, isHubId, parseHubId } from './model/hub.js';
export type { DirectoryHubOptions, Hub, HubFile, HubFileReader, HubId } from './model/hub.js';
export { kManifestFormatVersion } from './contract/manifest.js';
export { writeMergedTransformersDir } from './model/merged-export.js';
export type { BodyKind, FinetuneSettings, Manifest, TrainingMetrics, TrainingSettings } from './contract/manifest.js';
export { configurePool, closePool } from './pool/pool.js';
export type { PoolOptions } from './pool/pool.js';
export { configurePredictQueue } from './predict/batcher.js';
export type { PredictQueueOptions } from './predict/batcher.js';
