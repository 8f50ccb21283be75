import { SvcService } from '../service/service.js';
import type { ProxyRoutesOptions, RequestLogOptions, ResolvedProxyOptions } from './types.js';
import { resolveProviderConfig } from '../teacher/providers.js';

export { kDefaultProviderUrls, kProviderNames, resolveProviderConfig } from '../teacher/providers.js';

const kDefaults = Object.freeze({
  upstreamTimeoutMs: 600_000,
  pingIntervalMs: 5_000,
  bodyLimit: 16 * 1024 * 1024,
  logBodyBytes: 32 * 1024,
  logProjectBodyBytes: 256 * 1024 * 1024,
});
import { environment, type EnvironmentSource } from '../environment.js';
import * as is from '../is.js';

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
