import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { ProviderName } from './types.js';

// What each provider API reads from a request besides its body, the key and the content type: anything else the
// client sends (cookies, its own credentials, `openai-organization`, proxy and tracing headers, SDK telemetry) stays
// with us. Names are lower case, as Node gives them.
const kCommonUpstream = ['accept', 'user-agent', 'idempotency-key'];
const kUpstreamAllowed: Readonly<Record<ProviderName, ReadonlySet<string>>> = Object.freeze({
  'provider-a': new Set([...kCommonUpstream, 'openai-beta']),
  'provider-b': new Set(kCommonUpstream),
  'provider-c': new Set([...kCommonUpstream, 'anthropic-version', 'anthropic-beta']),
});

// What a client needs from the provider's answer: how to read the body, and when and whether to retry. The rest --
// the operator's account (`openai-organization`, `openai-project`), its rate limits and quota, cookies, server and
// tracing details -- describes the operator's provider account, not the client's call.
const kDownstreamAllowed: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'x-request-id',
  'request-id',
]);

/** Longest header value passed on either way; a longer one is dropped rather than relayed. */
const kMaxHeaderValueLength = 1024;

function allowed(value: string | string[] | undefined): value is string | string[] {
  if (value === undefined) return false;
  const values = Array.isArray(value) ? value : [value];
  return values.every((v) => v.length <= kMaxHeaderValueLength);
}

/**
 * The headers sent upstream: the few the provider's API reads (`accept`, `user-agent`, `anthropic-version`,
 * `anthropic-beta`, `openai-beta`, `idempotency-key`), the body's type and length, and the operator's provider key.
 *
 * @example
 * ```ts
 * upstreamHeaders({ authorization: 'Bearer svc_x', 'openai-organization': 'org-1', accept: 'application/json' }, 'provider-a', 'sk-op', 42);
 * // { accept: 'application/json', 'content-type': 'application/json', 'content-length': 42, 'accept-encoding': 'identity', authorization: 'Bearer sk-op' }
 * ```
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  provider: ProviderName,
  providerKey: string,
  contentLength: number,
): OutgoingHttpHeaders {
  const names = kUpstreamAllowed[provider];
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (names.has(name) && allowed(value)) out[name] = value;
  }
  out['content-type'] = 'application/json';
  out['content-length'] = contentLength;
  // Plain text, so that the log and the usage reader can read the answer.
  out['accept-encoding'] = 'identity';
  if (provider === 'provider-c') {
    if (providerKey) out['x-api-key'] = providerKey;
    out['anthropic-version'] ??= '2023-06-01';
  } else if (providerKey) {
    out.authorization = `Bearer ${providerKey}`;
  }
  return out;
}

/** The upstream's response headers a client needs (see `kDownstreamAllowed`); a stream gets the no-buffering headers. */
export function downstreamHeaders(incoming: IncomingHttpHeaders, stream: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (!kDownstreamAllowed.has(name) || !allowed(value)) continue;
    if (stream && name === 'content-length') continue;
    out[name] = value;
  }
  if (stream) Object.assign(out, kStreamHeaders);
  return out;
}

/** Headers of every stream we send: proxies and browsers must not buffer or cache it. */
export const kStreamHeaders: Readonly<OutgoingHttpHeaders> = Object.freeze({
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
});
