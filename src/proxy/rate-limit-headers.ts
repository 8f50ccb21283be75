import type { ServerResponse } from 'node:http';
import type { DialectName } from './dialects.js';

// The request limiter writes OpenAI's names (`x-ratelimit-{limit,remaining,reset}-requests`, the reset as a Go-style
// duration, e.g. `59.998s`); a client of another provider's API reads that provider's names.
const kOpenAiNames = Object.freeze({
  limit: 'x-ratelimit-limit-requests',
  remaining: 'x-ratelimit-remaining-requests',
  reset: 'x-ratelimit-reset-requests',
});

/**
 * Renames the request-limit headers already set on `res` to those of the route's provider API:
 * - Anthropic: `anthropic-ratelimit-requests-{limit,remaining}`, and `-reset` as the RFC 3339 moment the window
 *   ends (whole seconds, rounded up);
 * - Mistral: `x-ratelimit-{limit,remaining}-req-minute` (Mistral sends no reset time for requests; `retry-after`
 *   stays on a 429);
 * - OpenAI: left as they are.
 *
 * @example
 * ```ts
 * // x-ratelimit-limit-requests: 600, x-ratelimit-remaining-requests: 599, x-ratelimit-reset-requests: 59.998s
 * providerRateLimitHeaders(res, 'anthropic', Date.UTC(2026, 10, 26, 12, 0, 0));
 * // anthropic-ratelimit-requests-limit: 600, anthropic-ratelimit-requests-remaining: 599,
 * // anthropic-ratelimit-requests-reset: 2026-11-26T12:01:00Z
 * ```
 */
export function providerRateLimitHeaders(res: ServerResponse, dialect: DialectName, now: number = Date.now()): void {
  if (dialect === 'openai') return;
  const limit = res.getHeader(kOpenAiNames.limit);
  const remaining = res.getHeader(kOpenAiNames.remaining);
  const reset = res.getHeader(kOpenAiNames.reset);
  if (limit === undefined) return;
  for (const name of Object.values(kOpenAiNames)) res.removeHeader(name);
  if (dialect === 'anthropic') {
    res.setHeader('anthropic-ratelimit-requests-limit', String(limit));
    if (remaining !== undefined) res.setHeader('anthropic-ratelimit-requests-remaining', String(remaining));
    const resetMs = typeof reset === 'string' ? durationMs(reset) : null;
    if (resetMs !== null) {
      const at = Math.ceil((now + resetMs) / 1000) * 1000;
      res.setHeader('anthropic-ratelimit-requests-reset', new Date(at).toISOString().replace(/\.000Z$/, 'Z'));
    }
  } else {
    res.setHeader('x-ratelimit-limit-req-minute', String(limit));
    if (remaining !== undefined) res.setHeader('x-ratelimit-remaining-req-minute', String(remaining));
  }
}

/** A Go-style duration as the limiter writes it (`850ms`, `1.5s`, `6m0s`) in ms; null when it is not one. */
export function durationMs(text: string): number | null {
  const match = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)(ms|s))?$/.exec(text);
  if (match === null || text === '') return null;
  const minutes = Number(match[1] ?? 0);
  const amount = Number(match[2] ?? 0);
  return minutes * 60_000 + (match[3] === 'ms' ? amount : amount * 1000);
}
