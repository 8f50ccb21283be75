import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../errors.js';
import { authenticateCaller, authorizeProject, type ProjectUse } from '../proxy/access.js';
import { resolveProxyOptions } from '../proxy/config.js';
import { type DialectName, kDialects } from '../proxy/dialects.js';
import { BudgetHold, outputAllowance } from '../proxy/budget.js';
import { createUpstreamAgents, forwardCall, type ForwardSettings, type UpstreamTarget, upstreamTarget } from '../proxy/forward.js';
import { kMaxJsonDepth, nestsDeeperThan } from '../proxy/json-depth.js';
import { Meter } from '../proxy/metering.js';
import { providerRateLimitHeaders } from '../proxy/rate-limit-headers.js';
import { RequestLogQueue } from '../proxy/request-log.js';
import { ShadowRunner } from '../proxy/shadow.js';
import { ShadowSettings } from '../proxy/shadow-settings.js';
import { askForStreamUsage } from '../proxy/stream-usage.js';
import { proxyTeacherTransport } from '../proxy/teacher-transport.js';
import type { ProviderName, ProxyRoutesOptions } from '../proxy/types.js';
import type { Principal } from '../service/service.js';
import type { Project } from '../store/types.js';
import { dashboardPage, isProjectIdShape } from './dashboard-page.js';
import { svcErrorHandler } from './errors.js';
import { requestLimiter } from './rate-limit.js';
import { newNonce, pagePolicy } from './security-headers.js';
import { requestLogRoutes } from './request-log-routes.js';
import { shadowRoutes } from './shadow-routes.js';

interface ProjectParams {
  project_id: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which provider API a proxy route speaks; errors on it take that API's shape. */
    svcDialect?: DialectName;
  }
  interface FastifyRequest {
    /** The caller of a proxy route, known before its body is read. */
    svcProxyIdentity: Principal | null;
    /** The project a proxy route's caller may use, with its budget. */
    svcProxyProject: Project | null;
  }
}

/**
 * The provider proxy and its request log, as a Fastify route plugin. Register it inside the `/v2` prefix (it is not
 * wrapped in `fastify-plugin`, so the prefix applies):
 * `POST /v2/{project_id}/chat/completions` (OpenAI-compatible), `/v1/chat/completions` (Mistral), `/v1/messages`
 * (Anthropic), `GET /v2/{project_id}/requests` (and `/requests/{request_id}`, see `request-log-routes.ts`) and
 * `GET /v2/{project_id}/dashboard`.
 *
 * @example
 * ```ts
 * app.register(proxyRoutes, { prefix: '/v2', service, providers: { 'provider-a': { key: 'sk-...' } } });
 * // new OpenAI({ baseURL: 'http://127.0.0.1:8080/v2/proj_0123456789ab/', apiKey: 'svc_...' })
 * //   .chat.completions.create({ model: 'provider-a:gpt-4o-mini', messages }) -> the provider's answer, logged
 * ```
 */
