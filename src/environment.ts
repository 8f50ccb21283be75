// Every environment variable svc-classify reads is read here and nowhere else: one table of names (the same list
// as docs/configuration.md, "Environment variables"), one rule (an empty value is an unset one), and the check each
// value's form needs. Other modules get the values from `environment()` or as arguments. What a value means (a log
// level, a precision, a proxy address) is checked by the module that owns that meaning, naming the variable.
//
// The object reads the environment when a value is asked for, not once at start: a check runs only for the values
// a command uses (a wrong SVC_LOG_BODY_BYTES does not stop `svc predict`), and tests may set a variable and call again.

/** An environment to read: `process.env`, or a plain object in tests and for code that passes its own. */
export type EnvironmentSource = Readonly<Record<string, string | undefined>>;

/** The providers whose URL and key the environment may give. */
export type EnvironmentProvider = 'provider-a' | 'provider-b' | 'provider-c';

/** The values of svc-classify's environment variables; undefined (or an empty list) where a variable is unset or empty. */
export interface Environment {
  /** `SVC_DATABASE_URL`: the PostgreSQL database replicas share. */
  readonly databaseUrl: string | undefined;
  /** `SVC_REDIS_URL`: the Redis server for the request counts. */
  readonly redisUrl: string | undefined;
  /** `SVC_PROXY_MODELS`: provider models `GET /v2/models` lists, comma-separated, blanks dropped. */
  readonly proxyModels: readonly string[];
  /** `SVC_BASE_MODELS`: base model folders `svc serve` registers, `NAME=DIR` entries comma-separated, blanks dropped. */
  readonly baseModels: readonly string[];
  /** `SVC_PROVIDER_A_URL` / `_KEY` (B, C likewise): a provider's base URL and the operator's key for it. */
  provider(name: EnvironmentProvider): { readonly url: string | undefined; readonly key: string | undefined };
  /** `SVC_LOG_BODY_BYTES`: body bytes the proxy request log keeps per call; a TypeError unless digits. */
  readonly logBodyBytes: number | undefined;
  /** `SVC_LOG_PROJECT_BODY_BYTES`: body bytes one project's request log keeps in all; a TypeError unless digits. */
  readonly logProjectBodyBytes: number | undefined;
  /** `SVC_URL`: the service the client commands call. */
  readonly serviceUrl: string | undefined;
  /** `SVC_KEY`: the API key the client commands send. */
  readonly apiKey: string | undefined;
  /** `SVC_LOG_LEVEL`: `svc serve`'s log level. */
  readonly logLevel: string | undefined;
  /** `SVC_LOG_FORMAT`: `pretty` or `json`. */
  readonly logFormat: string | undefined;
  /** `SVC_METRICS_TOKEN`: the bearer token `GET /metrics` requires. */
  readonly metricsToken: string | undefined;
  /** `SVC_TRUST_PROXY`: which proxies' `X-Forwarded-For` to believe. */
  readonly trustProxy: string | undefined;
  /** `SVC_PRECISION`: the arithmetic predictions run in. */
  readonly precision: string | undefined;
  /** `SVC_ISA`: the kernel level cap (the native core reads it too, in cpu_features.cc). */
  readonly isa: string | undefined;
  /** `SVC_ADDON_PATH`: a `.node` file to load instead of the installed addon. */
  readonly addonPath: string | undefined;
  /** `LIBC`: `glibc` or `musl`, as node-gyp-build reads it when it picks a prebuilt addon. */
  readonly libc: string | undefined;
  /**
   * `SVC_KERNEL`: forces the kernel choice (`fp32`, `bf16-vector`, `bf16-amx`, `bf16-emulated`) instead of measuring.
   * The native core reads it too, for `bf16-emulated` (kernels/autotune.cc).
   */
  readonly kernel: string | undefined;
  /** `SVC_CACHE_DIR`: where the kernel measurements are cached. */
  readonly cacheDir: string | undefined;
  /** `XDG_CACHE_HOME`: the user's cache folder, the measurements' place without `SVC_CACHE_DIR`. */
  readonly xdgCacheHome: string | undefined;
}

