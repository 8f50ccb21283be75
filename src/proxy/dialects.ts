import { errorTypeForStatus } from '../errors.js';
import type { ProviderName } from './types.js';

/**
 * A dialect is the API a client speaks to one of our routes: its error shape (so the official SDK raises its
 * own typed error), its stream error event, where usage sits, and how a complete stream ends.
 * The route fixes the dialect; the model prefix picks the provider that serves it.
 */
export interface Dialect {
  /** Route under `/v2/{project_id}`. */
  readonly route: string;
  /** Providers whose API speaks this dialect, with the path appended to the provider's base URL. */
  readonly upstreamPaths: Partial<Record<ProviderName, string>>;
  errorBody(status: number, message: string, detail?: ErrorDetail): unknown;
  /** One complete SSE event that makes the client's SDK raise an error. */
  streamErrorEvent(status: number, message: string, detail?: ErrorDetail): string;
  /** Whether a block of complete SSE events holds the stream's final event. */
  isTerminal(events: string): boolean;
  /** Tokens from a non-streaming JSON response body. */
  usageFromBody(body: unknown): Usage;
  /** Folds one streamed event's JSON data into the usage seen so far. */
  usageFromEvent(data: unknown, usage: Usage): Usage;
  /** The generated text one streamed event's JSON data adds (content, tool arguments, reasoning), '' when none. */
  streamedText(data: unknown): string;
}

/** The stable `SvcError` code and the request field an error is about, when known. */
export interface ErrorDetail {
  code?: string | null;
  param?: string | null;
}

export interface Usage {
  tokensIn: number | null;
  tokensOut: number | null;
}

export type DialectName = 'openai' | 'mistral' | 'anthropic';

const kAnthropicTypes: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
};

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null;
}

function chatUsage(body: unknown, previous: Usage): Usage {
  const usage = record(record(body)?.usage);
  if (!usage) return previous;
  return {
    tokensIn: count(usage.prompt_tokens) ?? previous.tokensIn,
    tokensOut: count(usage.completion_tokens) ?? previous.tokensOut,
  };
}

/** Text in an OpenAI/Mistral chunk's deltas: content (a string, or Mistral's parts), refusals, reasoning, tool arguments. */
function chatDeltaText(data: unknown): string {
  const choices = record(data)?.choices;
  if (!Array.isArray(choices)) return '';
  let text = '';
  for (const choice of choices) {
    const delta = record(record(choice)?.delta);
    if (!delta) continue;
    text += textOf(delta.content) + textOf(delta.refusal) + textOf(delta.reasoning_content) + textOf(delta.reasoning);
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls) text += textOf(record(record(call)?.function)?.arguments);
    }
  }
  return text;
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  return value.map((part) => textOf(record(part)?.text ?? record(part)?.thinking)).join('');
}

const kDonePattern = /^data: ?\[DONE\][ \t]*\r?$/m;
const kNoUsage: Usage = Object.freeze({ tokensIn: null, tokensOut: null });

const openai: Dialect = {
  route: '/chat/completions',
  upstreamPaths: { 'provider-a': '/chat/completions', 'provider-b': '/v1/chat/completions' },
  errorBody(status, message, detail = {}) {
    return { error: { message, type: errorTypeForStatus(status), param: detail.param ?? null, code: detail.code ?? null } };
  },
  streamErrorEvent(status, message, detail) {
    return `data: ${JSON.stringify(this.errorBody(status, message, detail))}\n\n`;
  },
  isTerminal: (events) => kDonePattern.test(events),
  usageFromBody: (body) => chatUsage(body, kNoUsage),
  usageFromEvent: (data, usage) => chatUsage(data, usage),
  streamedText: chatDeltaText,
};

const mistral: Dialect = {
  route: '/v1/chat/completions',
  upstreamPaths: openai.upstreamPaths,
  errorBody(status, message, detail = {}) {
    return { object: 'error', message, type: errorTypeForStatus(status), param: detail.param ?? null, code: String(status) };
  },
  streamErrorEvent(status, message, detail) {
    return `data: ${JSON.stringify(this.errorBody(status, message, detail))}\n\n`;
  },
  isTerminal: openai.isTerminal,
  usageFromBody: openai.usageFromBody,
  usageFromEvent: openai.usageFromEvent,
  streamedText: chatDeltaText,
};

const anthropic: Dialect = {
  route: '/v1/messages',
  upstreamPaths: { 'provider-c': '/v1/messages' },
  errorBody(status, message) {
    return { type: 'error', error: { type: kAnthropicTypes[status] ?? 'api_error', message } };
  },
  streamErrorEvent(status, message) {
    return `event: error\ndata: ${JSON.stringify(this.errorBody(status, message))}\n\n`;
  },
  isTerminal: (events) => /^event: ?message_stop[ \t]*\r?$/m.test(events),
  usageFromBody(body) {
    const usage = record(record(body)?.usage);
    return { tokensIn: count(usage?.input_tokens), tokensOut: count(usage?.output_tokens) };
  },
  usageFromEvent(data, previous) {
    const event = record(data);
    // message_start carries the input count; message_delta the cumulative output (and, lately, input) count.
    const usage = record(event?.type === 'message_start' ? record(event.message)?.usage : event?.usage);
    if (!usage) return previous;
    return {
      tokensIn: count(usage.input_tokens) ?? previous.tokensIn,
      tokensOut: count(usage.output_tokens) ?? previous.tokensOut,
    };
  },
  streamedText(data) {
    const event = record(data);
    if (event?.type !== 'content_block_delta') return '';
    const delta = record(event.delta);
    return textOf(delta?.text) + textOf(delta?.partial_json) + textOf(delta?.thinking);
  },
};

export const kDialects: Readonly<Record<DialectName, Dialect>> = Object.freeze({ openai, mistral, anthropic });
