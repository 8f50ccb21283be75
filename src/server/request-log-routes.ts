import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { SvcError } from '../errors.js';
import type { ProjectUse } from '../proxy/access.js';
import type { Principal } from '../service/service.js';
import type { RequestLogRow, Store } from '../store/types.js';

/** Rows a page of `GET /requests` holds at most (`limit`), and when `limit` is not given. */
export const kMaxListLimit = 500;
const kDefaultListLimit = 50;
/**
 * Characters of each body a list shows. A logged body is up to 64 KiB: 500 of them made a 33 MB answer that held
 * the event loop for most of a second; the whole body is one `GET /requests/{request_id}` away.
 */
export const kListBodyPreviewChars = 2048;
/**
 * Bytes of JSON a page's rows take at most: the page ends before the row that would pass it (a page holds at least
 * one row), with `has_more` and `next_before` as when it ends at `limit`.
 */
export const kMaxListPageBytes = 1024 * 1024;
/**
 * Bytes of stored bodies a page reads at most (at least one row's): the database reads a body to cut its start, and
 * on SQLite it does so on the event loop. 8 MiB is a few milliseconds; a page of 500 rows of 64 KiB bodies was 65 MB.
 */
export const kMaxListBodyBytesRead = 8 * 1024 * 1024;

interface LogParams {
  project_id: string;
  request_id?: string;
}

/** The proxy plugin's check of a caller: authenticated, under the request limits, allowed to use the project so. */
export type ProjectCaller = (
  request: FastifyRequest<{ Params: { project_id: string } }>,
  reply: FastifyReply,
  use: ProjectUse,
) => Promise<Principal>;

/**
 * The request log's routes, inside the proxy plugin: `GET /v2/{project_id}/requests`, newest first, page by page
 * (`limit` rows, at most {@link kMaxListPageBytes} of JSON and {@link kMaxListBodyBytesRead} of stored bodies read,
 * each body cut to {@link kListBodyPreviewChars} characters with `*_truncated` saying so), and
 * `GET /v2/{project_id}/requests/{request_id}`, one call with its whole bodies. The database cuts the bodies and
 * measures them from the rows' headers, and a page is serialized row by row once.
 *
 * @example
 * ```ts
 * // GET /v2/proj_0123456789ab/requests?limit=500
 * // -> { object: 'list', data: [{ id: 812, ..., request_body: '{"model":...', request_body_truncated: true,
 * //      request_body_bytes: 65536, ... }, ...], has_more: true, next_before: 749 }
 * // GET /v2/proj_0123456789ab/requests/812 -> { id: 812, ..., request_body: <all 65,536 characters>, request_body_truncated: false, ... }
 * ```
 */
export function requestLogRoutes(app: FastifyInstance, store: Store, caller: ProjectCaller): void {
  app.get<{ Params: LogParams; Querystring: { limit?: string; before?: string } }>('/:project_id/requests', async (request, reply) => {
    request.svcProxyIdentity = await caller(request, reply, 'read-log');
    const limit = integerParam(request.query.limit, 'limit', kDefaultListLimit, kMaxListLimit);
    const before = integerParam(request.query.before, 'before', undefined, Number.MAX_SAFE_INTEGER);
    const { rows, more } = await store.listRequestLogPreviews(request.params.project_id, {
      limit,
      before,
      previewChars: kListBodyPreviewChars,
      maxBodyBytes: kMaxListBodyBytesRead,
    });
    const parts: string[] = [];
    let bytes = 0;
    let lastId = 0;
    for (const row of rows) {
      const json = JSON.stringify(requestLogJson(row, row.requestBodyBytes, row.responseBodyBytes));
      const size = Buffer.byteLength(json) + 1;
      if (parts.length > 0 && bytes + size > kMaxListPageBytes) break;
      parts.push(json);
      bytes += size;
      lastId = row.id;
    }
    const hasMore = more || parts.length < rows.length;
    // Each row is serialized once, here, to count its bytes: the page is sent as that text.
    const page = `{"object":"list","data":[${parts.join(',')}],"has_more":${hasMore},"next_before":${hasMore ? lastId : null}}`;
    return reply.type('application/json; charset=utf-8').send(page);
  });

  app.get<{ Params: LogParams }>('/:project_id/requests/:request_id', async (request, reply) => {
    request.svcProxyIdentity = await caller(request, reply, 'read-log');
    const id = integerParam(request.params.request_id, 'request_id', undefined, Number.MAX_SAFE_INTEGER);
    const row = id === undefined ? null : await store.getRequestLog(request.params.project_id, id);
    if (row === null) {
      throw new SvcError('not_found', `The request '${request.params.request_id}' is not in this project's log`, { param: 'request_id' });
    }
    return requestLogJson(row, Buffer.byteLength(row.requestBody), Buffer.byteLength(row.responseBody));
  });
}

function integerParam(value: string | undefined, name: string, fallback: number, max: number): number;
function integerParam(value: string | undefined, name: string, fallback: undefined, max: number): number | undefined;
function integerParam(value: string | undefined, name: string, fallback: number | undefined, max: number) {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1 || parsed > max) {
    throw new SvcError('invalid_request', `${name} must be an integer from 1 to ${max}`, { param: name });
  }
  return parsed;
}

/**
 * A log row as the routes show it. `*_bytes` are the whole bodies' sizes in UTF-8; `*_truncated` says the body shown is
 * only their start (in a list; never in `GET /requests/{request_id}`).
 */
export function requestLogJson(row: RequestLogRow, requestBodyBytes: number, responseBodyBytes: number) {
  return {
    id: row.id,
    object: 'proxy.request',
    created_at: Math.floor(row.createdAt / 1000),
    created_at_ms: row.createdAt,
    project_id: row.projectId,
    key_id: row.keyId,
    provider: row.provider,
    model: row.model,
    stream: row.stream,
    status: row.status,
    ttfb_ms: row.ttfbMs,
    total_ms: row.totalMs,
    tokens_in: row.tokensIn,
    tokens_out: row.tokensOut,
    error: row.error,
    request_body: row.requestBody,
    response_body: row.responseBody,
    request_body_truncated: requestBodyBytes > Buffer.byteLength(row.requestBody),
    response_body_truncated: responseBodyBytes > Buffer.byteLength(row.responseBody),
    request_body_bytes: requestBodyBytes,
    response_body_bytes: responseBodyBytes,
  };
}
