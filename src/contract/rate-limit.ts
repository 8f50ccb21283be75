// The request-limit options every plugin accepts (/v2, proxy, hub, metrics). Only the shape lives
// here; server/rate-limit.ts enforces it. The store class type is Fastify's own, imported as a type
// only: nothing here loads Fastify.
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

/**
 * Request limits of the /v2, proxy and hub plugins; all optional. A service's limits are set once, by the first of
 * its plugins to be registered (`svcRoutes` in `startServer`); the others share them.
 */
export interface RateLimitOptions {
  /**
   * Where the counts live: a `@fastify/rate-limit` store class. Default: the service's store when it keeps shared
   * counts (PostgreSQL: every replica on the database counts in one table), else `@fastify/rate-limit`'s in-memory
   * store, right for one process (SQLite).
   */
  store?: FastifyRateLimitStoreCtor;
  /**
   * A Redis server (`redis://host:port`) that keeps the counts instead: every replica that names it shares them,
   * whichever store (SQLite or PostgreSQL) each one is on. Connected when the first plugin registers (a server that
   * cannot be reached fails the registration, naming the URL) and closed with the app. Not with `store`.
   */
  redis?: string;
  /** The window requests are counted in, ms. Default 60000: an organization's `rpm` is the count per window. */
  windowMs?: number;
  /**
   * Failed authentications (wrong or missing keys, wrong `/metrics` tokens) one client address may make per window;
   * past them its requests with a wrong key answer 429 instead of 401. A request with a valid key is never refused
   * for its address's failures: many clients may share one address (behind a NAT, or a proxy Fastify's `trustProxy`
   * does not see through). Default 20.
   */
  failedAuthPerWindow?: number;
}
