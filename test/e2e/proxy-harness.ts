// A listening Fastify app with the proxy routes under /v2, on a real SQLite store in a temporary directory,
// pointed at the fake provider. Two organizations: `acme` (proxy access, owns a project) and `globex` (none).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Mistral } from '@mistralai/mistralai';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import type { ProxyRoutesOptions } from '../../src/proxy/types.js';
import { SvcService } from '../../src/service/service.js';
import { WordCountRuntime } from '../_support/word-count-runtime.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { RequestLogRow } from '../../src/store/types.js';
import { type FakeProvider, kFakeKeys, startFakeProvider } from './fake-provider.js';

export interface ProxyHarness {
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  base: string;
  store: SqliteStore;
  dataDir: string;
  fake: FakeProvider;
  acmeKey: string;
  acmeKeyId: string;
  globexKey: string;
  /** Owned by acme. */
  projectId: string;
  /** Owned by globex, which has no proxy access. */
  globexProjectId: string;
  /** `<base>/v2/<projectId>/` as the SDKs take it. */
  sdkBase: string;
  /** Waits until the log holds `count` rows for the project; returns them newest first. */
  logRows(count: number, projectId?: string): Promise<RequestLogRow[]>;
  /** Waits for the newest log row of a model (as the client sent it), written after `afterId`. */
  rowFor(model: string, afterId?: number): Promise<RequestLogRow>;
  close(): Promise<void>;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function createKey(store: SqliteStore, orgId: string): Promise<{ key: string; keyId: string }> {
  const key = `svc_${randomBytes(18).toString('hex')}`;
  const keyId = `key_${randomBytes(6).toString('hex')}`;
  await store.insertApiKey({ id: keyId, orgId, hash: sha256(key), prefix: key.slice(0, 8), createdAt: Date.now(), revokedAt: null });
  return { key, keyId };
}

/** `fake`: an already running fake provider (e.g. in another thread) to use instead of starting one. */
export async function startProxyHarness(
  overrides: Partial<ProxyRoutesOptions> = {},
  given?: FakeProvider,
): Promise<ProxyHarness> {
  const fake = given ?? (await startFakeProvider());
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-proxy-'));
  const store = SqliteStore.open(dataDir);
  await store.createOrganization('acme');
  await store.setProxyAccess('acme', true);
  await store.createOrganization('globex');
  const acme = await createKey(store, 'acme');
  const globex = await createKey(store, 'globex');
  const projectId = 'proj_acme0000001';
  const globexProjectId = 'proj_globex00001';
  await store.createProject({ id: projectId, orgId: 'acme', name: 'chat', createdAt: Date.now() });
  await store.createProject({ id: globexProjectId, orgId: 'globex', name: 'chat', createdAt: Date.now() });

  // An aborted fetch can leave undici's spare connection open; do not wait out the keep-alive timeout on close.
  const app = Fastify({ forceCloseConnections: true });
  // The proxy checks callers through the service; the runtime is never asked to train or predict here.
  const service = new SvcService({ store, runtime: new WordCountRuntime(dataDir) });
  await app.register(proxyRoutes, {
    prefix: '/v2',
    service,
    providers: {
      'provider-a': { url: fake.urls.a, key: kFakeKeys.a },
      'provider-b': { url: fake.urls.b, key: kFakeKeys.b },
      'provider-c': { url: fake.urls.c, key: kFakeKeys.c },
    },
    upstreamTimeoutMs: 1_000,
    pingIntervalMs: 100,
    env: {},
    ...overrides,
  });
  const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');

  return {
    app,
    base,
    store,
    dataDir,
    fake,
    acmeKey: acme.key,
    acmeKeyId: acme.keyId,
    globexKey: globex.key,
    projectId,
    globexProjectId,
    sdkBase: `${base}/v2/${projectId}/`,
    async logRows(count, project = projectId) {
      for (let i = 0; i < 200; i++) {
        const rows = await store.listRequestLog(project, { limit: Math.max(1000, count) });
        if (rows.length >= count) return rows;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`expected ${count} log rows`);
    },
    async rowFor(model, afterId = 0) {
      for (let i = 0; i < 200; i++) {
        const rows = await store.listRequestLog(projectId, { limit: 1000 });
        const row = rows.find((r) => r.model === model && r.id > afterId);
        if (row) return row;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`expected a log row for ${model}`);
    },
    async close() {
      await app.close();
      if (!given) await fake.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface OfficialClients {
  openai: OpenAI;
  mistral: Mistral;
  anthropic: Anthropic;
}

/** The three official SDKs pointed at the harness's project, as a user would set them up; retries off so errors surface at once. */
export function officialClients(h: ProxyHarness): OfficialClients {
  return {
    openai: new OpenAI({ baseURL: h.sdkBase, apiKey: h.acmeKey, maxRetries: 0 }),
    mistral: new Mistral({ serverURL: h.sdkBase, apiKey: h.acmeKey, retryConfig: { strategy: 'none' } }),
    anthropic: new Anthropic({ baseURL: h.sdkBase, apiKey: h.acmeKey, maxRetries: 0 }),
  };
}
