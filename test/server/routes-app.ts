// The /v2 and /hub routes as the routes-*.test.ts files call them: mounted in a host Fastify app that keeps a
// validated route and an error handler of its own, on a real SQLite store and the word-count runtime, with a stand-in
// for the provider proxy's plugin, and keys of two organizations plus a revoked one. Each test file opens its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify, { type FastifyInstance } from 'fastify';

import { uciSentences } from '../../fixtures/corpora.js';
import { hubRoutes } from '../../src/server/hub-routes.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';

const imdb = uciSentences('imdb');
/** Twenty labelled IMDb sentences, ten of each label: the smallest training set the service takes. */
export const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive',
}));

/** The error body the plugin sends. */
export const err = (type: string, message: string, param: string | null, code: string) => ({ error: { message, type, param, code } });

export interface RoutesApp {
  app: FastifyInstance;
  service: SvcService;
  runtime: WordCountRuntime;
  /** Keys of 'acme', of 'globex', and a revoked one of 'acme'. */
  key: string;
  otherKey: string;
  revokedKey: string;
  /** One injected request with `bearer` (default: acme's key; null: no Authorization header), and its JSON answer. */
  call(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, bearer?: string | null): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

export async function openRoutesApp(): Promise<RoutesApp> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-routes-'));
  const runtime = new WordCountRuntime(join(dir, 'hub'));
  const service = new SvcService({ store: SqliteStore.open(dir), runtime, proxyModels: ['provider-a:gpt-4o-mini', 'provider-c:claude-x'] });
  await service.start();
  await service.createOrganization('acme');
  await service.createOrganization('globex');
  const key = (await service.createApiKey('acme')).key;
  const otherKey = (await service.createApiKey('globex')).key;
  const revoked = await service.createApiKey('acme');
  await service.revokeApiKey(revoked.id);
  const revokedKey = revoked.key;

  const app = Fastify();
  // The host's own route, validated by Fastify's default (ajv) compiler, with its own error handler.
  app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
    void reply.code(error.statusCode ?? 500).send({ host: true, message: error.message });
  });
  app.post('/host', { schema: { body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } } } }, async (request) => ({
    got: request.body,
  }));
  await app.register(svcRoutes, {
    prefix: '/v2',
    service,
    bodyLimit: 64 * 1024,
    proxyOptions: { upstreamTimeoutMs: 1_000 },
    // Stands in for the provider proxy's plugin: mounted inside, with the service and its own options.
    proxy: async (scope, opts) => {
      scope.get('/:project_id/whoami', async (request) => {
        const principal = await opts.service.authenticate(request.headers['x-api-key'] as string | undefined);
        const { project_id: projectId } = request.params as { project_id: string };
        return { principal, project: await opts.service.authorizeProxy(principal, projectId), options: Object.keys(opts) };
      });
    },
  });
  await app.register(hubRoutes, { prefix: '/hub', service });
  await app.ready();

  async function call(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, bearer: string | null = key) {
    const response = await app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body as object }),
      headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
    });
    return { status: response.statusCode, body: response.json() as unknown };
  }

  async function close() {
    await app.close();
    await service.close();
    rmSync(dir, { recursive: true, force: true });
  }

  return { app, service, runtime, key, otherKey, revokedKey, call, close };
}
