// A database that cannot be reached (stopped, restarting, recovering, or the network to it cut) is a passing state,
// not a failure of the request: the store turns the driver's connection errors into SvcError('overloaded') with a
// retry-after, which every caller (service, routes, job runner) already treats as "try again shortly". Errors of the
// statement itself (a constraint, a syntax error) pass through unchanged.
import { SvcError } from '../errors.js';

/** Seconds a client waits before it tries again while the database is away: a restart takes a few. */
export const kUnreachableRetrySeconds = 2;

/** Socket errors that mean no connection to the server (refused, reset, cut, not resolvable). */
const kSocketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** SQLSTATEs of a server that is going away or not yet back: admin, crash and fast shutdown; not yet accepting. */
const kServerGoneStates = new Set(['57P01', '57P02', '57P03']);
/** node-postgres's own words when the socket closes under it or the pool cannot get a connection in time. */
const kDriverPhrases = ['Connection terminated', 'connection error and is not queryable', 'timeout exceeded when trying to connect'];

/** Whether `error` (or one of its causes) says the database could not be reached, rather than that a statement failed. */
export function isUnreachable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (kSocketCodes.has(code) || kServerGoneStates.has(code) || code.startsWith('08'))) return true;
    if (kDriverPhrases.some((phrase) => e instanceof Error && e.message.includes(phrase))) return true;
  }
  return false;
}

/** `error` as the caller should see it: unreachable becomes 503 `overloaded` with a retry-after, the rest unchanged. */
export function asUnreachable(error: unknown): unknown {
  if (!isUnreachable(error) || error instanceof SvcError) return error;
  return new SvcError('overloaded', 'The database is unavailable; retry shortly', {
    cause: error,
    retryAfterSeconds: kUnreachableRetrySeconds,
  });
}
