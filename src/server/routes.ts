import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';

import type { Principal, SvcService } from '../service/service.js';
import { SvcError } from '../errors.js';
import { errorBody, svcErrorHandler } from './errors.js';
import type { SvcMetrics } from './metrics.js';
import { observeRequests } from './observe.js';
import { OpenApiCollector } from './openapi.js';
import { teacherTrainRequestSchema } from '../contract/teacher-request.js';
import { logTrainRequestSchema } from '../contract/log-source.js';
import {
  classifyRequestSchema,
  classifyResponseSchema,
  deletedSchema,
  modelListSchema,
  modelParamsSchema,
  modelSchema,
  predictRequestSchema,
  predictResponseSchema,
  progressSchema,
  trainRequestSchema,
} from '../contract/schemas.js';
import { evaluationQuerySchema, evaluationSchema } from '../contract/evaluation.js';
import { deletedVersionSchema, promoteRequestSchema, versionListSchema, versionParamsSchema, versionSchema } from '../contract/versions.js';
import { parseRequest } from '../parse.js';
import type { ProxyRoutesOptions } from '../proxy/types.js';
import type { RateLimitOptions } from '../contract/rate-limit.js';
import { requestLimiter } from './rate-limit.js';
import { modelsPage } from './models-page.js';
import { newNonce, pagePolicy } from './security-headers.js';

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
  proxy?: FastifyPluginAsync<ProxyRoutesOptions>;
  /** More options for the proxy plugin (provider URLs and keys), passed next to `service`. */
  proxyOptions?: Omit<ProxyRoutesOptions, 'service'>;
  /** Request limits (the counting store, the window, failed authentications per address), shared by the service's proxy and hub routes. */
  rateLimit?: RateLimitOptions;
  /**
   * Counts this plugin's requests (by route pattern and status) and their latency in these metrics; serve
   * them with `metricsRoutes`. Off when absent. Each request is logged through `request.log` either way.
   */
  metrics?: SvcMetrics;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the /v2 routes' auth hook: the calling organization and key. */
    svcPrincipal: Principal | null;
  }
}

