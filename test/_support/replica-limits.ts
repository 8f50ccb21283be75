// What replicas that share request counts must answer, whatever shares them (PostgreSQL, Redis): the assertions of
// test/e2e/replica-limits.test.ts and test/e2e/replica-redis.test.ts.
import { expect } from 'vitest';

import { durationText } from '../../src/server/rate-limit.js';

/** `GET /v2/models` at a server with a key. */
export const models = (server: { url: string }, key: string) =>
  fetch(`${server.url}/v2/models`, { headers: { authorization: `Bearer ${key}` } });

/**
 * Four requests with one key of `org` (3 requests a minute), alternating between two replicas: 200, 200, 200, then
 * 429 with OpenAI's headers and error.
 */
export async function expectFourthRejected(one: { url: string }, two: { url: string }, key: string, org: string): Promise<void> {
  const answers = [];
  for (const server of [one, two, one, two]) answers.push(await models(server, key));
  expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429]);
  expect(answers.map((r) => r.headers.get('x-ratelimit-remaining-requests'))).toEqual(['2', '1', '0', '0']);
  expect(answers.map((r) => r.headers.get('x-ratelimit-limit-requests'))).toEqual(['3', '3', '3', '3']);
  const rejected = answers[3];
  const retryAfterMs = Number(rejected.headers.get('retry-after-ms'));
  expect(retryAfterMs).toBeGreaterThan(0);
  expect(retryAfterMs).toBeLessThanOrEqual(60_000);
  const retryAfter = Math.ceil(retryAfterMs / 1000);
  expect(rejected.headers.get('retry-after')).toBe(String(retryAfter));
  expect(rejected.headers.get('x-ratelimit-reset-requests')).toBe(durationText(retryAfterMs));
  expect(await rejected.json()).toEqual({
    error: {
      message: `Rate limit reached: an API key of '${org}' may send 3 requests per minute; retry in ${retryAfter} s`,
      type: 'rate_limit_error',
      param: null,
      code: 'rate_limited',
    },
  });
}

/**
 * `limit` bad keys at replica one, then another bad key at replica two: 429, the address's bad keys refused for the
 * rest of the (one-minute) window; a good key from the same address is never refused for them at either replica (it
 * answers 200, or, for a key whose own rate is `spent`, that rate's 429).
 */
export async function expectAddressLockedOut(
  one: { url: string },
  two: { url: string },
  key: string,
  limit: number,
  spent = false,
): Promise<void> {
  for (let i = 0; i < limit; i += 1) expect((await models(one, `svc_wrong_${i}`)).status).toBe(401);
  const locked = await models(two, 'svc_wrong_again');
  expect(locked.status).toBe(429);
  expect(locked.headers.get('retry-after')).toMatch(/^(59|60)$/);
  expect(((await locked.json()) as { error: { message: string } }).error.message).toMatch(
    new RegExp(`^Too many failed authentications from this address \\(${limit} per minute\\); retry in (59|60) s$`),
  );
  for (const server of [two, one]) {
    const good = await models(server, key);
    expect(good.status).toBe(spent ? 429 : 200);
    if (spent) expect(((await good.json()) as { error: { message: string } }).error.message).toMatch(/^Rate limit reached: an API key of /);
  }
}

/** A request whose counts could not be read (`where`: the database, Redis): 503 overloaded, retry in 2 s. */
export async function expectCountsUnavailable(refused: Response, where: string): Promise<void> {
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('2');
  expect(await refused.json()).toEqual({
    error: {
      message: `The request limits could not be checked: ${where} did not answer; retry shortly`,
      type: 'overloaded_error',
      param: null,
      code: 'overloaded',
    },
  });
}
