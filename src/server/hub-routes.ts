import type { FastifyPluginAsync } from 'fastify';

import { SvcError } from '../errors.js';
import type { SvcService } from '../service/service.js';
import { errorBody, svcErrorHandler } from './errors.js';
import type { SvcMetrics } from './metrics.js';
import { observeRequests } from './observe.js';
import type { RateLimitOptions } from '../contract/rate-limit.js';
import { parseVersionNumber } from '../contract/versions.js';
import { requestLimiter } from './rate-limit.js';

export interface HubRoutesOptions {
  service: SvcService;
  /** Request limits, when this is the service's first plugin registered; else the service's limits apply. */
  rateLimit?: RateLimitOptions;
  /** Counts this plugin's requests in these metrics (see `svcRoutes`); off when absent. */
  metrics?: SvcMetrics;
}

const kContentTypes: Readonly<Record<string, string>> = Object.freeze({
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
});

/**
 * Model files over HTTP in the Hugging Face "resolve" layout, so that
 * transformers.js loads a trained model straight from the service:
 * `GET <prefix>/<org>/<model_id>/resolve/main/<file>`, with the API key as a
 * bearer token. An organization's models are visible to its own keys only.
 * Register it with `prefix: '/hub'` and point transformers.js at
 * `env.remoteHost = 'http://host:port/hub/'`.
 *
 * @example
 * ```ts
 * await app.register(hubRoutes, { prefix: '/hub', service });
 * // curl -H "Authorization: Bearer $SVC_KEY" http://127.0.0.1:8080/hub/acme/svc-small-1a2b3c4d5e6f/resolve/main/config.json
 * ```
 */
export const hubRoutes: FastifyPluginAsync<HubRoutesOptions> = async (app, { service, rateLimit, metrics }) => {
  observeRequests(app, metrics);
  if (!app.hasRequestDecorator('svcPrincipal')) app.decorateRequest('svcPrincipal', null);
  app.setErrorHandler(svcErrorHandler);
  // Downloads count against the key like any /v2 request, and a wrong key against the client's address.
  const limiter = await requestLimiter(app, service, rateLimit);
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorBody(404, `No route ${request.method} ${request.url.split('?')[0]}`, 'not_found'));
  });

  app.get<{ Params: { org: string; model_id: string; revision: string; '*': string } }>(
    '/:org/:model_id/resolve/:revision/*',
    async (request, reply) => {
      const principal = (request.svcPrincipal = await limiter.admit(request, reply, () =>
        service.authenticate(request.headers.authorization),
      ));
      const { org, model_id: modelId, revision } = request.params;
      const file = request.params['*'];
      // 'main' is the live version, 'v<n>' version n (transformers.js: `{ revision: 'v2' }`).
      const version = revision.startsWith('v') ? parseVersionNumber(revision.slice(1)) : null;
      if (revision !== 'main' && version === null) {
        throw new SvcError(
          'not_found',
          `Revision '${revision}' does not exist; a model has 'main' (its live version) and 'v<n>' (version n)`,
          {
            param: 'revision',
          },
        );
      }
      const name = version === null ? modelId : `${modelId}@${version}`;
      const { size, stream } = await service.hubFile(principal, org, name, file);
      const extension = file.slice(file.lastIndexOf('.') + 1);
      return reply
        .header('content-type', kContentTypes[extension] ?? 'application/octet-stream')
        .header('content-length', size)
        .header('cache-control', 'private, no-cache')
        .send(stream);
    },
  );

  // The Hugging Face model-info call, so that clients can list a model's files (`svc pull` uses it).
  app.get<{ Params: { org: string; model_id: string } }>('/api/models/:org/:model_id', async (request, reply) => {
    const principal = (request.svcPrincipal = await limiter.admit(request, reply, () =>
      service.authenticate(request.headers.authorization),
    ));
    const { org, model_id: modelId } = request.params;
    const files = await service.hubFiles(principal, org, modelId);
    return { id: `${org}/${modelId}`, modelId: `${org}/${modelId}`, siblings: files.map((rfilename) => ({ rfilename })) };
  });
};
