// Limits across replicas: two servers started as `svc serve --database` starts them, on one real PostgreSQL
// database, share a key's request count, an address's failed authentications and a project's token budget, with no
// store given: the database's shared counts are the default there. A database that cannot count answers 503.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../../fixtures/fake-provider.js';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server/app.js';
import { usageMonth } from '../../src/store/types.js';
import { usePostgres } from '../_support/postgres.js';
import { expectAddressLockedOut, expectCountsUnavailable, expectFourthRejected, models } from '../_support/replica-limits.js';

const pgServer = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-replica-limits-'));
const kFailedAuthLimit = 2;
let fake: FakeProvider;
let database: string;
let one: RunningServer;
let two: RunningServer;

function start(name: string, db: string): Promise<RunningServer> {
  const options: ServerOptions = {
    database: db,
    dataDir: join(dir, name),
    artifactsDir: join(dir, 'models'),
    port: 0,
    logLevel: 'silent',
    rateLimit: { failedAuthPerWindow: kFailedAuthLimit },
    providers: {
      'provider-a': { url: fake.urls.a, key: kFakeKeys.a },
      'provider-b': { url: fake.urls.b, key: kFakeKeys.b },
      'provider-c': { url: fake.urls.c, key: kFakeKeys.c },
    },
  };
  return startServer(options);
}

beforeAll(async () => {
  fake = await startFakeProvider();
  database = await pgServer.cluster.createDatabase();
  [one, two] = [await start('one', database), await start('two', database)];
});

afterAll(async () => {
  await one?.close();
  await two?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An organization with proxy access, a key and a project, made through replica one. */
async function tenant(org: string): Promise<{ key: string; projectId: string }> {
  await one.service.createOrganization(org);
  await one.service.setProxyAccess(org, true);
  return { key: (await one.service.createApiKey(org)).key, projectId: (await one.service.createProject(org, 'chat')).id };
}

const messages = [{ role: 'user' as const, content: 'count my tokens' }];
// The fake provider's usage for these messages: 3 words in, 'Echo:' and 3 words out.
const kCallTokens = 3 + 4;

describe('two replicas on one database', () => {
  it("share a key's count: with 3 requests a minute, the 4th is 429 wherever it lands, with OpenAI's headers", async () => {
    const { key } = await tenant('rpm');
    await two.service.setOrgLimits('rpm', { requestsPerMinute: 3 });
    await expectFourthRejected(one, two, key, 'rpm');
    // Replica one sees the same spent count.
    expect((await models(one, key)).status).toBe(429);
  });

  it("share a project's token budget: spent through one replica, the other stops the next call before the provider", async () => {
    const { key, projectId } = await tenant('budget');
    await two.service.setProjectBudget(projectId, kCallTokens);
    const client = (server: RunningServer) => new OpenAI({ baseURL: `${server.url}/v2/${projectId}/`, apiKey: key, maxRetries: 0 });
    const completion = await client(one).chat.completions.create({ model: 'provider-a:gpt-fake', messages });
    expect(completion.usage?.total_tokens).toBe(kCallTokens);
    const month = usageMonth(Date.now());
    // The call's log row (and its usage) is written after the answer.
    for (let i = 0; i < 100 && (await two.service.store.getProjectUsage(projectId, month)) < kCallTokens; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await two.service.store.getProjectUsage(projectId, month)).toBe(kCallTokens);
    const upstreamCalls = fake.requests.length;
    const error = await client(two)
      .chat.completions.create({ model: 'provider-a:gpt-fake', messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as { error: unknown }).error).toEqual({
      message: `The project '${projectId}' has used ${kCallTokens} of its ${kCallTokens} proxy tokens for ${month} (UTC); the budget starts again next month, or the operator can raise it`,
      type: 'permission_error',
      param: null,
      code: 'budget_exceeded',
    });
    expect(fake.requests.length).toBe(upstreamCalls);
  });

  // Last in the file: it refuses 127.0.0.1's bad keys at both replicas for the rest of the window.
  it("share an address's failed authentications: bad keys at one replica refuse the address's bad keys at the other", async () => {
    const { key } = await tenant('locked');
    expect((await models(two, key)).status).toBe(200);
    await expectAddressLockedOut(one, two, key, kFailedAuthLimit);
  });
});

describe('a database that cannot count', () => {
  it('answers 503 overloaded with retry-after, neither a 500 nor an unlimited request', async () => {
    const db = await pgServer.cluster.createDatabase();
    const alone = await start('alone', db);
    try {
      await alone.service.createOrganization('acme');
      await alone.service.setProxyAccess('acme', true);
      const { key } = await alone.service.createApiKey('acme');
      const project = await alone.service.createProject('acme', 'chat');
      expect((await models(alone, key)).status).toBe(200);
      // A real failure of the counting statement: its table is gone, the rest of the database answers.
      const client = new pg.Client({ connectionString: db });
      await client.connect();
      await client.query('DROP TABLE request_counts');
      await client.end();
      await expectCountsUnavailable(await models(alone, key), 'the database');
      // The proxy answers the same in its provider's shape, and the call never reaches the provider.
      const upstreamCalls = fake.requests.length;
      const openai = new OpenAI({ baseURL: `${alone.url}/v2/${project.id}/`, apiKey: key, maxRetries: 0 });
      const error = await openai.chat.completions.create({ model: 'provider-a:gpt-fake', messages }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect((error as { status: number; error: unknown }).status).toBe(503);
      expect((error as { error: unknown }).error).toEqual({
        message: 'The request limits could not be checked: the database did not answer; retry shortly',
        type: 'overloaded_error',
        param: null,
        code: 'overloaded',
      });
      expect(fake.requests.length).toBe(upstreamCalls);
    } finally {
      await alone.close();
    }
  });
});
