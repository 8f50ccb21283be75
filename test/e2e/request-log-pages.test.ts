// A project whose log holds many large bodies, read over HTTP: every page of `GET /requests?limit=500` stays under
// its byte bound with each body cut and flagged, the pages together hold every call once, and
// `GET /requests/{request_id}` gives one call's bodies whole.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type ProxyHarness, startProxyHarness } from '../../fixtures/proxy-harness.js';
import { kListBodyPreviewChars, kMaxListPageBytes } from '../../src/server/request-log-routes.js';

let h: ProxyHarness;
const kRows = 300;
// Near the most a log row keeps: 300 of them are 36 MB of bodies.
const kBodyChars = 60_000;
const ids: number[] = [];
function bodyOf(n: number, side: string): string {
  const head = `{"call":${n},"${side}":"`;
  return `${head}${String(n % 10).repeat(kBodyChars - head.length - 2)}"}`;
}

beforeAll(async () => {
  h = await startProxyHarness();
  for (let n = 0; n < kRows; n += 1) {
    ids.push(
      await h.store.insertRequestLog({
        projectId: h.projectId,
        keyId: h.acmeKeyId,
        provider: 'provider-a',
        model: 'provider-a:big',
        stream: false,
        status: 200,
        ttfbMs: 5,
        totalMs: 9,
        tokensIn: 1,
        tokensOut: 1,
        error: null,
        requestBody: bodyOf(n, 'request'),
        responseBody: bodyOf(n, 'response'),
        createdAt: Date.now(),
      }),
    );
  }
}, 120_000);
afterAll(async () => {
  await h.close();
});

async function get(path: string, key = h.acmeKey) {
  const response = await fetch(`${h.base}/v2/${h.projectId}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as any };
}

describe('the request log of large bodies', () => {
  it('answers every page of 500 under the byte bound, each body cut and flagged, every call once', async () => {
    const seen: number[] = [];
    let before: number | null = null;
    let pages = 0;
    do {
      const page = await get(`/requests?limit=500${before === null ? '' : `&before=${before}`}`);
      pages += 1;
      expect(page.status).toBe(200);
      // The rows' bound plus the list's own few bytes.
      expect(page.bytes).toBeLessThanOrEqual(kMaxListPageBytes + 100);
      for (const row of page.body.data) {
        const n = ids.indexOf(row.id);
        expect(row).toMatchObject({
          request_body: bodyOf(n, 'request').slice(0, kListBodyPreviewChars),
          response_body: bodyOf(n, 'response').slice(0, kListBodyPreviewChars),
          request_body_truncated: true,
          response_body_truncated: true,
          request_body_bytes: kBodyChars,
          response_body_bytes: kBodyChars,
        });
        seen.push(row.id);
      }
      expect(page.body.has_more).toBe(seen.length < kRows);
      before = page.body.next_before;
      if (before !== null) expect(before).toBe(seen.at(-1));
    } while (before !== null);
    expect(seen).toEqual([...ids].reverse());
    // 36 MB of bodies, yet a page of 500 held a bounded share of them: more than one page was needed.
    expect(pages).toBeGreaterThan(1);
  });

  it('gives one call whole, with nothing cut', async () => {
    const n = 123;
    const one = await get(`/requests/${ids[n]}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: ids[n],
      object: 'proxy.request',
      project_id: h.projectId,
      model: 'provider-a:big',
      request_body_truncated: false,
      response_body_truncated: false,
      request_body_bytes: kBodyChars,
      response_body_bytes: kBodyChars,
    });
    expect(one.body.request_body).toBe(bodyOf(n, 'request'));
    expect(one.body.response_body).toBe(bodyOf(n, 'response'));
  });

  it("answers 404 for a call not in the project's log, another organization's key, and 400 for a bad id", async () => {
    const foreign = await h.store.insertRequestLog({
      projectId: h.globexProjectId,
      keyId: 'key_000000000000',
      provider: 'provider-a',
      model: 'provider-a:theirs',
      stream: false,
      status: 200,
      ttfbMs: 1,
      totalMs: 1,
      tokensIn: null,
      tokensOut: null,
      error: null,
      requestBody: '{}',
      responseBody: '{}',
      createdAt: Date.now(),
    });
    const missing = {
      error: {
        message: `The request '${foreign}' is not in this project's log`,
        type: 'not_found_error',
        param: 'request_id',
        code: 'not_found',
      },
    };
    expect(await get(`/requests/${foreign}`)).toMatchObject({ status: 404, body: missing });
    expect((await get(`/requests/${ids[0]}`, h.globexKey)).status).toBe(404);
    expect(await get('/requests/abc')).toMatchObject({
      status: 400,
      body: { error: { message: `request_id must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`, param: 'request_id' } },
    });
  });
});
