import { SvcError } from '../errors.js';
import type { Principal, SvcService } from '../service/service.js';
import type { Project } from '../store/types.js';

/** What a caller asks for: a proxied call needs the operator's proxy grant; reading the log needs ownership only. */
export type ProjectUse = 'proxy' | 'read-log';

/** The caller of a proxy route, by its key (401 when the key is missing, unknown or revoked). */
export async function authenticateCaller(service: SvcService, credential: string | null): Promise<Principal> {
  if (credential === null) {
    throw new SvcError('authentication', "Missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'");
  }
  return service.authenticate(credential);
}

/**
 * Checks a proxy caller with the service's own rules: the project exists and the key's organization owns it
 * (404 either way) and, for proxied calls, has proxy access and tokens left this month (403).
 */
export async function authorizeProject(service: SvcService, principal: Principal, projectId: string, use: ProjectUse): Promise<Project> {
  return use === 'proxy' ? service.authorizeProxy(principal, projectId) : service.ownProject(principal, projectId);
}
