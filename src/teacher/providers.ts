// Where each chat-model provider's API lives and the key for it: from options, then the environment
// (`SVC_PROVIDER_{A,B,C}_{URL,KEY}`), then the public addresses. The proxy's routes and a teacher the library calls
// directly read the same settings, so one provider name and one default mean the same thing everywhere.
import { environment, type EnvironmentSource } from '../environment.js';
import * as is from '../is.js';

/** The providers the proxy and a teacher can reach, by the prefix their models take (`provider-a:gpt-4o-mini`). */
export type ProviderName = 'provider-a' | 'provider-b' | 'provider-c';

/** Where one provider's API lives and the operator's key for it. */
export interface ProviderEndpoint {
  /** Base URL, e.g. `https://api.openai.com/v1` (provider A), `https://api.mistral.ai` (B), `https://api.anthropic.com` (C). */
  url: string;
  /** The provider API key; empty when none is configured (the upstream then answers 401). */
  key: string;
}

/** Provider settings as a user gives them: every field optional, missing ones come from the environment or defaults. */
export type ProviderOptions = Partial<Record<ProviderName, Partial<ProviderEndpoint>>>;

/** Provider settings after resolution: every provider has a URL and a key. */
export type ProviderConfig = Readonly<Record<ProviderName, Readonly<ProviderEndpoint>>>;

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
