import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

import { errorTypeForStatus, SvcError } from '../errors.js';
import { kDialects } from '../proxy/dialects.js';
import type { ErrorBody } from '../contract/schemas.js';

export type { ErrorBody } from '../contract/schemas.js';

/** The longest run of non-space characters an error message sends back: an id or a path a client sent is cut to it. */
export const kMaxEchoedChars = 64;
/** The longest error message sent to a client. */
export const kMaxMessageChars = 1024;
const kLongWord = new RegExp(`\\S{${kMaxEchoedChars + 1},}`, 'g');

/**
 * An error message as a client may see it: ids and paths echoed from the request (a model id of 100 kB, a URL of
 * 16 kB) are cut to {@link kMaxEchoedChars}, and the whole message to {@link kMaxMessageChars}, each cut marked
 * with `…`. Our own words are all shorter than the bound, so only echoed values change.
 *
 * @example
 * ```ts
 * clientMessage(`The model '${'x'.repeat(100_000)}' does not exist`); // "The model 'xxxx…(64 in all)…' does not exist"
 * ```
 */
export function clientMessage(message: string): string {
  const words = message.replace(kLongWord, (word) => `${word.slice(0, kMaxEchoedChars)}…`);
  return words.length > kMaxMessageChars ? `${words.slice(0, kMaxMessageChars)}…` : words;
}

/**
 * Builds `{ error: { message, type, param, code } }`, the type following the status.
 *
 * @example
 * ```ts
 * errorBody(409, "The model 'svc-small-1a2b3c4d5e6f' is still training; retry when its status is 'trained'", 'conflict', 'model');
 * // { error: { message: "The model 'svc-small-1a2b3c4d5e6f' is still training; …", type: 'conflict', param: 'model', code: 'conflict' } }
 * ```
 */
export function errorBody(status: number, message: string, code: string | null, param: string | null = null): ErrorBody {
  return { error: { message: clientMessage(message), type: errorTypeForStatus(status), param, code } };
}

/** The one answer to a failure of ours: what failed stays in the server's log (see {@link errorReply}). */
const kInternalMessage = 'The service failed to handle the request';

/**
 * Maps anything a route throws to the error body and status: SvcError by its
 * status (validation failures are SvcErrors naming the field), Fastify's own
 * body-parser errors (413 over the limit, 400 bad JSON, 415), the rest to 500.
 * Every 500 is logged with its error, its stack and its causes' (pino's `err`), and answered with
 * {@link kInternalMessage} only: file paths, SQL and native messages never reach the client.
 */
export function errorReply(error: FastifyError | Error, request: FastifyRequest): { status: number; body: ErrorBody } {
  if (error instanceof SvcError && error.status === 500) {
    request.log.error({ err: error }, 'internal error');
    return { status: error.status, body: errorBody(error.status, kInternalMessage, error.code) };
  }
  if (error instanceof SvcError) {
    return { status: error.status, body: errorBody(error.status, error.message, error.code, error.param) };
  }
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        body: errorBody(413, `The request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`, 'payload_too_large'),
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: errorBody(415, 'Send the request body as application/json', 'invalid_request') };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, body: errorBody(400, 'The request body is not valid JSON', 'invalid_request') };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: errorBody(400, 'The request body is empty; send a JSON object', 'invalid_request') };
    default:
      break;
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return { status, body: errorBody(status, error.message, 'invalid_request') };
  }
  request.log.error({ err: error }, 'unhandled error');
  return { status: 500, body: errorBody(500, kInternalMessage, 'internal') };
}

/**
 * The one error handler of the /v2, proxy and hub plugins (set inside each plugin: the host app's
 * own handler stays in charge of its routes). A proxy route answers in its provider's error shape.
 */
export function svcErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = errorReply(error, request);
  if (status === 401) reply.header('www-authenticate', 'Bearer');
  if (error instanceof SvcError && error.retryAfterSeconds !== null) reply.header('retry-after', String(error.retryAfterSeconds));
  const dialect = request.routeOptions.config?.svcDialect;
  const { message, param, code } = body.error;
  const sent = dialect === undefined ? body : kDialects[dialect].errorBody(status, message, { param, code: code ?? undefined });
  void reply.code(status).type('application/json; charset=utf-8').send(sent);
}
