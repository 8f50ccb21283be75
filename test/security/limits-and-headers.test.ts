// Text length limits and the headers every response carries, against the stand-alone server (startServer) on a
// temporary data directory, with plain fetch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { type RunningServer, startServer } from '../../src/server/app.js';
import { kMaxTextLength } from '../../src/contract/train-request.js';

let dir: string;
let server: RunningServer;
let key: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-limits-'));
  server = await startServer({ dataDir: dir, port: 0, proxy: false });
  await server.service.createOrganization('acme');
  key = (await server.service.createApiKey('acme')).key;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: unknown) {
  const response = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error: { message: string } } };
}

it('answers 400 naming the limit to a predict text over 100,000 characters', async () => {
  expect(kMaxTextLength).toBe(100_000);
  const long = 'a'.repeat(kMaxTextLength + 1);
  expect(await post('/v2/predict', { model: 'svc-small-000000000000', inputs: ['fine', long] })).toEqual({
    status: 400,
    body: {
      error: {
        message: `inputs[1] must be at most 100000 characters (got 100001)`,
        type: 'invalid_request_error',
        param: 'inputs[1]',
        code: 'invalid_request',
      },
    },
  });
});

it('answers 400 naming the limit to a training example over 100,000 characters', async () => {
  const examples = Array.from({ length: 20 }, (_, i) => ({ text: `example ${i}`, label: i % 2 === 0, label_text: 'even' }));
  examples[7].text = 'b'.repeat(kMaxTextLength + 5);
  const answer = await post('/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples });
  expect(answer.status).toBe(400);
  expect(answer.body.error.message).toBe('examples[7].text must be at most 100000 characters (got 100005)');
});

it('sends nosniff and a locked-down policy on every response, whatever answers it', async () => {
  const responses = await Promise.all(
    ['/health', '/v2/models', '/v2/openapi.json', '/nowhere', '/hub/acme/x/resolve/main/config.json', '/hub/api/models/acme/x'].map(
      (path) => fetch(server.url + path),
    ),
  );
  expect(responses.map((r) => r.status)).toEqual([200, 401, 200, 404, 401, 401]);
  for (const response of responses) {
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    );
  }
});
