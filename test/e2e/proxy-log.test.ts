// The request log through the HTTP surface: listing with pagination, redaction, truncation, and a failing store.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kDatabaseFile } from '../../src/store/sqlite.js';
import { officialClients, type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';

let h: ProxyHarness;
let openai: OpenAI;

beforeAll(async () => {
  h = await startProxyHarness();
  ({ openai } = officialClients(h));
});
afterAll(async () => {
  await h.close();
});

const ask = (model: string, content: string, extra: Record<string, unknown> = {}) =>
  openai.chat.completions.create({ model, messages: [{ role: 'user', content }], ...extra } as never) as Promise<OpenAI.ChatCompletion>;

async function list(query: string, key = h.acmeKey, project = h.projectId) {
  const response = await fetch(`${h.base}/v2/${project}/requests${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: (await response.json()) as any };
}

describe('GET /v2/{project_id}/requests', () => {
  it('lists the calls newest first, page by page', async () => {
    for (const model of ['provider-a:m1', 'provider-a:m2', 'provider-a:m3']) await ask(model, 'hi');
    await h.logRows(3);
    const first = await list('?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((r: any) => r.model)).toEqual(['provider-a:m3', 'provider-a:m2']);
    expect(first.body.has_more).toBe(true);
    expect(first.body.next_before).toBe(first.body.data[1].id);
    const second = await list(`?limit=2&before=${first.body.next_before}`);
    expect(second.body.data.map((r: any) => r.model)).toEqual(['provider-a:m1']);
    expect(second.body).toMatchObject({ object: 'list', has_more: false, next_before: null });
    const row = second.body.data[0];
    expect(Object.keys(row)).toEqual([
      'id',
      'object',
      'created_at',
      'created_at_ms',
      'project_id',
      'key_id',
      'provider',
      'model',
      'stream',
      'status',
      'ttfb_ms',
      'total_ms',
      'tokens_in',
      'tokens_out',
      'error',
      'request_body',
      'response_body',
      'request_body_truncated',
      'response_body_truncated',
      'request_body_bytes',
      'response_body_bytes',
    ]);
    expect(row).toMatchObject({
      object: 'proxy.request',
      project_id: h.projectId,
      key_id: h.acmeKeyId,
      provider: 'provider-a',
      stream: false,
      status: 200,
      tokens_in: 1,
      tokens_out: 2,
      error: null,
      request_body: '{"model":"provider-a:m1","messages":[{"role":"user","content":"hi"}]}',
    });
    expect(row.created_at).toBe(Math.floor(row.created_at_ms / 1000));
  });

  it("answers 401, 404 (another organization's project) and 400 in the service error shape", async () => {
    expect(await list('', 'svc_nope')).toEqual({
      status: 401,
      body: { error: { message: 'Invalid API key', type: 'authentication_error', param: null, code: 'authentication' } },
    });
    expect(await list('', h.globexKey)).toEqual({
      status: 404,
      body: {
        error: { message: `The project '${h.projectId}' does not exist`, type: 'not_found_error', param: 'project_id', code: 'not_found' },
      },
    });
    expect(await list('?limit=0')).toEqual({
      status: 400,
      body: {
        error: {
          message: 'limit must be an integer from 1 to 500',
          type: 'invalid_request_error',
          param: 'limit',
          code: 'invalid_request',
        },
      },
    });
  });
});

describe('what the log keeps', () => {
  it('redacts credentials in bodies', async () => {
    await ask('provider-a:secrets', 'my key is svc_0123456789abcdef0123', { user: 'u1', metadata: { api_key: 'plain-secret' } });
    const row = await h.rowFor('provider-a:secrets');
    expect(JSON.parse(row.requestBody)).toEqual({
      model: 'provider-a:secrets',
      messages: [{ role: 'user', content: 'my key is [redacted]' }],
      user: 'u1',
      metadata: { api_key: '[redacted]' },
    });
    expect(JSON.parse(row.responseBody).choices[0].message.content).toBe('Echo: my key is [redacted]');
  });

  it('keeps 32 KiB of bodies per call by default, half each when both are long', async () => {
    const long = 'word '.repeat(30_000).trim();
    const completion = await ask('provider-a:long', long);
    expect(completion.choices[0].message.content).toBe(`Echo: ${long}`);
    const row = await h.rowFor('provider-a:long');
    expect(Buffer.byteLength(row.requestBody)).toBe(16_384);
    expect(Buffer.byteLength(row.responseBody)).toBe(16_384);
    expect(row).toMatchObject({ status: 200, tokensIn: 30_000, tokensOut: 30_001 });
  });

  it('a failing log write never fails the request', async () => {
    const db = new Database(join(h.dataDir, kDatabaseFile));
    db.exec("CREATE TRIGGER refuse_log BEFORE INSERT ON request_log BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    try {
      const completion = await ask('provider-a:unlogged', 'still answered');
      expect(completion.choices[0].message.content).toBe('Echo: still answered');
      // Let the queue try (and fail) before the trigger goes.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      db.exec('DROP TRIGGER refuse_log');
      db.close();
    }
    await ask('provider-a:logged-again', 'hi');
    await h.rowFor('provider-a:logged-again');
    const rows = await h.store.listRequestLog(h.projectId, { limit: 100 });
    expect(rows.some((r) => r.model === 'provider-a:unlogged')).toBe(false);
  });
});
