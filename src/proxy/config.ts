import { SvcService } from '../service/service.js';
import type {
  ProviderConfig,
  ProviderName,
  ProviderOptions,
  ProxyRoutesOptions,
  RequestLogOptions,
  ResolvedProxyOptions,
} from './types.js';
import { environment, type EnvironmentSource } from '../environment.js';
import * as is from '../is.js';

/**
 * The providers' public API addresses, used when neither options nor environment name one.
 *
 * @example
 * ```ts
 * kDefaultProviderUrls['provider-b']; // 'https://api.mistral.ai'
 * ```
 */
export const kDefaultProviderUrls: Readonly<Record<ProviderName, string>> = Object.freeze({
  'provider-a': 'https://api.openai.com/v1',
  'provider-b': 'https://api.mistral.ai',
  'provider-c': 'https://api.anthropic.com',
});

export const kProviderNames: readonly ProviderName[] = Object.freeze(['provider-a', 'provider-b', 'provider-c']);

const kDefaults = Object.freeze({
  upstreamTimeoutMs: 600_000,
  pingIntervalMs: 5_000,
  bodyLimit: 16 * 1024 * 1024,
  logBodyBytes: 32 * 1024,
  logProjectBodyBytes: 256 * 1024 * 1024,
});

/**
 * Provider URLs and keys from options, then the environment (`SVC_PROVIDER_A_URL`, `SVC_PROVIDER_A_KEY`, B and C
 * likewise), then the public API addresses.
 *
 * @example
 * ```ts
 * resolveProviderConfig({ 'provider-a': { key: 'sk-op' } }, {});
 * // { 'provider-a': { url: 'https://api.openai.com/v1', key: 'sk-op' },
 * //   'provider-b': { url: 'https://api.mistral.ai', key: '' },
 * //   'provider-c': { url: 'https://api.anthropic.com', key: '' } }
 * ```
 */
export function resolveProviderConfig(options: ProviderOptions = {}, env?: EnvironmentSource): ProviderConfig {
  const out = {} as Record<ProviderName, { url: string; key: string }>;
  for (const name of kProviderNames) {
    const given = options[name] ?? {};
    const fromEnv = environment(env).provider(name);
    const url = given.url ?? fromEnv.url ?? kDefaultProviderUrls[name];
    const key = given.key ?? fromEnv.key ?? '';
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`options.providers['${name}'].url must be an http(s) URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`options.providers['${name}'].url must be an http(s) URL`);
    }
    is.string(key, `options.providers['${name}'].key`);
    out[name] = Object.freeze({ url: url.replace(/\/+$/, ''), key });
  }
  return Object.freeze(out);
}

const positiveInteger = (value: unknown, name: string, fallback: number) => is.positiveInteger(value ?? fallback, `options.${name}`);

/** Validates the plugin options and fills in defaults. */
export function resolveProxyOptions(options: ProxyRoutesOptions): ResolvedProxyOptions {
  is.object(options, 'options');
  const { service } = options;
  if (!(service instanceof SvcService)) throw new TypeError('options.service must be an SvcService');
  return {
    service,
    providers: resolveProviderConfig(options.providers, options.env),
    upstreamTimeoutMs: positiveInteger(options.upstreamTimeoutMs, 'upstreamTimeoutMs', kDefaults.upstreamTimeoutMs),
    pingIntervalMs: positiveInteger(options.pingIntervalMs, 'pingIntervalMs', kDefaults.pingIntervalMs),
    bodyLimit: positiveInteger(options.bodyLimit, 'bodyLimit', kDefaults.bodyLimit),
    requestLog: resolveRequestLogOptions(options.requestLog, options.env),
  };
}

/** Request-log body limits from options, then `SVC_LOG_BODY_BYTES` and `SVC_LOG_PROJECT_BODY_BYTES`, then defaults. */
function resolveRequestLogOptions(options: RequestLogOptions = {}, env?: EnvironmentSource): Readonly<Required<RequestLogOptions>> {
  is.object(options, 'options.requestLog');
  const fromEnv = environment(env);
  return Object.freeze({
    maxBodyBytes: is.positiveInteger(
      options.maxBodyBytes ?? fromEnv.logBodyBytes ?? kDefaults.logBodyBytes,
      'options.requestLog.maxBodyBytes',
    ),
    maxProjectBodyBytes: is.positiveInteger(
      options.maxProjectBodyBytes ?? fromEnv.logProjectBodyBytes ?? kDefaults.logProjectBodyBytes,
      'options.requestLog.maxProjectBodyBytes',
    ),
  });
}
