// `svc-classify/server`: the service pieces — the /v2, hub and proxy Fastify plugins, the stand-alone
// server, the service and its SQLite store, and the HTTP contract's schemas and types.
export { svcRoutes, kDefaultBodyLimit } from './routes.js';
export type { SvcRoutesOptions } from './routes.js';
export { hubRoutes } from './hub-routes.js';
export type { HubRoutesOptions } from './hub-routes.js';
export { proxyRoutes } from './proxy-routes.js';
export { errorBody } from './errors.js';
export { kDefaultRateLimits } from './rate-limit.js';
export type { RateLimitOptions } from './rate-limit.js';
export { startServer, kLogLevels } from './app.js';
export type { ServerOptions, RunningServer, LogLevel } from './app.js';
export { SvcMetrics, metricsRoutes } from './metrics.js';
export type { SvcMetricsOptions, MetricsRoutesOptions } from './metrics.js';
export { rateLimited, kChannels } from '../telemetry.js';
export type { PredictBatchEvent, TrainingJobEvent, ProxyCallEvent, RateLimitedEvent } from '../telemetry.js';
export * from './schemas.js';
export { SvcService, toModelObject } from '../service/service.js';
export type { Principal, CreatedApiKey, SvcServiceOptions } from '../service/service.js';
export { LibraryRuntime } from '../service/library-runtime.js';
export type { LibraryRuntimeOptions } from '../service/library-runtime.js';
export type { ModelRuntime, RuntimeTrainJob, RuntimePrediction } from '../service/runtime.js';
export { connectService, databaseUrlFromEnv, openService, proxyModelsFromEnv } from '../service/open.js';
export type { ServiceLocation } from '../service/open.js';
export { SqliteStore } from '../store/sqlite.js';
export { PostgresStore } from '../store/postgres.js';
export type { Store } from '../store/types.js';
export { resolveProviderConfig, kDefaultProviderUrls } from '../proxy/config.js';
export type { ProviderConfig, ProviderEndpoint, ProviderName, ProviderOptions, ProxyRoutesOptions } from '../proxy/types.js';
