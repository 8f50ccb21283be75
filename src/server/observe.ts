import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { kUnmatchedRoute, type SvcMetrics } from './metrics.js';

/**
 * One log line per request, and its count and latency when `metrics` is given, for every route of the plugin
 * `app` is. The line goes through `request.log`: the host app's logger (pino), or nothing when it has none.
 * It names the caller by organization and key id, never by the key itself, and the route by its pattern.
 */
export function observeRequests(app: FastifyInstance, metrics: SvcMetrics | undefined): void {
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    // A hijacked (proxied) reply sets its status on the raw response.
    const status = reply.raw.statusCode;
    const route = request.routeOptions.url ?? kUnmatchedRoute;
    const ms = Math.round(reply.elapsedTime * 1000) / 1000;
    const principal = request.svcPrincipal ?? request.svcProxyIdentity ?? null;
    request.log.info(
      { org: principal?.orgId ?? null, keyId: principal?.keyId ?? null, method: request.method, route, status, ms },
      'request',
    );
    metrics?.observeRequest(request.method, route, status, ms / 1000);
  });
}
