import type { RateLimitOptions } from '../contract/rate-limit.js';
import type { SvcService } from '../service/service.js';
import type { ProviderConfig, ProviderOptions } from '../teacher/providers.js';

export type { ProviderConfig, ProviderEndpoint, ProviderName, ProviderOptions } from '../teacher/providers.js';

/**
 * Options of the `proxyRoutes` Fastify plugin. Callers, projects and proxy grants are checked by
 * `service` (the /v2 plugin passes its own); the request log goes to `service.store`.
 */
export interface ProxyRoutesOptions {
  service: SvcService;
  /** Upstream URLs and keys; missing settings come from `SVC_PROVIDER_{A,B,C}_{URL,KEY}` or the public API addresses. */
  providers?: ProviderOptions;
  /** Give up on an upstream that sends nothing for this long: 504 before the reply started, an error event after. Default 600000. */
  upstreamTimeoutMs?: number;
  /** While a stream waits for its first upstream byte, send a `: ping` comment this often. Default 5000. */
  pingIntervalMs?: number;
  /** Largest request body accepted, bytes. Default 16 MiB. */
  bodyLimit?: number;
  /** Environment to read provider settings from. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Request limits, when this is the service's first plugin registered; else the service's limits apply (see `RateLimitOptions`). */
  rateLimit?: RateLimitOptions;
  /** How much of the calls' bodies the request log keeps; missing settings come from the environment, then defaults. */
  requestLog?: RequestLogOptions;
}

/** Request-log body limits as a user gives them. */
export interface RequestLogOptions {
  /**
   * Request and response body bytes kept per call, together (UTF-8, after redaction). Default
   * `SVC_LOG_BODY_BYTES`, else 32768. A call that failed and cost no tokens keeps at most 2048.
   */
  maxBodyBytes?: number;
  /**
   * Body bytes one project's log keeps in all; past it, new rows keep their metadata and tokens but not their
   * bodies, until retention prunes old rows. Default `SVC_LOG_PROJECT_BODY_BYTES`, else 268435456 (256 MiB).
   */
  maxProjectBodyBytes?: number;
}

/** `ProxyRoutesOptions` with every default applied. */
export interface ResolvedProxyOptions {
  service: SvcService;
  providers: ProviderConfig;
  upstreamTimeoutMs: number;
  pingIntervalMs: number;
  bodyLimit: number;
  requestLog: Readonly<Required<RequestLogOptions>>;
}
