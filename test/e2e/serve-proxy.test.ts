// `svc serve` with the provider proxy mounted in its /v2 routes: operator commands set up the
// organization, key, project and grant; the official openai client talks to the service, which
// forwards to a fake provider named by SVC_PROVIDER_A_URL / SVC_PROVIDER_A_KEY.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { exited, serve, svc } from '../_support/cli.js';
import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-serve-proxy-'));
let fake: FakeProvider;
let server: Awaited<ReturnType<typeof serve>>;
let key: string;
let projectId: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  await svc(['orgs', 'create', 'acme', '--data', dir]);
  key = (await svc(['keys', 'create', '--org', 'acme', '--data', dir])).stdout.trim();
  projectId = (await svc(['projects', 'create', '--org', 'acme', '--name', 'chat', '--data', dir])).stdout.trim();
  server = await serve(['--data', dir, '--proxy-models', 'provider-a:gpt-test', '--failed-auth-limit', '2'], {
    SVC_PROVIDER_A_URL: fake.urls.a,
    SVC_PROVIDER_A_KEY: kFakeKeys.a,
  });
});

afterAll(async () => {
  server?.child.kill('SIGTERM');
  if (server) await exited(server.child);
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('svc serve with the proxy', () => {
  it('forwards for an organization once the operator grants access, and lists the proxy models', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: key, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({ model: 'provider-a:gpt-test', messages: [{ role: 'user', content: 'hello there' }] });
    const denied = await ask().then(
      () => null,
      (error: unknown) => error,
    );
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((denied as InstanceType<typeof OpenAI.PermissionDeniedError>).status).toBe(403);

    expect((await svc(['proxy', 'grant', '--org', 'acme', '--data', dir])).code).toBe(0);
    const reply = await ask();
    expect(reply.choices[0].message.content).toBe('Echo: hello there');
    expect(fake.requests.at(-1)?.body.model).toBe('gpt-test');

    const listed = await fetch(`${server.url}/v2/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(await listed.json()).toEqual({
      object: 'list',
      data: [{ id: 'provider-a:gpt-test', object: 'model', created_at: 0, owned_by: 'provider-a' }],
    });

    let log: { data: { model: string; status: number }[] } = { data: [] };
    for (let i = 0; i < 50 && log.data.length === 0; i += 1) {
      await new Promise((r) => setTimeout(r, 50));
      const response = await fetch(`${server.url}/v2/${projectId}/requests`, { headers: { authorization: `Bearer ${key}` } });
      log = (await response.json()) as typeof log;
    }
    expect(log.data.map((row) => [row.model, row.status])).toEqual([['provider-a:gpt-test', 200]]);
  });

  it("applies the operator's rpm and budget to the running server at the next request", async () => {
    const ask = () =>
      new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: key, maxRetries: 0 }).chat.completions
        .create({ model: 'provider-a:gpt-test', messages: [{ role: 'user', content: 'hello there' }] })
        .withResponse();
    expect((await svc(['orgs', 'limits', 'acme', '--rpm', '1000', '--data', dir])).code).toBe(0);
    const { response } = await ask();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('1000');

    // The calls so far used 2 + 3 tokens each (the fake's usage for 'hello there'): a budget of 1 is spent.
    expect((await svc(['projects', 'budget', projectId, '--tokens', '1', '--data', dir])).code).toBe(0);
    const spent = await ask().then(
      () => null,
      (error: unknown) => error,
    );
    expect(spent).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((spent as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('budget_exceeded');

    expect((await svc(['orgs', 'limits', 'acme', '--rpm', '1', '--data', dir])).code).toBe(0);
    const limited = await fetch(`${server.url}/v2/models`, { headers: { authorization: `Bearer ${key}` } });
    expect([
      limited.status,
      limited.headers.get('x-ratelimit-limit-requests'),
      limited.headers.get('x-ratelimit-remaining-requests'),
    ]).toEqual([429, '1', '0']);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  });

  it('turns an address away with 429 after --failed-auth-limit bad keys, a good key included', async () => {
    const status = async (bearer: string) =>
      (await fetch(`${server.url}/v2/models`, { headers: { authorization: `Bearer ${bearer}` } })).status;
    expect([await status('svc_wrong1'), await status('svc_wrong2'), await status(key)]).toEqual([401, 401, 429]);
  });
});
