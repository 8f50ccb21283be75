import { SvcError } from '../errors.js';
import type { OrgLimits } from '../store/types.js';

/** An organization's limits with every default filled in. */
export type ResolvedOrgLimits = { readonly [K in keyof OrgLimits]: number };

/**
 * The service's defaults, the one place they live: an organization the operator gave no limit of
 * its own gets these (`svc orgs limits <org>` shows both).
 */
export const kDefaultOrgLimits: ResolvedOrgLimits = Object.freeze({
  maxRunningJobs: 1,
  maxQueuedJobs: 10,
  requestsPerMinute: 600,
});

/** The operator-facing name of each limit: the `svc orgs limits` flag and the error's `param`. */
export const kOrgLimitFlags: Readonly<Record<keyof OrgLimits, string>> = Object.freeze({
  maxRunningJobs: 'running',
  maxQueuedJobs: 'queued',
  requestsPerMinute: 'rpm',
});

export function resolveOrgLimits(set: OrgLimits): ResolvedOrgLimits {
  return {
    maxRunningJobs: set.maxRunningJobs ?? kDefaultOrgLimits.maxRunningJobs,
    maxQueuedJobs: set.maxQueuedJobs ?? kDefaultOrgLimits.maxQueuedJobs,
    requestsPerMinute: set.requestsPerMinute ?? kDefaultOrgLimits.requestsPerMinute,
  };
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
