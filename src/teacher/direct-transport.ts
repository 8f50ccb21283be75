// The way out for a teacher the library calls itself (train() with a `teacher`, no service): each labelling call goes
// straight to the provider's API with the given key, over fetch. The service never uses it: its calls go through the
// proxy, to be logged and budgeted (proxy/teacher-transport.ts).
import { performance } from 'node:perf_hooks';

import type { TeacherCallReply, TeacherTransport } from './labeller.js';
import type { ProviderEndpoint, ProviderName } from './providers.js';

/** Each provider's own API path for a chat call, after its base URL. */
const kPaths: Readonly<Record<ProviderName, string>> = Object.freeze({
  'provider-a': '/chat/completions',
  'provider-b': '/v1/chat/completions',
  'provider-c': '/v1/messages',
});

/** Longest wait for an answer before the call counts as unanswered (and is retried). */
export const kDirectTeacherTimeoutMs = 120_000;

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** Prompt and completion tokens of a reply body, in the provider's own field names. */
function usageOf(provider: ProviderName, text: string): { tokensIn: number | null; tokensOut: number | null } {
  try {
    const usage = (JSON.parse(text) as { usage?: Record<string, unknown> }).usage ?? {};
    return provider === 'provider-c'
      ? { tokensIn: count(usage.input_tokens), tokensOut: count(usage.output_tokens) }
      : { tokensIn: count(usage.prompt_tokens), tokensOut: count(usage.completion_tokens) };
  } catch {
    return { tokensIn: null, tokensOut: null };
  }
}

/**
 * A transport that posts each call to the provider of `teacher` (`provider-a:gpt-4o-mini`) at `endpoint`.
 *
 * @example
 * ```ts
 * const send = directTeacherTransport('provider-a:gpt-4o-mini', { url: 'https://api.openai.com/v1', key: process.env.OPENAI_API_KEY! });
 * (await send(body, AbortSignal.timeout(60_000))).status; // 200
 * ```
 */
export function directTeacherTransport(teacher: string, endpoint: ProviderEndpoint, timeoutMs = kDirectTeacherTimeoutMs): TeacherTransport {
  const provider = teacher.slice(0, teacher.indexOf(':')) as ProviderName;
  const url = endpoint.url + kPaths[provider];
  const auth: Record<string, string> =
    provider === 'provider-c'
      ? { 'x-api-key': endpoint.key, 'anthropic-version': '2023-06-01' }
      : { authorization: `Bearer ${endpoint.key}` };
  return async (body, signal): Promise<TeacherCallReply> => {
    const started = performance.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify(body),
        signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      });
      const text = await response.text();
      const retryAfter = Number(response.headers.get('retry-after'));
      return {
        status: response.status,
        body: text,
        ...(response.ok ? usageOf(provider, text) : { tokensIn: null, tokensOut: null }),
        ms: performance.now() - started,
        retryAfterMs: Number.isFinite(retryAfter) && response.headers.has('retry-after') ? retryAfter * 1000 : null,
      };
    } catch (error) {
      // No answer (unreachable, timed out): retried like a 5xx.
      return {
        status: 0,
        body: (error as Error).message,
        tokensIn: null,
        tokensOut: null,
        ms: performance.now() - started,
        retryAfterMs: null,
      };
    }
  };
}
