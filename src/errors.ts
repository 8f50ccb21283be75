/**
 * The one error class every layer of svc-classify throws. `code` is stable and
 * safe to branch on; `status` is the HTTP status the service answers with.
 */
export type SvcErrorCode =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'rate_limited'
  | 'budget_exceeded'
  | 'overloaded'
  | 'upstream_error'
  | 'upstream_timeout'
  | 'native_missing'
  | 'native_error'
  | 'aborted'
  | 'internal';

const kStatusByCode: Readonly<Record<SvcErrorCode, number>> = Object.freeze({
  invalid_request: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  budget_exceeded: 403,
  overloaded: 503,
  upstream_error: 502,
  upstream_timeout: 504,
  native_missing: 500,
  native_error: 500,
  aborted: 499,
  internal: 500,
});

export interface SvcErrorOptions {
  /** The request field the error is about, e.g. `examples[3].label`. */
  param?: string;
  cause?: unknown;
  /** Seconds a client should wait before trying again (the `retry-after` header of a 429 or 503). */
  retryAfterSeconds?: number;
}

export class SvcError extends Error {
  readonly code: SvcErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly retryAfterSeconds: number | null;

  constructor(code: SvcErrorCode, message: string, options: SvcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = kStatusByCode[code];
    this.param = options.param ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
  }
}

/**
 * Native calls report failures as plain `Error`s carrying the C++ message.
 * Rethrow them as `SvcError` so callers see one error model, with their own stack.
 */
export function fromNativeError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const wrapped = new SvcError('native_error', message, { cause: error });
  Error.captureStackTrace?.(wrapped, fromNativeError);
  return wrapped;
}

/**
 * The one rule for calling into the addon, used by every wrapped class (Encoder, EncoderTrainer,
 * Tokenizer): a RangeError or TypeError is the caller's mistake (bad ids, lengths, element
 * types) and is kept as is; anything else the C++ side throws becomes `SvcError('native_error')`.
 */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof RangeError || error instanceof TypeError) throw error;
    throw fromNativeError(error);
  }
}

// The `type` of the `{ error: { message, type, param, code } }` body for each status, as
// OpenAI-compatible clients expect it. The /v2 routes and the provider-A proxy share it.
const kErrorTypeByStatus: Readonly<Record<number, string>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict',
  413: 'request_too_large',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  502: 'upstream_error',
  503: 'overloaded_error',
  504: 'timeout_error',
});

/** The error body's `type` for an HTTP status: the table above, else `invalid_request_error` / `api_error`. */
export function errorTypeForStatus(status: number): string {
  return kErrorTypeByStatus[status] ?? (status < 500 ? 'invalid_request_error' : 'api_error');
}
