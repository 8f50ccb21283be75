import type { ProviderName } from './types.js';

/** Providers whose streams carry usage only when asked with `stream_options.include_usage` (OpenAI's API). */
const kUsageOnRequest: ReadonlySet<ProviderName> = new Set(['provider-a']);

/**
 * Makes an OpenAI-style stream report its usage, so that its tokens count against the project's budget, whatever
 * the client sent: when it did not ask for `stream_options.include_usage` (left it out, set it false, or sent a
 * `stream_options` that is not an object), this asks for it in `body` and returns true: the caller then drops the
 * extra usage chunk ({@link isUsageOnlyChunk}), and the client gets the stream it asked for. A client's other
 * stream options are kept; one that is not an object had none.
 *
 * @example
 * ```ts
 * const body = { model: 'gpt-4o-mini', stream: true, messages, stream_options: 'none' };
 * askForStreamUsage(body, 'provider-a'); // true; body.stream_options is { include_usage: true }
 * ```
 */
export function askForStreamUsage(body: Record<string, unknown>, provider: ProviderName): boolean {
  if (body.stream !== true || !kUsageOnRequest.has(provider)) return false;
  const given = body.stream_options;
  const options = given !== null && typeof given === 'object' && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
  if (options.include_usage === true) return false;
  body.stream_options = { ...options, include_usage: true };
  return true;
}

/** The chunk OpenAI adds for `include_usage`: no choices, only the usage. */
export function isUsageOnlyChunk(data: unknown): boolean {
  if (data === null || typeof data !== 'object') return false;
  const chunk = data as { choices?: unknown; usage?: unknown };
  return Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage !== null && typeof chunk.usage === 'object';
}
