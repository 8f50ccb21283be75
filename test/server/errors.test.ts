// What a failure looks like from both sides: the client gets a short message (echoed ids and paths cut, nothing of
// our internals), the server's log gets the whole error with its causes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { fromNativeError } from '../../src/errors.js';
import { clientMessage, kMaxEchoedChars, kMaxMessageChars } from '../../src/server/errors.js';
import { hubRoutes } from '../../src/server/hub-routes.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { imdbExamples } from '../_support/examples.js';

/** A runtime whose encoder fails the way a native failure does: an SvcError wrapping the C++ message. */
class FailingRuntime extends WordCountRuntime {
  override async predict(): Promise<never> {
    throw fromNativeError(new Error('encoder.cc:212 packed batch of 0 rows at /opt/svc/native/core'));
  }
}

let dir: string;
let app: FastifyInstance;
let service: SvcService;
let key: string;
let modelId: string;
const logLines: string[] = [];
const logged = () => logLines.map((line) => JSON.parse(line) as Record<string, unknown> & { err?: { message: string; stack: string } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-errors-'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime: new FailingRuntime(join(dir, 'hub')), retention: false });
  await service.start();
  await service.createOrganization('acme');
  key = (await service.createApiKey('acme')).key;
  modelId = (
    await service.train(await service.authenticate(`Bearer ${key}`), {
      model: 'svc-small',
      task_type: 'binary-classification',
      examples: imdbExamples(0, 10),
    })
  ).id;
  await service.idle();
  app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } } });
  await app.register(svcRoutes, { prefix: '/v2', service });
  await app.register(hubRoutes, { prefix: '/hub', service });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

const headers = () => ({ authorization: `Bearer ${key}` });

describe('404 messages', () => {
  it('cut an id of 100 kB sent in a body to a short bound', async () => {
    const long = `svc-small-${'a'.repeat(100_000)}`;
    const response = await app.inject({ method: 'POST', url: '/v2/predict', headers: headers(), payload: { model: long, inputs: ['x'] } });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: {
        message: `The model ${`'${long}'`.slice(0, kMaxEchoedChars)}… does not exist or is not visible to this API key`,
        type: 'not_found_error',
        param: 'model',
        code: 'not_found',
      },
    });
  });

  it('cut a long path in the route and hub-file answers', async () => {
    const path = 'p'.repeat(12_000);
    const route = await app.inject({ method: 'GET', url: `/v2/${path}`, headers: headers() });
    expect(route.statusCode).toBe(404);
    expect(route.json().error.message).toBe(`No route GET ${`/v2/${path}`.slice(0, kMaxEchoedChars)}…`);
    const file = await app.inject({ method: 'GET', url: `/hub/acme/${modelId}/resolve/main/${path}`, headers: headers() });
    expect(file.statusCode).toBe(404);
    expect(file.body.length).toBeLessThan(400);
    expect(file.body).not.toContain('p'.repeat(kMaxEchoedChars + 1));
  });

  it('keep a message of many short words to its bound, and short ones as they are', () => {
    expect(clientMessage('no such model svc-small-0123456789ab')).toBe('no such model svc-small-0123456789ab');
    expect(clientMessage('ab '.repeat(1000))).toBe(`${'ab '.repeat(1000).slice(0, kMaxMessageChars)}…`);
  });
});

describe('500 answers', () => {
  it('log the failure with its cause and send the client nothing of it', async () => {
    logLines.length = 0;
    const response = await app.inject({
      method: 'POST',
      url: '/v2/predict',
      headers: headers(),
      payload: { model: modelId, inputs: ['x'] },
    });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({
      error: { message: 'The service failed to handle the request', type: 'api_error', param: null, code: 'native_error' },
    });
    expect(response.body).not.toContain('encoder.cc');
    const line = logged().find((entry) => entry.level === 50);
    expect(line?.msg).toBe('internal error');
    // The wrapped native error and the original, with both stacks ("caused by").
    expect(line?.err?.message).toContain('encoder.cc:212 packed batch of 0 rows');
    expect(line?.err?.stack).toMatch(/SvcError: encoder\.cc:212[\s\S]*caused by: Error: encoder\.cc:212/);
    expect(line?.err?.stack).toContain('errors.test.ts');
  });

  it('log an unexpected error from the store with its stack', async () => {
    logLines.length = 0;
    const broken = new SvcService({
      store: SqliteStore.open(join(dir, 'closed')),
      runtime: new WordCountRuntime(join(dir, 'hub2')),
      retention: false,
    });
    await broken.createOrganization('acme');
    const brokenKey = (await broken.createApiKey('acme')).key;
    const other = Fastify({ logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } } });
    await other.register(svcRoutes, { prefix: '/v2', service: broken });
    await other.ready();
    await broken.store.close(); // every query now throws better-sqlite3's TypeError
    try {
      const response = await other.inject({ method: 'GET', url: '/v2/models', headers: { authorization: `Bearer ${brokenKey}` } });
      expect(response.statusCode).toBe(500);
      expect(response.json().error.message).toBe('The service failed to handle the request');
      const line = logged().find((entry) => entry.level === 50);
      expect(line?.err?.message).toBe('The database connection is not open');
      expect(line?.err?.stack).toContain('sqlite.ts');
    } finally {
      await other.close();
      await broken.close().catch(() => {});
    }
  });
});
