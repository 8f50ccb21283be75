import type { RouteOptions } from 'fastify';
import { z } from 'zod';

import { errorSchema } from '../contract/schemas.js';

type ZodSchema = z.ZodType;
const isZod = (value: unknown): value is ZodSchema => value instanceof z.ZodType;

type Json = Record<string, unknown>;

/**
 * A zod schema as OpenAPI 3.0 JSON Schema. Schemas named with `.meta({ id })` come out of zod as
 * `definitions` inside each converted schema; they are moved to the document's
 * `components.schemas` (the only place a 3.0 `$ref` can point to) and the refs rewritten.
 */
function toJson(schema: ZodSchema, io: 'input' | 'output', components: Record<string, Json>): Json {
  const { definitions, ...json } = z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' }) as Json & {
    definitions?: Record<string, Json>;
  };
  for (const [id, definition] of Object.entries(definitions ?? {})) components[id] = rewriteRefs(definition) as Json;
  return rewriteRefs(json) as Json;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' ? inner.replace(/^#\/definitions\//, '#/components/schemas/') : rewriteRefs(inner),
    ]),
  );
}

/** Collects the routes of a plugin as they are added, and writes them as one OpenAPI 3.0 document. */
export class OpenApiCollector {
  readonly #routes: RouteOptions[] = [];

  add(route: RouteOptions): void {
    if (route.method === 'HEAD' || (Array.isArray(route.method) && route.method.includes('HEAD'))) return;
    this.#routes.push(route);
  }

  document(info: { title: string; version: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    const schemas: Record<string, Json> = {};
    for (const route of this.#routes) {
      const schema = (route.schema ?? {}) as Record<string, unknown>;
      const url = route.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{file}');
      const operation: Record<string, unknown> = {};
      if (typeof schema.summary === 'string') operation.summary = schema.summary;
      const params = schema.params;
      const parameters: Json[] = [];
      if (isZod(params)) {
        const json = toJson(params, 'input', schemas) as { properties?: Record<string, unknown> };
        for (const [name, s] of Object.entries(json.properties ?? {})) parameters.push({ name, in: 'path', required: true, schema: s });
      }
      // Routes without a params schema (the proxy's) still declare each `{name}` of their path.
      for (const [, name] of url.matchAll(/\{([A-Za-z_]+)\}/g)) {
        if (!parameters.some((p) => p.name === name)) parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
      }
      if (parameters.length > 0) operation.parameters = parameters;
      if (isZod(schema.body)) {
        operation.requestBody = { required: true, content: { 'application/json': { schema: toJson(schema.body, 'input', schemas) } } };
      }
      const responses: Record<string, unknown> = {};
      for (const [status, response] of Object.entries((schema.response ?? {}) as Record<string, unknown>)) {
        if (isZod(response)) {
          responses[status] = { description: status, content: { 'application/json': { schema: toJson(response, 'output', schemas) } } };
        }
      }
      responses.default = { description: 'Error', content: { 'application/json': { schema: toJson(errorSchema, 'output', schemas) } } };
      operation.responses = responses;
      operation.security = route.config && (route.config as { public?: boolean }).public ? [] : [{ bearer: [] }];
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      paths[url] ??= {};
      for (const method of methods) paths[url][method.toLowerCase()] = operation;
    }
    return {
      openapi: '3.0.3',
      info,
      components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, svc_…' } } },
      paths,
    };
  }
}
