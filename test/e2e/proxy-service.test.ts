// The proxy mounted the way `svc serve` mounts it: inside the service's /v2 plugin, on the service's own store and
// key check, next to the service's routes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';
import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';

let dir: string;
let fake: FakeProvider;
let server: RunningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-proxy-service-'));
  fake = await startFakeProvider();
  server = await startServer({
    dataDir: dir,
    port: 0,
    proxy: proxyRoutes,
    proxyOptions: { providers: { 'provider-a': { url: fake.urls.a, key: kFakeKeys.a } }, env: {} },
  });
});
afterAll(async () => {
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('serves proxied calls with the service keys, projects and grants, and logs them in the service store', async () => {
  const { service } = server;
  await service.createOrganization('acme');
  const { key } = await service.createApiKey('acme');
  const project = await service.createProject('acme', 'support-bot');
  const client = new OpenAI({ baseURL: `${server.url}/v2/${project.id}/`, apiKey: key, maxRetries: 0 });

  const denied = await client.chat.completions
    .create({ model: 'provider-a:gpt-fake', messages: [{ role: 'user', content: 'hi' }] })
    .catch((e) => e);
  expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
  expect(denied.message).toBe("403 The organization 'acme' has no proxy access; request access from the operator");

  await service.setProxyAccess('acme', true);
  const completion = await client.chat.completions.create({
    model: 'provider-a:gpt-fake',
    messages: [{ role: 'user', content: 'hi there' }],
  });
  expect(completion.choices[0].message.content).toBe('Echo: hi there');

  // The service's own routes answer beside the proxy's.
  const models = await fetch(`${server.url}/v2/models`, { headers: { authorization: `Bearer ${key}` } });
  expect(models.status).toBe(200);
  // The log row is written just after the response: poll for it.
  let listed: { data: Array<{ model: string; status: number; tokens_in: number }> } = { data: [] };
  for (let i = 0; i < 100 && listed.data.length === 0; i++) {
    const requests = await fetch(`${server.url}/v2/${project.id}/requests`, { headers: { authorization: `Bearer ${key}` } });
    listed = (await requests.json()) as typeof listed;
  }
  expect(listed.data.map((r) => [r.model, r.status, r.tokens_in])).toEqual([['provider-a:gpt-fake', 200, 2]]);
});
