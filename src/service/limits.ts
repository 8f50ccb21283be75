import { SvcError } from '../errors.js';
import { rateLimited } from '../telemetry.js';
import type { OrgLimits, QueueLimits, QuotaRefusal } from '../store/types.js';

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
  // Storage quotas: far above what one team trains by hand (a version holds up to about 32 MB), low enough that one
  // organization cannot fill the disk that every other one shares.
  maxModels: 1000,
  maxVersionsPerModel: 100,
  maxStorageMb: 5120,
});

/** The operator-facing name of each limit: the `svc orgs limits` flag and the error's `param`. */
export const kOrgLimitFlags: Readonly<Record<keyof OrgLimits, string>> = Object.freeze({
  maxRunningJobs: 'running',
  maxQueuedJobs: 'queued',
  requestsPerMinute: 'rpm',
  orgRequestsPerMinute: 'org-rpm',
  maxModels: 'models',
  maxVersionsPerModel: 'versions',
  maxStorageMb: 'storage-mb',
});

export function resolveOrgLimits(set: OrgLimits): ResolvedOrgLimits {
  const requestsPerMinute = set.requestsPerMinute ?? kDefaultOrgLimits.requestsPerMinute;
  return {
    maxRunningJobs: set.maxRunningJobs ?? kDefaultOrgLimits.maxRunningJobs,
    maxQueuedJobs: set.maxQueuedJobs ?? kDefaultOrgLimits.maxQueuedJobs,
    requestsPerMinute,
    orgRequestsPerMinute: set.orgRequestsPerMinute ?? requestsPerMinute,
    maxModels: set.maxModels ?? kDefaultOrgLimits.maxModels,
    maxVersionsPerModel: set.maxVersionsPerModel ?? kDefaultOrgLimits.maxVersionsPerModel,
    maxStorageMb: set.maxStorageMb ?? kDefaultOrgLimits.maxStorageMb,
  };
}

const kMiB = 1024 * 1024;

/** What the store checks when it queues a model or version for an organization with these limits. */
export function queueLimits(limits: ResolvedOrgLimits): QueueLimits {
  return {
    maxQueuedJobs: limits.maxQueuedJobs,
    maxModels: limits.maxModels,
    maxVersions: limits.maxVersionsPerModel,
    maxStoredBytes: limits.maxStorageMb * kMiB,
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
  | { kind: 'jobs'; orgId: string; queued: number; limit: number }
  /**
   * A storage quota refused a train request: as many classifiers or versions (of `modelId`) as the organization may
   * keep, or more bytes than it may store (with the request's own, or the request's alone).
   */
  | { kind: 'quota'; orgId: string; modelId: string | null; refusal: QuotaRefusal };

/** What a client whose training queue is full waits before trying again: about one short job's run. */
export const kQueueFullRetryAfterSeconds = 30;

/**
 * The error for every request a limit turns away, the one place such a rejection is made (and so the one place to
 * count them): 429 `rate_limited` for request rates (the caller sets `retry-after`) and full queues or storage quotas,
 * 413 `payload_too_large` for a train request larger than its organization's whole storage quota, 403
 * `budget_exceeded` for a spent budget.
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
    case 'quota':
      return quotaRejection(rejection.orgId, rejection.modelId, rejection.refusal);
    case 'budget':
      return new SvcError(
        'budget_exceeded',
        `The project '${rejection.projectId}' has used ${rejection.used} of its ${rejection.budget} proxy tokens for ` +
          `${rejection.month} (UTC); the budget starts again next month, or the operator can raise it`,
      );
  }
}

const mib = (bytes: number) => `${(bytes / kMiB).toFixed(2)} MiB`;
const kRaiseQuota = 'or ask the operator to raise the quota';

/**
 * 429 `rate_limited` for a full quota, with no `retry-after` (waiting frees no room; deleting does), and 413
 * `payload_too_large` for a request that alone needs more than the organization may store.
 */
function quotaRejection(orgId: string, modelId: string | null, refusal: QuotaRefusal): SvcError {
  switch (refusal.quota) {
    case 'models':
      return new SvcError(
        'rate_limited',
        `The organization '${orgId}' has ${refusal.used} models, the most it may keep (${refusal.limit}); delete a model it ` +
          `no longer needs (DELETE /v2/models/{id}) to make room, ${kRaiseQuota}`,
      );
    case 'versions':
      return new SvcError(
        'rate_limited',
        `The model '${modelId}' has ${refusal.used} versions, the most one model may keep (${refusal.limit}); delete a ` +
          `version it no longer needs (DELETE /v2/models/${modelId}/versions/{n}) to make room, ${kRaiseQuota}`,
      );
    case 'storage':
      if (refusal.needed > refusal.limit) {
        return new SvcError(
          'payload_too_large',
          `This training request needs ${mib(refusal.needed)} of storage, more than the ${mib(refusal.limit)} the ` +
            `organization '${orgId}' may store in all; send fewer or shorter examples or unlabelled texts, ${kRaiseQuota}`,
          { param: 'examples' },
        );
      }
      return new SvcError(
        'rate_limited',
        `The organization '${orgId}' stores ${mib(refusal.used)} of the ${mib(refusal.limit)} it may store, and this ` +
          `request needs ${mib(refusal.needed)} more; delete versions or models it no longer needs to make room, ${kRaiseQuota}`,
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
