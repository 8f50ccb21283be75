import { randomUUID } from 'node:crypto';

import Fastify, { type FastifyInstance, type FastifyPluginAsync, LogController } from 'fastify';

import { environment } from '../environment.js';
import { configurePool, type PoolOptions } from '../pool/pool.js';
import { configurePredictQueue, kServicePredictQueue, type PredictQueueOptions } from '../predict/batcher.js';
import { registeredBaseModels } from '../model/base-models.js';
import { unregisteredBaseModels } from '../service/base-model-agreement.js';
import { type BaseModelDirs, parseBaseModelEntries, registerBaseModels } from '../service/base-model-options.js';
import { lockDataDir } from '../service/data-lock.js';
import { sweepLeftovers } from '../service/leftovers.js';
import { artifactsDirOf, connectService, databaseUrlFromEnv, proxyModelsFromEnv, redisUrlFromEnv } from '../service/open.js';
import { sweepFinetuneFolders } from '../train/finetune-stage.js';
import type { RetentionOptions } from '../service/retention.js';
import { SvcService } from '../service/service.js';
import type { ProviderOptions, ProxyRoutesOptions } from '../proxy/types.js';
import { hubRoutes } from './hub-routes.js';
import { metricsRoutes, SvcMetrics } from './metrics.js';
import { proxyRoutes } from './proxy-routes.js';
import type { RateLimitOptions } from '../contract/rate-limit.js';
import { answerFrameworkError, setSecurityHeaders } from './security-headers.js';
import { svcRoutes } from './routes.js';
import { checkTrustProxy, parseTrustProxy, type TrustProxy } from './trust-proxy.js';

/** Options of {@link startServer}; all optional. */
export interface ServerOptions {
  /**
   * Data directory: the SQLite file and the hub (`<data>/hub/<org>/<model_id>`). Default `./svc-data`. With a
   * `database`, only this replica's local cache.
   */
  dataDir?: string;
  /**
   * A PostgreSQL database (`postgres://...`) that several replicas share: records, job queue and leases. Default:
   * `SVC_DATABASE_URL`, else SQLite in `dataDir` (one server per directory).
   */
  database?: string;
  /**
   * A Redis server (`redis://host:port`) for the request limits' counts (requests per minute per key, failed
   * authentications per address), shared by every replica that names it, on SQLite or PostgreSQL alike. Default:
   * `SVC_REDIS_URL`, else the counts stay in `database` (every replica on it shares them) or, on SQLite, in the
   * process's memory. Token budgets are always summed in the store. A server that cannot be reached fails the start.
   */
  redis?: string;
  /**
   * The folder of model files; replicas on one database share it (a shared volume). Default `<dataDir>/hub`; with a
   * `database`, the model files live in the database and each replica caches them in `<dataDir>/model-cache`.
   */
  artifactsDir?: string;
  /** With a `database` and no `artifactsDir`: MiB of model files a replica's local cache keeps at most (default `kDefaultModelCacheBytes`). */
  modelCacheMb?: number;
  port?: number;
  host?: string;
  /** Proxy models listed to organizations with proxy access. Default: `SVC_PROXY_MODELS` (comma-separated). */
  proxyModels?: readonly string[];
  /**
   * Sentence-transformers folders registered as base models before anything starts, by the name requests give as
   * `model` (`{ 'e5-small': '/models/e5-small-v2' }`); a bad folder stops the start naming its entry, and so does a
   * name another replica on the same database registered on other files. Default: `SVC_BASE_MODELS` (`NAME=DIR,...`).
   */
  baseModels?: BaseModelDirs;
  pool?: PoolOptions;
  /** Which predictions may wait for a worker (else 503 `overloaded`, or 429 for an organization over its share); each bound left out is `kServicePredictQueue`'s. */
  predictQueue?: PredictQueueOptions;
  bodyLimit?: number;
  /** Provider URLs and keys for the proxy; missing ones come from `SVC_PROVIDER_{A,B,C}_{URL,KEY}`. */
  providers?: ProviderOptions;
  /** The proxy plugin (default: svc-classify's `proxyRoutes`); `false` serves no proxy routes. */
  proxy?: FastifyPluginAsync<ProxyRoutesOptions> | false;
  /** More options for the proxy plugin (`upstreamTimeoutMs`, `pingIntervalMs`, ...). */
  proxyOptions?: Omit<ProxyRoutesOptions, 'service'>;
  /** Request limits of /v2 and the proxy: the counting store, the window, failed authentications per address (Redis: `redis`). */
  rateLimit?: Omit<RateLimitOptions, 'redis'>;
  /** How long and how much of the proxy request log to keep (default 30 days, 100,000 rows per project), pruned hourly. */
  retention?: RetentionOptions;
  /** The least severe log line written (pino levels, or `silent`). Default: `SVC_LOG_LEVEL`, else `info` (one line per request). */
  logLevel?: LogLevel;
  /** Where log lines go, one JSON object a line. Default stdout. */
  logStream?: { write(line: string): void };
  /**
   * Serve `GET /metrics` to scrapers that send `Authorization: Bearer <token>`. Default: `SVC_METRICS_TOKEN`;
   * without a token it is not served.
   */
  metricsToken?: string;
  /**
   * Behind a reverse proxy or load balancer: which proxies' `X-Forwarded-For` names the client (Fastify's
   * `trustProxy`: `true`, a hop count, or the proxies' addresses and CIDR ranges), so that `request.ip`, and with it
   * the failed-authentication limit per address, is the client's and not the proxy's. Default: `SVC_TRUST_PROXY`,
   * else `false` (no header is believed: a client could name any address).
   */
  trustProxy?: TrustProxy;
}