export async function proxyRoutes(app: FastifyInstance, options: ProxyRoutesOptions): Promise<void> {
  const resolved = resolveProxyOptions(options);
  // A written row goes on to the project's shadow classifier, if it named one for the call's model (shadow.ts).
  const shadows = new ShadowRunner(resolved.service);
  const log = new RequestLogQueue(resolved.service.store, resolved.requestLog, (row) => shadows.offer(row));
  const agents = createUpstreamAgents();
  const settings: ForwardSettings = {
    agents,
    log,
    upstreamTimeoutMs: resolved.upstreamTimeoutMs,
    pingIntervalMs: resolved.pingIntervalMs,
    operatorWarning: (message) => app.log.warn(message),
  };
  app.addHook('onClose', async () => {
    await log.drain();
    await shadows.drain();
    agents.http.destroy();
    agents.https.destroy();
  });

  if (!app.hasRequestDecorator('svcProxyIdentity')) app.decorateRequest('svcProxyIdentity', null);
  if (!app.hasRequestDecorator('svcProxyProject')) app.decorateRequest('svcProxyProject', null);

  // The service's limiter: inside the /v2 plugin, the one it made, so that a key has one count across both.
  const limiter = await requestLimiter(app, resolved.service, options.rateLimit);
  /** The caller, under the request limits, allowed to use the project as asked. */
  const caller = async (request: FastifyRequest<{ Params: ProjectParams }>, reply: FastifyReply, use: ProjectUse): Promise<Principal> => {
    let principal: Principal;
    try {
      principal = await limiter.admit(request, reply, () => authenticateCaller(resolved.service, credential(request)));
    } finally {
      // The limit headers in the names the route's SDK reads, on answers and on 429s alike.
      const dialect = request.routeOptions.config.svcDialect;
      if (dialect !== undefined) providerRateLimitHeaders(reply.raw, dialect);
    }
    request.svcProxyProject = await authorizeProject(resolved.service, principal, request.params.project_id, use);
    return principal;
  };

  // Keep the body as bytes: the log stores what the client sent, and only `model` is rewritten.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  // The /v2 error handler; on these routes it answers in the route's provider dialect.
  app.setErrorHandler(svcErrorHandler);

  // Every (route, provider) pair's upstream address, parsed once.
  const targets = {} as Record<DialectName, Partial<Record<ProviderName, UpstreamTarget>>>;
  for (const name of Object.keys(kDialects) as DialectName[]) {
    targets[name] = {};
    for (const [provider, path] of Object.entries(kDialects[name].upstreamPaths) as [ProviderName, string][]) {
      targets[name][provider] = upstreamTarget(resolved.providers[provider].url + path);
    }
  }

  // Jobs trained with a teacher send its calls through this same forwarding code, logs and budgets.
  const teacherDeps = { service: resolved.service, settings, providers: resolved.providers, targets };
  resolved.service.useTeacherTransport((caller) => proxyTeacherTransport(teacherDeps, caller));

  for (const name of Object.keys(kDialects) as DialectName[]) {
    const dialect = kDialects[name];
    app.post<{ Params: ProjectParams; Body: Buffer }>(
      `/:project_id${dialect.route}`,
      {
        bodyLimit: resolved.bodyLimit,
        config: { svcDialect: name },
        // Check the caller before the body is read: a stranger cannot make us parse megabytes.
        onRequest: async (request, reply) => {
          request.svcProxyIdentity = await caller(request, reply, 'proxy');
        },
      },
      async (request, reply) => {
        const identity = request.svcProxyIdentity!;
        const clientBody = request.body.toString('utf8');
        const parsed = parseBody(request.body, clientBody);
        const clientModel = parsed.model;
        const { provider, upstreamModel } = routeModel(clientModel, dialect.upstreamPaths);
        parsed.model = upstreamModel;
        const hideUsageChunk = askForStreamUsage(parsed, provider);
        const body = Buffer.from(JSON.stringify(parsed));
        // The budget hold comes before the upstream call: concurrent calls each hold their share, so none spends
        // tokens another was counting on (403 budget_exceeded when nothing is left).
        const meter = new Meter(request.body.length);
        const budget = await BudgetHold.take(
          resolved.service.store.proxyLedger,
          request.svcProxyProject!,
          meter.inputEstimate + outputAllowance(parsed),
          resolved.upstreamTimeoutMs,
        );
        reply.hijack();
        forwardCall(
          {
            dialect,
            provider,
            upstream: targets[name][provider]!,
            providerKey: resolved.providers[provider].key,
            body,
            clientBody,
            stream: parsed.stream === true,
            hideUsageChunk,
            model: clientModel as string,
            projectId: request.params.project_id,
            keyId: identity.keyId,
            meter,
            budget,
          },
          request.raw,
          reply.raw,
          settings,
        );
      },
    );
  }

  requestLogRoutes(app, resolved.service.store, caller);
  await shadowRoutes(app, new ShadowSettings(resolved.service, (projectId) => shadows.forget(projectId)), caller);

  app.get<{ Params: ProjectParams }>('/:project_id/dashboard', async (request, reply) => {
    const projectId = request.params.project_id;
    if (!isProjectIdShape(projectId)) throw new SvcError('not_found', 'No such project dashboard', { param: 'project_id' });
    const nonce = newNonce();
    // Everything the page needs is inline and carries the nonce; it talks only to this service.
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
    return reply.header('content-security-policy', pagePolicy(nonce)).send(dashboardPage(projectId, nonce));
  });
}

/** The caller's key from `Authorization: Bearer ...` or, as the Anthropic SDK may send it, `x-api-key`. */
function credential(request: FastifyRequest): string | null {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string' && authorization.trim() !== '') return authorization;
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  return null;
}

function parseBody(bytes: Buffer, text: string): Record<string, unknown> & { model?: unknown; stream?: unknown } {
  // Checked before parsing: the body is written again (model rewritten), and writing a very deep value overflows the stack.
  if (nestsDeeperThan(bytes, kMaxJsonDepth)) {
    throw new SvcError('invalid_request', `request body must not nest objects and arrays more than ${kMaxJsonDepth} deep`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SvcError('invalid_request', 'request body must be valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new SvcError('invalid_request', 'request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** Picks the provider from the model's prefix (`provider-a:gpt-4o` -> provider-a, `gpt-4o`). */
function routeModel(
  model: unknown,
  upstreamPaths: Partial<Record<ProviderName, string>>,
): { provider: ProviderName; upstreamModel: string } {
  const known = Object.keys(upstreamPaths) as ProviderName[];
  const knownList = known.map((name) => `${name}:`).join(', ');
  if (typeof model !== 'string') {
    throw new SvcError('invalid_request', `model must be a string starting with one of: ${knownList}`, {
      param: 'model',
    });
  }
  const colon = model.indexOf(':');
  const prefix = colon > 0 ? model.slice(0, colon) : '';
  const upstreamModel = model.slice(colon + 1);
  const elsewhere = (Object.keys(kDialects) as DialectName[]).find(
    (name) => upstreamPaths !== kDialects[name].upstreamPaths && prefix in kDialects[name].upstreamPaths,
  );
  if (elsewhere !== undefined && upstreamModel !== '') {
    throw new SvcError(
      'invalid_request',
      `${prefix} models are served on /v2/{project_id}${kDialects[elsewhere].route}, not on this route; this route takes ${knownList}`,
      { param: 'model' },
    );
  }
  if (!known.includes(prefix as ProviderName) || upstreamModel === '') {
    throw new SvcError('invalid_request', `model '${model}' has no known provider prefix; known prefixes: ${knownList}`, {
      param: 'model',
    });
  }
  return { provider: prefix as ProviderName, upstreamModel };
}
