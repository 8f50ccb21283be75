import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';

import { errorTypeForStatus, SvcError } from '../errors.js';

/** The error body of every /v2 and hub route. */
export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
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
  return { error: { message, type: errorTypeForStatus(status), param, code } };
}

/** `examples.3.label` from zod's path, written as users write it: `examples[3].label`. */
function formatPath(path: readonly (string | number)[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

const kArticles: Record<string, string> = { array: 'an array', object: 'an object', integer: 'an integer' };

interface ZodIssueLike {
  keyword: string;
  instancePath: string;
  message: string;
  params: { keys?: string[]; expected?: string };
}

/** One validation issue as a 400 body naming the field. */
function validationBody(issue: ZodIssueLike, context: string | undefined): ErrorBody {
  const path = issue.instancePath
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  if (issue.keyword === 'unrecognized_keys') {
    // Worded as the library words it: "the request has unknown field 'foo'".
    const keys = issue.params.keys ?? [];
    const owner = path.length > 0 ? formatPath(path) : context === 'body' || context === undefined ? 'the request' : `the ${context}`;
    const list = keys.map((k) => `'${k}'`).join(', ');
    return errorBody(400, `${owner} has unknown field${keys.length === 1 ? '' : 's'} ${list}`, 'invalid_request', formatPath([...path, keys[0] ?? '']));
  }
  const param = path.length > 0 ? formatPath(path) : null;
  if (issue.keyword === 'invalid_type' && param !== null) {
    if (/received undefined/.test(issue.message)) {
      return errorBody(400, `${param} is required`, 'invalid_request', param);
    }
    const expected = issue.params.expected ?? 'value';
    return errorBody(400, `${param} must be ${kArticles[expected] ?? `a ${expected}`}`, 'invalid_request', param);
  }
  if (issue.keyword === 'invalid_type') {
    return errorBody(400, `The request body must be a JSON object`, 'invalid_request', null);
  }
  return errorBody(400, param === null ? issue.message : `${issue.message.includes(param) ? '' : `${param}: `}${issue.message}`, 'invalid_request', param);
}

/**
 * Maps anything a route throws to the error body and status: SvcError by its
 * status, zod validation failures to 400 naming the field, Fastify's own
 * body-parser errors (413 over the limit, 400 bad JSON, 415), the rest to 500.
 */
export function errorReply(error: FastifyError | Error, request: FastifyRequest): { status: number; body: ErrorBody } {
  if (error instanceof SvcError) {
    return { status: error.status, body: errorBody(error.status, error.message, error.code, error.param) };
  }
  const fastifyError = error as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fastifyError)) {
    const issue = fastifyError.validation[0] as unknown as ZodIssueLike;
    return { status: 400, body: validationBody(issue, fastifyError.validationContext) };
  }
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
  return { status: 500, body: errorBody(500, 'The service failed to handle the request', 'internal') };
}

/** The plugin's error handler (set inside the plugin: the host app's own handler stays in charge of its routes). */
export function svcErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = errorReply(error, request);
  if (status === 401) reply.header('www-authenticate', 'Bearer');
  void reply.code(status).type('application/json; charset=utf-8').send(body);
}
