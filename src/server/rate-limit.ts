import fastifyRateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { RateLimitOptions } from '../contract/rate-limit.js';
import { SvcError } from '../errors.js';
import { func, positiveInteger } from '../is.js';
import { type LimitRejection, limitRejection, type ResolvedOrgLimits, retrySeconds } from '../service/limits.js';
import { checkRedisUrl, redactDatabaseUrl } from '../service/open.js';
import type { Principal, SvcService } from '../service/service.js';
import { RedisRequestCounter } from '../store/redis-counts.js';
import type { RequestCount, RequestCounter } from '../store/types.js';
import { kDefaultRateLimits } from './rate-limit-defaults.js';

export { kDefaultRateLimits };

/** Authenticates callers under the request limits; one per service, shared by its /v2, proxy, hub and metrics routes. */
export interface RequestLimiter {
  /**
   * Runs `authenticate`; a failure counts against the client address (see `failedAuthentication`). Then counts the
   * request against its key's limit and its organization's: the `x-ratelimit-*-requests` headers (of the nearer
   * limit) go on the answer, and over either limit it is 429 with `retry-after`.
   */
  admit(request: FastifyRequest, reply: FastifyReply, authenticate: () => Promise<Principal>): Promise<Principal>;
  /**
   * Counts one failed authentication of the request's address and returns what to answer: `failure` itself, or a
   * 429 (with `retry-after`) once the address is over its limit. The count comes first and decides alone, one atomic
   * increment, so that concurrent failures from several replicas cannot all read the same count below the limit.
   */
  failedAuthentication(request: FastifyRequest, reply: FastifyReply, failure: SvcError): Promise<SvcError>;
}

const kLimiters = new WeakMap<SvcService, Promise<RequestLimiter>>();

/**
 * The service's request limiter, made by the first of its plugins to be registered (with that plugin's
 * `rateLimit` options): the /v2, proxy and hub routes of one service share it, so that a key has one count and an
 * address one tally of failed authentications across all of them.
 */
export function requestLimiter(app: FastifyInstance, service: SvcService, options: RateLimitOptions = {}): Promise<RequestLimiter> {
  let limiter = kLimiters.get(service);
  if (limiter === undefined) {
    limiter = createLimiter(app, service, options).catch((error: unknown) => {
      kLimiters.delete(service);
      throw error;
    });
    kLimiters.set(service, limiter);
  }
  return limiter;
}

/**
 * Counting is `@fastify/rate-limit`'s, registered with `global: false`: it hooks no route by itself, and the host
 * app's routes stay unlimited.
 */
async function createLimiter(app: FastifyInstance, service: SvcService, options: RateLimitOptions): Promise<RequestLimiter> {
  const windowMs = positiveInteger(options.windowMs ?? kDefaultRateLimits.windowMs, 'rateLimit.windowMs');
  const failedAuthLimit = positiveInteger(
    options.failedAuthPerWindow ?? kDefaultRateLimits.failedAuthPerWindow,
    'rateLimit.failedAuthPerWindow',
  );
  if (options.store !== undefined) func(options.store, 'rateLimit.store');
  if (options.store !== undefined && options.redis !== undefined) {
    throw new TypeError('rateLimit.store and rateLimit.redis are two places for the counts; set one');
  }
  const shared = service.store.requestCounter;
  const store =
    options.store ??
    (options.redis !== undefined
      ? counterStore(await connectRedis(app, options.redis), 'Redis')
      : shared === undefined
        ? undefined
        : counterStore(shared, 'the database'));
  await app.register(fastifyRateLimit, { global: false, ...(store === undefined ? {} : { store }) });

  // The key generators and the limits read the principal of a request that has just authenticated, and its
  // organization's limits, read once per request: an operator's `svc orgs limits --rpm` applies to the next request.
  const principals = new WeakMap<FastifyRequest, { caller: Principal; limits: Promise<ResolvedOrgLimits> }>();
  const principal = (request: FastifyRequest) => principals.get(request)!;
  const perKey = app.createRateLimit({
    timeWindow: windowMs,
    keyGenerator: (request) => principal(request).caller.keyId,
    max: async (request) => (await principal(request).limits).requestsPerMinute,
  });
  // One count for all of an organization's keys. The prefix keeps it apart from key ids and client addresses, which
  // share the store's one table.
  const perOrg = app.createRateLimit({
    timeWindow: windowMs,
    keyGenerator: (request) => `org:${principal(request).caller.orgId}`,
    max: async (request) => (await principal(request).limits).orgRequestsPerMinute,
  });
  // The default key: the client address (IPv6 by its /64), as Fastify's `trustProxy` makes `request.ip`.
  const perAddress = app.createRateLimit({ timeWindow: windowMs, max: failedAuthLimit });

  const limiter: RequestLimiter = {
    async admit(request, reply, authenticate) {
      // The key is looked up first: a valid key is let through whatever its address's failures, so that one client's
      // bad keys cannot lock out every other client behind the same address.
      let caller: Principal;
      try {
        caller = await authenticate();
      } catch (error) {
        if (error instanceof SvcError && error.code === 'authentication') throw await limiter.failedAuthentication(request, reply, error);
        throw error;
      }
      principals.set(request, { caller, limits: service.orgLimits(caller.orgId) });
      // The key first: a key already over its own limit is refused without spending its organization's allowance,
      // which its other keys share.
      const key = await perKey(request);
      if (key.isAllowed) return caller; // no allow list is set; here for the type
      if (key.isExceeded) {
        setRequestHeaders(reply, key.max, key.remaining, key.ttl);
        throw reject(reply, { kind: 'requests', orgId: caller.orgId, limit: key.max, windowMs, retryAfterMs: key.ttl });
      }
      const org = await perOrg(request);
      if (org.isAllowed) return caller;
      // The nearer limit's headers (the organization's when they are as near: it is the one that refuses next).
      const nearer = org.remaining <= key.remaining ? org : key;
      setRequestHeaders(reply, nearer.max, nearer.remaining, nearer.ttl);
      if (org.isExceeded) {
        throw reject(reply, { kind: 'org_requests', orgId: caller.orgId, limit: org.max, windowMs, retryAfterMs: org.ttl });
      }
      return caller;
    },
    async failedAuthentication(request, reply, failure) {
      const address = await perAddress(request);
      if (address.isAllowed || !address.isExceeded) return failure;
      return reject(reply, { kind: 'failed_authentication', limit: address.max, windowMs, retryAfterMs: address.ttl });
    },
  };
  return limiter;
}