/** The variables by the name each has in {@link Environment}. */
export const kEnvironmentVariables = Object.freeze({
  databaseUrl: 'SVC_DATABASE_URL',
  redisUrl: 'SVC_REDIS_URL',
  proxyModels: 'SVC_PROXY_MODELS',
  baseModels: 'SVC_BASE_MODELS',
  logBodyBytes: 'SVC_LOG_BODY_BYTES',
  logProjectBodyBytes: 'SVC_LOG_PROJECT_BODY_BYTES',
  serviceUrl: 'SVC_URL',
  apiKey: 'SVC_KEY',
  logLevel: 'SVC_LOG_LEVEL',
  logFormat: 'SVC_LOG_FORMAT',
  metricsToken: 'SVC_METRICS_TOKEN',
  trustProxy: 'SVC_TRUST_PROXY',
  precision: 'SVC_PRECISION',
  isa: 'SVC_ISA',
  addonPath: 'SVC_ADDON_PATH',
  libc: 'LIBC',
  kernel: 'SVC_KERNEL',
  cacheDir: 'SVC_CACHE_DIR',
  xdgCacheHome: 'XDG_CACHE_HOME',
});

const kProviderPrefixes: Readonly<Record<EnvironmentProvider, string>> = Object.freeze({
  'provider-a': 'SVC_PROVIDER_A',
  'provider-b': 'SVC_PROVIDER_B',
  'provider-c': 'SVC_PROVIDER_C',
});

/**
 * svc-classify's environment variables as read from `source` (default `process.env`), each when it is asked for.
 *
 * @example
 * ```ts
 * const env = environment({ SVC_PROXY_MODELS: 'provider-a:gpt-4o-mini, ', SVC_URL: '' });
 * env.proxyModels; // ['provider-a:gpt-4o-mini']
 * env.serviceUrl; // undefined (empty is unset)
 * environment({ SVC_LOG_BODY_BYTES: '64k' }).logBodyBytes; // throws TypeError('SVC_LOG_BODY_BYTES must be a positive integer')
 * ```
 */
export function environment(source: EnvironmentSource = process.env): Environment {
  const text = (name: string): string | undefined => source[name] || undefined;
  const digits = (name: string): number | undefined => {
    const value = text(name);
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value)) throw new TypeError(`${name} must be a positive integer`);
    return Number(value);
  };
  // Comma-separated entries, each trimmed, blanks dropped.
  const list = (name: string): string[] =>
    (text(name) ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0);
  const v = kEnvironmentVariables;
  return {
    get databaseUrl() {
      return text(v.databaseUrl);
    },
    get redisUrl() {
      return text(v.redisUrl);
    },
    get proxyModels() {
      return list(v.proxyModels);
    },
    get baseModels() {
      return list(v.baseModels);
    },
    provider(name: EnvironmentProvider) {
      const prefix = kProviderPrefixes[name];
      return { url: text(`${prefix}_URL`), key: text(`${prefix}_KEY`) };
    },
    get logBodyBytes() {
      return digits(v.logBodyBytes);
    },
    get logProjectBodyBytes() {
      return digits(v.logProjectBodyBytes);
    },
    get serviceUrl() {
      return text(v.serviceUrl);
    },
    get apiKey() {
      return text(v.apiKey);
    },
    get logLevel() {
      return text(v.logLevel);
    },
    get logFormat() {
      return text(v.logFormat);
    },
    get metricsToken() {
      return text(v.metricsToken);
    },
    get trustProxy() {
      return text(v.trustProxy);
    },
    get precision() {
      return text(v.precision);
    },
    get isa() {
      return text(v.isa);
    },
    get addonPath() {
      return text(v.addonPath);
    },
    get libc() {
      return text(v.libc);
    },
    get kernel() {
      return text(v.kernel);
    },
    get cacheDir() {
      return text(v.cacheDir);
    },
    get xdgCacheHome() {
      return text(v.xdgCacheHome);
    },
  };
}
