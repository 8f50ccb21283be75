// The proxy's request log as the store keeps it (rows, pages, ranges), the budget month a moment falls in, and the
// request counts shared by replicas. Part of the Store contract (types.ts re-exports all of it).
import type { ProviderName } from '../teacher/providers.js';
import type { Millis } from './types.js';

export type { ProviderName } from '../teacher/providers.js';

export interface RequestLogRow {
  /** Assigned by the store on insert; increases with time. */
  id: number;
  projectId: string;
  keyId: string;
  provider: ProviderName;
  /** The model as the client sent it, prefix included (`provider-a:gpt-x`). */
  model: string;
  stream: boolean;
  /** Status sent to the client (0 when the client went away first). */
  status: number;
  /** Time to the first response byte sent to the client, ms; null when none was sent. */
  ttfbMs: number | null;
  totalMs: number;
  tokensIn: number | null;
  tokensOut: number | null;
  error: string | null;
  /** Bodies truncated to 64 KiB with secrets redacted. */
  requestBody: string;
  responseBody: string;
  createdAt: Millis;
}

/** A request-log row as a list shows it: each body cut to its first characters, the whole body's size beside it. */
export interface RequestLogPreview extends RequestLogRow {
  /** UTF-8 bytes of the whole request body; more than `requestBody` holds when it was cut. */
  requestBodyBytes: number;
  responseBodyBytes: number;
}

/** Which rows {@link Store.readRequestLogRange} reads: unset bounds do not bound. */
export interface RequestLogRange {
  since?: Millis;
  until?: Millis;
  model?: string;
  afterId?: number;
  limit: number;
}

/** A page of the request log: its rows, newest first, and whether older rows follow. */
export interface RequestLogPage {
  rows: RequestLogPreview[];
  more: boolean;
}

/**
 * The calendar month (UTC) a moment falls in, as budgets count it: `YYYY-MM`.
 *
 * @example
 * ```ts
 * usageMonth(Date.UTC(2026, 10, 30, 23, 59)); // '2026-11'
 * ```
 */
export function usageMonth(at: Millis): string {
  return new Date(at).toISOString().slice(0, 7);
}

/** Tokens a request-log row counts against its project's budget: input plus output, unknown ones as 0. */
export function rowTokens(row: Pick<RequestLogRow, 'tokensIn' | 'tokensOut'>): number {
  return (row.tokensIn ?? 0) + (row.tokensOut ?? 0);
}

/** A key's count in its open window and the time left until the window ends (0 and 0: no open window). */
export interface RequestCount {
  count: number;
  resetInMs: number;
}

/**
 * Request counts in fixed windows, kept where every replica on the store sees them: the request limits count
 * through it, so that a key's limit holds across replicas. A window starts with a key's first request and lasts
 * `windowMs`; the count starts again at 1 after it.
 */
export interface RequestCounter {
  /** Counts one request for `key`, atomically, and returns its count in the window. */
  countRequest(key: string, windowMs: number): Promise<RequestCount>;
  /** The key's count in its open window, without counting. */
  readRequestCount(key: string): Promise<RequestCount>;
}