/**
 * The Redis counter for the app's limits, closed with the app. Its connection losses are logged once each (not
 * every reconnection attempt), with the request limits answering 503 meanwhile.
 */
async function connectRedis(app: FastifyInstance, url: string): Promise<RequestCounter> {
  checkRedisUrl(url, 'rateLimit.redis');
  const where = redactDatabaseUrl(url);
  const counter = await RedisRequestCounter.connect(url, {
    onLost: (cause) => app.log.warn({ err: cause }, `Redis at ${where} went away; requests answer 503 until it is back`),
    onBack: () => app.log.info(`Redis at ${where} is back`),
  }).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    throw new SvcError('internal', `The request counts' Redis at ${where} could not be reached: ${reason}`, { cause: error });
  });
  app.addHook('onClose', () => counter.close());
  return counter;
}

/**
 * A `@fastify/rate-limit` store over shared counts (`where` they are kept: the database, Redis). A count that cannot
 * be read answers 503 `overloaded` with `retry-after`: letting the request through unlimited would lift every limit
 * for as long as the counts are away, while a 500 would tell clients nothing they could act on; the SDKs retry a 503
 * by themselves.
 */
export function counterStore(counter: RequestCounter, where: string): FastifyRateLimitStoreCtor {
  type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;
  const answer = (counting: Promise<RequestCount>, callback: Callback) =>
    counting.then(
      (counted) => callback(null, { current: counted.count, ttl: counted.resetInMs }),
      (error: unknown) =>
        callback(
          new SvcError('overloaded', `The request limits could not be checked: ${where} did not answer; retry shortly`, {
            cause: error,
            retryAfterSeconds: kCountRetrySeconds,
          }),
        ),
    );
  return class CounterStore implements FastifyRateLimitStore {
    incr(key: string, callback: Callback, timeWindow: number): void {
      answer(counter.countRequest(key, timeWindow), callback);
    }
    read(key: string, callback: Callback): void {
      answer(counter.readRequestCount(key), callback);
    }
    // One table for every limit: its keys (key ids, client addresses) never collide.
    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

/** How long a client is asked to wait when the counts could not be read: a database or Redis fail-over takes seconds. */
const kCountRetrySeconds = 2;

// Headers go on the raw response: a proxy route's reply is hijacked, and `writeHead` merges them in either way.
function setRequestHeaders(reply: FastifyReply, limit: number, remaining: number, resetMs: number): void {
  reply.raw.setHeader('x-ratelimit-limit-requests', String(limit));
  reply.raw.setHeader('x-ratelimit-remaining-requests', String(remaining));
  reply.raw.setHeader('x-ratelimit-reset-requests', durationText(resetMs));
}

/** A 429's error, with `retry-after` (whole seconds) and `retry-after-ms` (which the OpenAI SDKs read first). */
function reject(reply: FastifyReply, rejection: Extract<LimitRejection, { retryAfterMs: number }>): SvcError {
  reply.raw.setHeader('retry-after', String(retrySeconds(rejection.retryAfterMs)));
  reply.raw.setHeader('retry-after-ms', String(Math.max(0, Math.ceil(rejection.retryAfterMs))));
  return limitRejection(rejection);
}

/**
 * A duration as OpenAI writes its reset headers: `850ms`, `1.5s`, `6m0s`.
 *
 * @example
 * ```ts
 * durationText(59_998); // '59.998s'
 * ```
 */
export function durationText(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / 60_000);
  const seconds = `${(whole % 60_000) / 1000}s`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}