/** The principal of an authenticated /v2 request. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.svcPrincipal === null) throw new SvcError('internal', 'route registered outside the authenticated scope');
  return request.svcPrincipal;
}

/**
 * Aborts when the client closes the connection before its answer was sent: work done for nobody is
 * dropped (the predict texts not in a batch yet). The response's `close` comes both ways; only an
 * unfinished response means the client left.
 */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
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
  observeRequests(app, options.metrics);
  // Bodies are parsed once, by the service, with the same schemas the routes document (a library
  // caller of SvcService gets the same checks and messages); params are parsed here.
  app.setValidatorCompiler(({ schema, httpPart }) => (data: unknown) => {
    if (httpPart === 'body') return { value: data };
    try {
      return { value: parseRequest(schema as z.ZodType, data) };
    } catch (error) {
      return { error: error as Error };
    }
  });
  // JSON only: without its text/plain parser Fastify answers 415 for a body sent as text/plain,
  // as for a form, instead of handing the route a string.
  app.removeContentTypeParser('text/plain');
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(svcErrorHandler);
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorBody(404, `No route ${request.method} ${request.url.split('?')[0]}`, 'not_found'));
  });
  if (!app.hasRequestDecorator('svcPrincipal')) app.decorateRequest('svcPrincipal', null);

  const limiter = await requestLimiter(app, service, options.rateLimit);

  // The models page asks for the key itself and is not part of the JSON API (registered before the OpenAPI collector).
  app.get('/dashboard/models', { config: { public: true } }, async (_request, reply) => {
    const nonce = newNonce();
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
    return reply.header('content-security-policy', pagePolicy(nonce)).send(modelsPage(nonce));
  });

  const openapi = new OpenApiCollector();
  app.addHook('onRoute', (route) => openapi.add(route));

  app.get('/openapi.json', { config: { public: true }, schema: { summary: 'This API as an OpenAPI 3.0 document' } }, async () =>
    openapi.document({ title: 'svc-classify', version: '2' }),
  );

  await app.register(async (scope: FastifyInstance) => {
    const routes = scope.withTypeProvider<ZodTypeProvider>();
    // Authenticate before the body is read: an unknown caller cannot make us parse megabytes.
    routes.addHook('onRequest', async (request, reply) => {
      request.svcPrincipal = await limiter.admit(request, reply, () => service.authenticate(request.headers.authorization));
    });

    routes.post(
      '/train',
      {
        bodyLimit,
        schema: {
          summary: 'Start training a classifier: from labelled examples, from texts a teacher labels, or from logged calls',
          body: z.union([trainRequestSchema, teacherTrainRequestSchema, logTrainRequestSchema]),
          response: { 200: modelSchema },
        },
      },
      async (request) => service.train(principalOf(request), request.body),
    );

    // One declaration per route, alike by design: each names its schemas (validation and OpenAPI)
    // and the one service call that answers it.
    routes.get('/models', { schema: { summary: 'Every model, with its status', response: { 200: modelListSchema } } }, async (request) =>
      service.listModels(principalOf(request)),
    );

    routes.get(
      '/models/:model_id',
      { schema: { summary: 'One model', params: modelParamsSchema, response: { 200: modelSchema } } },
      async (request) => service.getModel(principalOf(request), request.params.model_id),
    );

    routes.get(
      '/models/:model_id/progress',
      { schema: { summary: 'Training progress of a model', params: modelParamsSchema, response: { 200: progressSchema } } },
      async (request) => service.getProgress(principalOf(request), request.params.model_id),
    );

    routes.delete(
      '/models/:model_id',
      { schema: { summary: 'Delete a model and its hub copy', params: modelParamsSchema, response: { 200: deletedSchema } } },
      async (request) => service.deleteModel(principalOf(request), request.params.model_id),
    );

    routes.get(
      '/models/:model_id/versions',
      {
        schema: { summary: 'The versions of a classifier, oldest first', params: modelParamsSchema, response: { 200: versionListSchema } },
      },
      async (request) => service.versions.list(principalOf(request), request.params.model_id),
    );

    routes.post(
      '/models/:model_id/versions',
      {
        bodyLimit,
        schema: {
          summary: 'Train the next version of a classifier (same task type and labels); it is not live until promoted',
          params: modelParamsSchema,
          body: trainRequestSchema,
          response: { 200: versionSchema },
        },
      },
      async (request) => service.versions.add(principalOf(request), request.params.model_id, request.body),
    );

    routes.get(
      '/models/:model_id/evaluation',
      {
        schema: {
          summary: "A version's evaluation report on its validation set, and beside the live version on the live one's",
          params: modelParamsSchema,
          querystring: evaluationQuerySchema,
          response: { 200: evaluationSchema },
        },
      },
      async (request) => service.evaluations.report(principalOf(request), request.params.model_id, request.query.version),
    );

    routes.post(
      '/models/:model_id/promote',
      {
        schema: {
          summary: 'Make a trained version the one predict uses (an older one rolls back)',
          params: modelParamsSchema,
          body: promoteRequestSchema,
          response: { 200: versionSchema },
        },
      },
      async (request) => service.versions.promote(principalOf(request), request.params.model_id, request.body),
    );

    routes.delete(
      '/models/:model_id/versions/:version',
      {
        schema: {
          summary: 'Delete a version and its hub copy (not the live one, not version 1)',
          params: versionParamsSchema,
          response: { 200: deletedVersionSchema },
        },
      },
      async (request) => service.versions.remove(principalOf(request), request.params.model_id, request.params.version),
    );

    routes.post(
      '/predict',
      { bodyLimit, schema: { summary: 'Classify texts', body: predictRequestSchema, response: { 200: predictResponseSchema } } },
      async (request, reply) => service.predict(principalOf(request), request.body, { signal: clientGone(reply) }),
    );

    routes.post(
      '/classify',
      {
        bodyLimit,
        schema: {
          summary: 'Classify texts by examples sent with them (or label names), with no stored model',
          body: classifyRequestSchema,
          response: { 200: classifyResponseSchema },
        },
      },
      async (request, reply) => service.classify(principalOf(request), request.body, { signal: clientGone(reply) }),
    );
  });

  if (options.proxy !== undefined) await app.register(options.proxy, { ...options.proxyOptions, service });
};
