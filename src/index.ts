// Public exports of svc-classify. Everything a user imports is listed here.
export { SvcError } from './errors.js';
export type { SvcErrorCode } from './errors.js';
export { cpuInfo } from './native/index.js';
export type { NativeCpuInfo } from './native/index.js';
export { Encoder } from './native/encoder.js';
export type { EncoderOptions, EncoderPrecision } from './native/encoder.js';
export { train } from './train/train.js';
export type { TrainOptions, TrainProgress } from './train/train.js';
export {
  validateTrainRequest,
  trainRequestSchema,
  numIterations,
  kMinExamples,
  kMaxExamples,
  kMaxTextLength,
  kDefaultNumIterations,
  kMaxNumIterations,
  kDefaultMaxPairs,
} from './train/request.js';
export type { TrainRequest, TrainExample, TaskType } from './train/request.js';
export { Classifier } from './predict/classifier.js';
export type { Prediction, PredictOptions, LoadOptions } from './predict/classifier.js';
export { DirectoryHub, isHubId, parseHubId } from './model/hub.js';
export type { Hub, HubId } from './model/hub.js';
export { kManifestFormatVersion } from './model/manifest.js';
export type { BodyKind, FinetuneSettings, Manifest, TrainingMetrics, TrainingSettings } from './model/manifest.js';
export { configurePool, closePool } from './pool/pool.js';
export type { PoolOptions } from './pool/pool.js';
export { Tokenizer } from './native/tokenizer.js';
export type { EncodedBatch, EncodeBatchOptions, EncodeOptions, TokenizerFileOptions } from './native/tokenizer.js';
export { svcRoutes, kDefaultBodyLimit } from './server/routes.js';
export type { SvcRoutesOptions } from './server/routes.js';
export { hubRoutes } from './server/hub-routes.js';
export type { HubRoutesOptions } from './server/hub-routes.js';
export { errorBody } from './server/errors.js';
export type { ErrorBody } from './server/errors.js';
export { startServer } from './server/app.js';
export type { ServerOptions, RunningServer } from './server/app.js';
export { SvcService, toModelObject } from './service/service.js';
export type { Principal, ModelObject, ProxyModelObject, PredictResponse, CreatedApiKey, SvcServiceOptions } from './service/service.js';
export { LibraryRuntime } from './service/library-runtime.js';
export type { LibraryRuntimeOptions } from './service/library-runtime.js';
export type { ModelRuntime, RuntimeTrainJob, RuntimePrediction, TrainingProgress } from './service/runtime.js';
export { openService, proxyModelsFromEnv } from './service/open.js';
export { SqliteStore } from './store/sqlite.js';
export type { Store } from './store/types.js';
export { proxyRoutes } from './server/proxy-routes.js';
export { resolveProviderConfig, kDefaultProviderUrls } from './proxy/config.js';
export type {
  Authenticate,
  KeyIdentity,
  ProviderConfig,
  ProviderEndpoint,
  ProviderName,
  ProviderOptions,
  ProxyRoutesOptions,
  ProxyService,
} from './proxy/types.js';
