import http from 'node:http';
import https from 'node:https';

/** Keep-alive connection pools to the providers, one per plugin instance. */
export interface UpstreamAgents {
  http: http.Agent;
  https: https.Agent;
}

export function createUpstreamAgents(): UpstreamAgents {
  return {
    http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
    https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
  };
}

/** Where a provider route's requests go, parsed once when the plugin starts. */
export interface UpstreamTarget {
  secure: boolean;
  hostname: string;
  port: number;
  path: string;
}

export function upstreamTarget(url: string): UpstreamTarget {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'https:';
  return {
    secure,
    // URL keeps IPv6 literals bracketed; the socket wants them bare.
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? (secure ? 443 : 80) : Number(parsed.port),
    path: parsed.pathname + parsed.search,
  };
}

// The upstream's error message as we repeat it to the client and the log.
const kErrorMessageLimit = 500;

/** The human message inside a provider's error body (any of the three shapes), else the body itself, shortened. */
export function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } | string };
    const message = typeof body.error === 'object' && body.error !== null ? body.error.message : (body.message ?? body.error);
    if (typeof message === 'string') return shorten(message, kErrorMessageLimit);
  } catch {
    // not JSON
  }
  return shorten(text, 200);
}

function shorten(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}
