import type { RouteOptions } from 'fastify';
import { z } from 'zod';

import { errorSchema } from './schemas.js';

type ZodSchema = z.ZodType;
const isZod = (value: unknown): value is ZodSchema => value instanceof z.ZodType;

const toJson = (schema: ZodSchema, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' }) as Record<string, unknown>;

/** Collects the routes of a plugin as they are added, and writes them as one OpenAPI 3.0 document. */
export class OpenApiCollector {
  readonly #routes: RouteOptions[] = [];

  add(route: RouteOptions): void {
    if (route.method === 'HEAD' || (Array.isArray(route.method) && route.method.includes('HEAD'))) return;
    this.#routes.push(route);
  }

  document(info: { title: string; version: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of this.#routes) {
      const schema = (route.schema ?? {}) as Record<string, unknown>;
      const url = route.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{file}');
      const operation: Record<string, unknown> = {};
      if (typeof schema.summary === 'string') operation.summary = schema.summary;
      const params = schema.params;
      if (isZod(params)) {
        const json = toJson(params, 'input') as { properties?: Record<string, unknown> };
        operation.parameters = Object.entries(json.properties ?? {}).map(([name, s]) => ({
          name,
          in: 'path',
          required: true,
          schema: s,
        }));
      }
      if (isZod(schema.body)) {
        operation.requestBody = { required: true, content: { 'application/json': { schema: toJson(schema.body, 'input') } } };
      }
      const responses: Record<string, unknown> = {};
      for (const [status, response] of Object.entries((schema.response ?? {}) as Record<string, unknown>)) {
        if (isZod(response)) {
          responses[status] = { description: status, content: { 'application/json': { schema: toJson(response, 'output') } } };
        }
      }
      responses.default = { description: 'Error', content: { 'application/json': { schema: toJson(errorSchema, 'output') } } };
      operation.responses = responses;
      operation.security = route.config && (route.config as { public?: boolean }).public ? [] : [{ bearer: [] }];
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      paths[url] ??= {};
      for (const method of methods) paths[url][method.toLowerCase()] = operation;
    }
    return {
      openapi: '3.0.3',
      info,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, svc_…' } } },
      paths,
    };
  }
}
