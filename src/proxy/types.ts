import type { ProviderName, Store } from '../store/types.js';

export type { ProviderName } from '../store/types.js';

/** Where one provider's API lives and the operator's key for it. */
export interface ProviderEndpoint {
  /** Base URL, e.g. `https://api.openai.com/v1` (provider A), `https://api.mistral.ai` (B), `https://api.anthropic.com` (C). */
  url: string;
  /** The operator's provider API key; empty when none is configured (the upstream then answers 401). */
  key: string;
}

/** Provider settings as a user gives them: every field optional, missing ones come from the environment or defaults. */
export type ProviderOptions = Partial<Record<ProviderName, Partial<ProviderEndpoint>>>;

/** Provider settings after resolution: every provider has a URL and a key. */
export type ProviderConfig = Readonly<Record<ProviderName, Readonly<ProviderEndpoint>>>;

/** Who is calling: the key's organization and the key's id (safe to log). */
export interface KeyIdentity {
  orgId: string;
  keyId: string;
}

/**
 * Resolves an `Authorization` header value (`Bearer svc_...`) or a bare key to its identity.
 * Throws (any error; an `SvcError` with code `authentication` is expected) when the key is unknown or revoked.
 */
export type Authenticate = (authorizationHeaderOrKey: string) => Promise<KeyIdentity> | KeyIdentity;

/**
 * The part of the service the proxy uses (`SvcService` has this shape): its store, its key check and, when it has
 * one, its proxy access rule.
 */
export interface ProxyService {
  store: Store;
  authenticate(authorizationHeaderOrKey: string): Promise<KeyIdentity> | KeyIdentity;
  /** Resolves when the caller's organization owns the project and has proxy access; throws SvcError otherwise. */
  authorizeProxy?(principal: KeyIdentity, projectId: string): Promise<unknown>;
}

/**
 * Options of the `proxyRoutes` Fastify plugin: either `service` (as the /v2 plugin passes it) or `store` and
 * `authenticate`.
 */
export interface ProxyRoutesOptions {
  service?: ProxyService;
  /** Projects, organizations (proxy access) and the request log. Defaults to `service.store`. */
  store?: Store;
  /** Defaults to `service.authenticate`. */
  authenticate?: Authenticate;
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
}

/** `ProxyRoutesOptions` with every default applied. */
export interface ResolvedProxyOptions {
  store: Store;
  authenticate: Authenticate;
  authorizeProxy: ((principal: KeyIdentity, projectId: string) => Promise<unknown>) | null;
  providers: ProviderConfig;
  upstreamTimeoutMs: number;
  pingIntervalMs: number;
  bodyLimit: number;
}
