import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { ProviderName } from './types.js';

// Hop-by-hop headers (RFC 9110 7.6.1) and ones Node sets itself.
const kHopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

// The client's credentials, cookies and account scoping belong to our service, never to the operator's provider
// account; `host`, `content-length` and `expect` describe the client's hop; we ask for an identity encoding so the
// log and the usage reader see plain text.
const kNeverUpstream = new Set([
  ...kHopByHop,
  'authorization',
  'x-api-key',
  'api-key',
  'cookie',
  'cookie2',
  'host',
  'content-length',
  'expect',
  'accept-encoding',
  'openai-organization',
  'openai-project',
]);

const kNeverDownstream = new Set([...kHopByHop, 'set-cookie', 'set-cookie2']);

/** Headers named by the `Connection` header are hop-by-hop too. */
function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  if (!value) return new Set();
  return new Set(value.split(',').map((token) => token.trim().toLowerCase()));
}

/**
 * The headers sent upstream: the client's own (SDK version, `anthropic-version`, `anthropic-beta`, ...), minus
 * credentials, cookies and hop-by-hop headers, plus the operator's provider key.
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  provider: ProviderName,
  providerKey: string,
  contentLength: number,
): OutgoingHttpHeaders {
  const dropped = connectionTokens(incoming);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || kNeverUpstream.has(name) || dropped.has(name)) continue;
    out[name] = value;
  }
  out['content-type'] = 'application/json';
  out['content-length'] = contentLength;
  out['accept-encoding'] = 'identity';
  if (provider === 'provider-c') {
    if (providerKey) out['x-api-key'] = providerKey;
    out['anthropic-version'] ??= '2023-06-01';
  } else if (providerKey) {
    out.authorization = `Bearer ${providerKey}`;
  }
  return out;
}

/** The upstream's response headers as the client gets them; a stream gets the no-buffering headers. */
export function downstreamHeaders(incoming: IncomingHttpHeaders, stream: boolean): OutgoingHttpHeaders {
  const dropped = connectionTokens(incoming);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || kNeverDownstream.has(name) || dropped.has(name)) continue;
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
