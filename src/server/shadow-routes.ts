import type { FastifyInstance } from 'fastify';

import { deletedShadowSchema, shadowListSchema, shadowSchema, shadowSettingsRequestSchema, shadowStatsSchema } from '../contract/shadow.js';
import { SvcError } from '../errors.js';
import type { ShadowSettings } from '../proxy/shadow-settings.js';
import type { ProjectCaller } from './request-log-routes.js';

interface ProjectParams {
  project_id: string;
}

/**
 * The shadow classifier's routes, inside the proxy plugin (whose JSON parser keeps bodies as bytes):
 * `PUT /v2/{project_id}/shadow` sets one for a proxied model, `GET` lists them, `DELETE ...?model=` removes one, and
 * `GET /v2/{project_id}/shadow/stats?window=7d` says how often it agreed with the chat model, how fast it was and
 * what it would have saved. The zod schemas document the routes (OpenAPI); `settings` parses with them.
 *
 * @example
 * ```ts
 * // PUT /v2/proj_0123456789ab/shadow {"model":"provider-a:gpt-4o-mini","classifier":"svc-small-5b8257b3efa7","label":{"words":{"true":["yes"],"false":["no"]}}}
 * // GET /v2/proj_0123456789ab/shadow/stats?window=24h -> { object: 'shadow_stats', calls: 40, compared: 38, agreed: 36, agreement: 0.947, ... }
 * ```
 */
export async function shadowRoutes(app: FastifyInstance, settings: ShadowSettings, caller: ProjectCaller): Promise<void> {
  await app.register(async (scope) => {
    // The settings parse bodies and queries themselves (as the service does on /v2); the schemas are for OpenAPI.
    scope.setValidatorCompiler(() => (data: unknown) => ({ value: data }));
    scope.setSerializerCompiler(() => (data: unknown) => JSON.stringify(data));

    scope.put<{ Params: ProjectParams; Body: Buffer | undefined }>(
      '/:project_id/shadow',
      {
        schema: {
          summary: "Set a project's shadow classifier for a proxied model",
          body: shadowSettingsRequestSchema,
          response: { 200: shadowSchema },
        },
      },
      async (request, reply) => {
        const principal = await caller(request, reply, 'read-log');
        return settings.put(principal, request.params.project_id, jsonBody(request.body));
      },
    );
    scope.get<{ Params: ProjectParams }>(
      '/:project_id/shadow',
      { schema: { summary: "A project's shadow classifiers", response: { 200: shadowListSchema } } },
      async (request, reply) => settings.list(await caller(request, reply, 'read-log'), request.params.project_id),
    );
    scope.delete<{ Params: ProjectParams; Querystring: Record<string, unknown> }>(
      '/:project_id/shadow',
      { schema: { summary: "Remove a project's shadow classifier (?model=...)", response: { 200: deletedShadowSchema } } },
      async (request, reply) => settings.remove(await caller(request, reply, 'read-log'), request.params.project_id, request.query),
    );
    scope.get<{ Params: ProjectParams; Querystring: Record<string, unknown> }>(
      '/:project_id/shadow/stats',
      {
        schema: {
          summary:
            'Agreement of the shadow classifier with the chat model over time, its latency, and what it would save (?window=1h|24h|7d|30d)',
          response: { 200: shadowStatsSchema },
        },
      },
      async (request, reply) => settings.stats(await caller(request, reply, 'read-log'), request.params.project_id, request.query),
    );
  });
}

function jsonBody(body: Buffer | undefined): unknown {
  if (body === undefined || body.length === 0) throw new SvcError('invalid_request', 'request body must be a JSON object');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new SvcError('invalid_request', 'request body must be valid JSON');
  }
}
