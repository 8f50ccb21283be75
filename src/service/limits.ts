import { SvcError } from '../errors.js';
import { rateLimited } from '../telemetry.js';
import type { OrgLimits } from '../store/types.js';

/** An organization's limits with every default filled in. */
export type ResolvedOrgLimits = { readonly [K in keyof OrgLimits]: number };

/**
 * The service's defaults, the one place they live: an organization the operator gave no limit of
 * its own gets these (`svc orgs limits <org>` shows both). The organization's own rate has no fixed default: left
 * unset it is its per-key rate, so that all its keys together get one key's allowance until the operator says more.
 */
export const kDefaultOrgLimits: Omit<ResolvedOrgLimits, 'orgRequestsPerMinute'> = Object.freeze({
  maxRunningJobs: 1,
  maxQueuedJobs: 10,
  requestsPerMinute: 600,
});

/** The operator-facing name of each limit: the `svc orgs limits` flag and the error's `param`. */
export const kOrgLimitFlags: Readonly<Record<keyof OrgLimits, string>> = Object.freeze({
  maxRunningJobs: 'running',
  maxQueuedJobs: 'queued',
  requestsPerMinute: 'rpm',
  orgRequestsPerMinute: 'org-rpm',
});

export function resolveOrgLimits(set: OrgLimits): ResolvedOrgLimits {
  const requestsPerMinute = set.requestsPerMinute ?? kDefaultOrgLimits.requestsPerMinute;
  return {
    maxRunningJobs: set.maxRunningJobs ?? kDefaultOrgLimits.maxRunningJobs,
    maxQueuedJobs: set.maxQueuedJobs ?? kDefaultOrgLimits.maxQueuedJobs,
    requestsPerMinute,
    orgRequestsPerMinute: set.orgRequestsPerMinute ?? requestsPerMinute,
  };
}

/** A request turned away by a limit, with what its message needs. */
export type LimitRejection =
  /** The API key sent more requests in the window than its organization's `requestsPerMinute`. */
  | { kind: 'requests'; orgId: string; limit: number; windowMs: number; retryAfterMs: number }
  /** The organization's keys together sent more requests in the window than its `orgRequestsPerMinute`. */
  | { kind: 'org_requests'; orgId: string; limit: number; windowMs: number; retryAfterMs: number }
  /** The client address failed to authenticate too often in the window (wrong or missing keys, wrong metrics tokens). */
  | { kind: 'failed_authentication'; limit: number; windowMs: number; retryAfterMs: number }
  /** The project used its monthly proxy token budget. */
  | { kind: 'budget'; projectId: string; month: string; budget: number; used: number }
  /** The organization has as many training jobs queued as it may. */
  | { kind: 'jobs'; orgId: string; queued: number; limit: number };

/** What a client whose training queue is full waits before trying again: about one short job's run. */
export const kQueueFullRetryAfterSeconds = 30;

/**
 * The error for every request a limit turns away, the one place such a rejection is made (and so the one place to
 * count them): 429 `rate_limited` for request rates (the caller sets `retry-after`), 403 `budget_exceeded` for a
 * spent budget.
 *
 * @example
 * ```ts
 * limitRejection({ kind: 'budget', projectId: 'proj_0123456789ab', month: '2026-11', budget: 1000, used: 1012 }).message;
 * // "The project 'proj_0123456789ab' has used 1012 of its 1000 proxy tokens for 2026-11 (UTC); ..."
 * ```
 */
export function limitRejection(rejection: LimitRejection): SvcError {
  rateLimited(rejection.kind);
  switch (rejection.kind) {
    case 'requests':
      return new SvcError(
        'rate_limited',
        `Rate limit reached: an API key of '${rejection.orgId}' may send ${rejection.limit} requests per ${windowText(rejection.windowMs)}; ` +
          `retry in ${retrySeconds(rejection.retryAfterMs)} s`,
      );
    case 'org_requests':
      return new SvcError(
        'rate_limited',
        `Rate limit reached: the API keys of '${rejection.orgId}' together may send ${rejection.limit} requests per ` +
          `${windowText(rejection.windowMs)}; retry in ${retrySeconds(rejection.retryAfterMs)} s`,
      );
    case 'failed_authentication':
      return new SvcError(
        'rate_limited',
        `Too many failed authentications from this address (${rejection.limit} per ${windowText(rejection.windowMs)}); ` +
          `retry in ${retrySeconds(rejection.retryAfterMs)} s`,
      );
    case 'jobs':
      return new SvcError(
        'rate_limited',
        `The organization '${rejection.orgId}' has ${rejection.queued} training jobs queued, the most it may queue ` +
          `(${rejection.limit}); retry when one has started`,
        { retryAfterSeconds: kQueueFullRetryAfterSeconds },
      );
    case 'budget':
      return new SvcError(
        'budget_exceeded',
        `The project '${rejection.projectId}' has used ${rejection.used} of its ${rejection.budget} proxy tokens for ` +
          `${rejection.month} (UTC); the budget starts again next month, or the operator can raise it`,
      );
  }
}

/** Whole seconds a client waits, as `retry-after` says it: never 0 while the window is still open. */
export function retrySeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

function windowText(windowMs: number): string {
  return windowMs === 60_000 ? 'minute' : `${windowMs} ms`;
}

/** Each present value must be a positive integer (or null: back to the default). */
export function checkOrgLimits(limits: Partial<OrgLimits>): Partial<OrgLimits> {
  for (const [name, value] of Object.entries(limits) as [keyof OrgLimits, number | null | undefined][]) {
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new SvcError('invalid_request', `The limit ${kOrgLimitFlags[name]} must be a positive integer; got ${value}`, {
        param: kOrgLimitFlags[name],
      });
    }
  }
  return limits;
}