/** The log levels, most severe first; `silent` writes nothing. */
export const kLogLevels = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const);
export type LogLevel = (typeof kLogLevels)[number];

export const kServerDefaults = Object.freeze({ dataDir: './svc-data', port: 8080, host: '127.0.0.1', logLevel: 'info' as LogLevel });

/** A log level as given (`options.logLevel`, `--log-level`), checked. */
export function logLevel(value: string, name: string): LogLevel {
  if (!(kLogLevels as readonly string[]).includes(value))
    throw new RangeError(`${name} must be one of ${kLogLevels.join(', ')}; got '${value}'`);
  return value as LogLevel;
}

export interface RunningServer {
  app: FastifyInstance;
  service: SvcService;
  /** The metrics `GET /metrics` serves; undefined when it is not served (no token). */
  metrics: SvcMetrics | undefined;
  /** `http://127.0.0.1:8080` */
  url: string;
  /** Stops taking connections, lets in-flight requests finish, puts running jobs back in the queue. */
  close(): Promise<void>;
}

/**
 * The stand-alone service (`svc serve`): the /v2 routes and the hub routes on
 * one Fastify server over a data directory, jobs left from a previous run resumed.
 *
 * @example
 * ```ts
 * const server = await startServer({ dataDir: './svc-data', port: 8080 });
 * server.url; // 'http://127.0.0.1:8080'
 * await server.close();
 * ```
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const dataDir = options.dataDir ?? kServerDefaults.dataDir;
  const env = environment();
  // First: a folder that cannot be served stops the start before any lock, store or worker is taken.
  if (options.baseModels !== undefined) registerBaseModels(options.baseModels, 'options.baseModels');
  else registerBaseModels(parseBaseModelEntries(env.baseModels, 'SVC_BASE_MODELS'), 'SVC_BASE_MODELS');
  if (options.pool) configurePool(options.pool);
  const level =
    options.logLevel !== undefined
      ? logLevel(options.logLevel, 'options.logLevel')
      : logLevel(env.logLevel ?? kServerDefaults.logLevel, 'SVC_LOG_LEVEL');
  const metricsToken = options.metricsToken ?? env.metricsToken;
  const trustProxy =
    options.trustProxy !== undefined
      ? checkTrustProxy(options.trustProxy, 'options.trustProxy')
      : checkTrustProxy(env.trustProxy ? parseTrustProxy(env.trustProxy, 'SVC_TRUST_PROXY') : false, 'SVC_TRUST_PROXY');
  // A shared service answers an overloaded queue at once instead of late.
  configurePredictQueue({
    maxWaitingTexts: options.predictQueue?.maxWaitingTexts ?? kServicePredictQueue.maxWaitingTexts,
    maxTenantTexts: options.predictQueue?.maxTenantTexts ?? kServicePredictQueue.maxTenantTexts,
    deadlineMs: options.predictQueue?.deadlineMs ?? kServicePredictQueue.deadlineMs,
  });
  const database = options.database ?? databaseUrlFromEnv();
  // Alone on a data directory, the lock comes first: nothing, not even a migration, touches a directory another
  // server holds. Replicas on a database share it instead; their job leases keep them apart, and the shared model
  // folder is never swept (another replica may be publishing into it).
  const release = database === undefined ? lockDataDir(dataDir) : () => {};
  let service: SvcService;
  try {
    const modelCacheBytes = options.modelCacheMb === undefined ? undefined : options.modelCacheMb * 1024 * 1024;
    const location = { dataDir, database, artifactsDir: options.artifactsDir, modelCacheBytes };
    await (database === undefined ? sweepLeftovers(artifactsDirOf(location)) : sweepFinetuneFolders());
    service = await connectService(location, options.proxyModels ?? proxyModelsFromEnv(), options.retention);
  } catch (error) {
    release();
    throw error;
  }
  const app = Fastify({
    // Fastify's own two lines per request are off: the plugins write one, with the caller and the route pattern.
    logger: { level, ...(options.logStream === undefined ? {} : { stream: options.logStream }) },
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across replicas and restarts, so a request id found in the logs names one request.
    genReqId: () => randomUUID(),
    forceCloseConnections: 'idle',
    frameworkErrors: answerFrameworkError,
    trustProxy,
  });
  const metrics = metricsToken === undefined ? undefined : new SvcMetrics({ service, processMetrics: true });
  const redis = options.redis ?? redisUrlFromEnv();
  let address: string;
  try {
    app.addHook('onRequest', setSecurityHeaders);
    app.get('/health', async () => ({ ok: true }));
    await app.register(svcRoutes, {
      prefix: '/v2',
      service,
      bodyLimit: options.bodyLimit,
      rateLimit: { ...options.rateLimit, ...(redis === undefined ? {} : { redis }) },
      proxy: options.proxy === false ? undefined : (options.proxy ?? proxyRoutes),
      proxyOptions: { ...(options.providers === undefined ? {} : { providers: options.providers }), ...options.proxyOptions },
      metrics,
    });
    await app.register(hubRoutes, { prefix: '/hub', service, metrics });
    // After /v2, whose request limits (and failed-authentication tally) it shares.
    if (metrics !== undefined) await app.register(metricsRoutes, { metrics, token: metricsToken });
    await service.start();
    for (const { name, fingerprint, dir } of await unregisteredBaseModels(service.store, registeredBaseModels())) {
      app.log.warn(
        `base model '${name}' (${fingerprint}, registered from ${dir}) is in the store but not registered here: its models cannot be served by this server; register it with --base-model ${name}=DIR`,
      );
    }
    address = await app.listen({ port: options.port ?? kServerDefaults.port, host: options.host ?? kServerDefaults.host });
  } catch (error) {
    // A port in use, a store that will not open or a Redis that cannot be reached: leave nothing running behind.
    await app.close().catch(() => {});
    metrics?.close();
    await service.close().catch(() => {});
    release();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    app,
    service,
    metrics,
    url: address,
    close: () => {
      closing ??= (async () => {
        await app.close();
        metrics?.close();
        await service.close();
        release();
      })();
      return closing;
    },
  };
}
