import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';

import { configurePool, type PoolOptions } from '../pool/pool.js';
import { configurePredictQueue, kServicePredictQueue, type PredictQueueOptions } from '../predict/batcher.js';
import { lockDataDir } from '../service/data-lock.js';
import { sweepLeftovers } from '../service/leftovers.js';
import { openService, proxyModelsFromEnv } from '../service/open.js';
import { SvcService } from '../service/service.js';
import type { ProviderOptions, ProxyRoutesOptions } from '../proxy/types.js';
import { hubRoutes } from './hub-routes.js';
import { proxyRoutes } from './proxy-routes.js';
import { answerFrameworkError, setSecurityHeaders } from './security-headers.js';
import { svcRoutes } from './routes.js';

/** Options of {@link startServer}; all optional. */
export interface ServerOptions {
  /** Data directory: the SQLite file and the hub (`<data>/hub/<org>/<model_id>`). Default `./svc-data`. */
  dataDir?: string;
  port?: number;
  host?: string;
  /** Proxy models listed to organizations with proxy access. Default: `SVC_PROXY_MODELS` (comma-separated). */
  proxyModels?: readonly string[];
  pool?: PoolOptions;
  /** How long predictions may wait for a worker before 503 `overloaded`; each bound left out is `kServicePredictQueue`'s. */
  predictQueue?: PredictQueueOptions;
  bodyLimit?: number;
  /** Provider URLs and keys for the proxy; missing ones come from `SVC_PROVIDER_{A,B,C}_{URL,KEY}`. */
  providers?: ProviderOptions;
  /** The proxy plugin (default: svc-classify's `proxyRoutes`); `false` serves no proxy routes. */
  proxy?: FastifyPluginAsync<ProxyRoutesOptions> | false;
  /** More options for the proxy plugin (`upstreamTimeoutMs`, `pingIntervalMs`, ...). */
  proxyOptions?: Omit<ProxyRoutesOptions, 'service'>;
}

export const kServerDefaults = Object.freeze({ dataDir: './svc-data', port: 8080, host: '127.0.0.1' });

export interface RunningServer {
  app: FastifyInstance;
  service: SvcService;
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
  if (options.pool) configurePool(options.pool);
  // A shared service answers an overloaded queue at once instead of late.
  configurePredictQueue({
    maxWaitingTexts: options.predictQueue?.maxWaitingTexts ?? kServicePredictQueue.maxWaitingTexts,
    deadlineMs: options.predictQueue?.deadlineMs ?? kServicePredictQueue.deadlineMs,
  });
  // The lock comes first: nothing, not even a migration, touches a directory another server holds.
  const release = lockDataDir(dataDir);
  let service: SvcService;
  try {
    await sweepLeftovers(dataDir);
    service = openService(dataDir, options.proxyModels ?? proxyModelsFromEnv());
  } catch (error) {
    release();
    throw error;
  }
  const app = Fastify({ logger: false, forceCloseConnections: 'idle', frameworkErrors: answerFrameworkError });
  app.addHook('onRequest', setSecurityHeaders);
  app.get('/health', async () => ({ ok: true }));
  await app.register(svcRoutes, {
    prefix: '/v2',
    service,
    bodyLimit: options.bodyLimit,
    proxy: options.proxy === false ? undefined : (options.proxy ?? proxyRoutes),
    proxyOptions: { ...(options.providers === undefined ? {} : { providers: options.providers }), ...options.proxyOptions },
  });
  await app.register(hubRoutes, { prefix: '/hub', service });
  let address: string;
  try {
    await service.start();
    address = await app.listen({ port: options.port ?? kServerDefaults.port, host: options.host ?? kServerDefaults.host });
  } catch (error) {
    // A port in use or a store that will not open: leave nothing running behind.
    await app.close().catch(() => {});
    await service.close().catch(() => {});
    release();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    app,
    service,
    url: address,
    close: () => {
      closing ??= (async () => {
        await app.close();
        await service.close();
        release();
      })();
      return closing;
    },
  };
}
