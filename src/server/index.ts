// `svc-classify/server`: the service pieces — the /v2, hub, proxy and metrics Fastify plugins, the stand-alone
// server, the service, its stores and its hubs (a folder or PostgreSQL), and the HTTP contract's schemas and types (defined in
// src/contract/, re-exported here). This list is the
// supported API: etc/api/svc-classify-server.api.md records it (`npm run api`) and CI fails when it drifts.
export { svcRoutes, kDefaultBodyLimit } from './routes.js';
export type { SvcRoutesOptions } from './routes.js';
export { hubRoutes } from './hub-routes.js';
export type { HubRoutesOptions } from './hub-routes.js';
export { proxyRoutes } from './proxy-routes.js';
export { errorBody } from './errors.js';
export { kDefaultRateLimits } from './rate-limit.js';
export type { RateLimitOptions } from '../contract/rate-limit.js';
export { startServer, kLogLevels } from './app.js';
export type { ServerOptions, RunningServer, LogLevel } from './app.js';
export type { TrustProxy } from './trust-proxy.js';
export { SvcMetrics, metricsRoutes } from './metrics.js';
export type { SvcMetricsOptions, MetricsRoutesOptions } from './metrics.js';
export { rateLimited, kChannels } from '../telemetry.js';
export type { PredictBatchEvent, TrainingJobEvent, ProxyCallEvent, RateLimitedEvent } from '../telemetry.js';
export {
  trainRequestSchema,
  classifyRequestSchema,
  predictRequestSchema,
  kMaxPredictInputs,
  modelSchema,
  proxyModelSchema,
  modelListSchema,
  predictResponseSchema,
  classifyResponseSchema,
  deletedSchema,
  progressSchema,
  errorSchema,
} from '../contract/schemas.js';
export type {
  PredictRequest,
  ModelObject,
  ProxyModelObject,
  ModelList,
  PredictResponse,
  ClassifyResponseBody,
  BinaryPredictResponse,
  DeletedModel,
  ProgressObject,
  ErrorBody,
} from '../contract/schemas.js';
export { versionSchema, versionListSchema, promoteRequestSchema, deletedVersionSchema, parseModelName } from '../contract/versions.js';
export type { VersionObject, VersionList, DeletedVersion, PromoteRequest } from '../contract/versions.js';
export { evaluationSchema } from '../contract/evaluation.js';
export type { EvaluationObject } from '../contract/evaluation.js';
export type { Caller, ClassifierVersions } from '../service/versions.js';
export type { VersionEvaluations } from '../service/evaluation.js';
export { SvcService } from '../service/service.js';
export type { Principal, CreatedApiKey, SvcServiceOptions } from '../service/service.js';
export { LibraryRuntime } from '../service/library-runtime.js';
export type { LibraryRuntimeOptions } from '../service/library-runtime.js';
export type { ModelRuntime, ModelScorer, RuntimeTrainHooks, RuntimeTrainJob, RuntimePrediction } from '../service/runtime.js';
export type { StoredEvaluation } from '../service/evaluation-file.js';
export { connectService, openService } from '../service/open.js';
export type { ServiceLocation } from '../service/open.js';
export type { BaseModelDirs } from '../service/base-model-options.js';
export { SqliteStore } from '../store/sqlite.js';
export { PostgresStore } from '../store/postgres.js';
export type {
  JobLease,
  ModelVersions,
  PromoteOutcome,
  QueueLimits,
  QuotaRefusal,
  RemoveVersionOutcome,
  RequestLogPage,
  RequestLogPreview,
  Store,
  VersionRecord,
} from '../store/types.js';
export { PostgresHub } from '../artifacts/postgres-hub.js';
export type { PostgresHubOptions } from '../artifacts/postgres-hub.js';
export { kDefaultProviderUrls } from '../proxy/config.js';
export type { ProviderConfig, ProviderEndpoint, ProviderName, ProviderOptions, ProxyRoutesOptions } from '../proxy/types.js';
