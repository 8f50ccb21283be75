import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';

import type { Principal, SvcService } from '../service/service.js';
import { errorBody, svcErrorHandler } from './errors.js';
import { OpenApiCollector } from './openapi.js';
import {
  deletedSchema,
  modelListSchema,
  modelParamsSchema,
  modelSchema,
  predictBodySchema,
  predictResponseSchema,
  progressSchema,
  trainBodySchema,
} from './schemas.js';

/** Request bodies above this many bytes get 413 (10,000 examples of a few hundred characters fit easily). */
export const kDefaultBodyLimit = 16 * 1024 * 1024;

/** Options of `svcRoutes`. */
export interface SvcRoutesOptions {
  service: SvcService;
  /** Bytes; default 16 MiB. */
  bodyLimit?: number;
  /**
   * The provider proxy's routes, registered inside this plugin (same prefix)
   * with `{ service }` as options. They authenticate with `service.authenticate`.
   */
  proxy?: FastifyPluginAsync<{ service: SvcService }>;
  /** More options for the proxy plugin (provider URLs and keys), passed next to `service`. */
  proxyOptions?: Record<string, unknown>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the /v2 routes' auth hook: the calling organization and key. */
    svcPrincipal: Principal | null;
  }
}

/** The principal of an authenticated /v2 request. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.svcPrincipal === null) throw new Error('route registered outside the authenticated scope');
  return request.svcPrincipal;
}

/**
 * The /v2 routes as a Fastify plugin. It is deliberately not wrapped in
 * `fastify-plugin`: its zod validator, serializer, error and not-found
 * handlers stay inside it, and `prefix` applies.
 *
 * @example
 * ```ts
 * const app = Fastify();
 * app.get('/health', async () => ({ ok: true }));          // the host's routes stay as they are
 * await app.register(svcRoutes, { prefix: '/v2', service }); // POST /v2/train, GET /v2/models, ...
 * await app.register(hubRoutes, { prefix: '/hub', service }); // GET /hub/<org>/<model_id>/resolve/main/<file>
 * ```
 */
export const svcRoutes: FastifyPluginAsync<SvcRoutesOptions> = async (fastify, options) => {
  const { service } = options;
  const bodyLimit = options.bodyLimit ?? kDefaultBodyLimit;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(svcErrorHandler);
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorBody(404, `No route ${request.method} ${request.url.split('?')[0]}`, 'not_found'));
  });
  if (!app.hasRequestDecorator('svcPrincipal')) app.decorateRequest('svcPrincipal', null);

  const openapi = new OpenApiCollector();
  app.addHook('onRoute', (route) => openapi.add(route));

  app.get('/openapi.json', { config: { public: true }, schema: { summary: 'This API as an OpenAPI 3.0 document' } }, async () =>
    openapi.document({ title: 'svc-classify', version: '2' }),
  );

  await app.register(async (scope: FastifyInstance) => {
    const routes = scope.withTypeProvider<ZodTypeProvider>();
    // Authenticate before the body is read: an unknown caller cannot make us parse megabytes.
    routes.addHook('onRequest', async (request) => {
      request.svcPrincipal = await service.authenticate(request.headers.authorization);
    });

    routes.post(
      '/train',
      { bodyLimit, schema: { summary: 'Start training a classifier', body: trainBodySchema, response: { 200: modelSchema } } },
      async (request) => service.train(principalOf(request), request.body),
    );

    routes.get(
      '/models',
      { schema: { summary: 'Models that accept requests', response: { 200: modelListSchema } } },
      async (request) => service.listModels(principalOf(request)),
    );

    routes.get(
      '/models/:model_id',
      { schema: { summary: 'One model', params: modelParamsSchema, response: { 200: modelSchema } } },
      async (request) => service.getModel(principalOf(request), request.params.model_id),
    );

    routes.get(
      '/models/:model_id/progress',
      { schema: { summary: 'Training progress of a model', params: modelParamsSchema, response: { 200: progressSchema } } },
      async (request) => {
        const principal = principalOf(request);
        const id = request.params.model_id;
        const progress = await service.getProgress(principal, id);
        const model = await service.getModel(principal, id);
        return {
          object: 'training.progress' as const,
          model: id,
          status: model.status,
          stage: progress?.stage ?? null,
          done: progress?.done ?? 0,
          total: progress?.total ?? 0,
          loss: progress?.loss ?? null,
        };
      },
    );

    routes.delete(
      '/models/:model_id',
      { schema: { summary: 'Delete a model and its hub copy', params: modelParamsSchema, response: { 200: deletedSchema } } },
      async (request) => service.deleteModel(principalOf(request), request.params.model_id),
    );

    routes.post(
      '/predict',
      { bodyLimit, schema: { summary: 'Classify texts', body: predictBodySchema, response: { 200: predictResponseSchema } } },
      async (request) => service.predict(principalOf(request), request.body),
    );
  });

  if (options.proxy !== undefined) await app.register(options.proxy, { ...options.proxyOptions, service });
};
