import { SvcError } from '../errors.js';
import type { Principal, SvcService } from '../service/service.js';

/** What a caller asks for: a proxied call needs the operator's proxy grant; reading the log needs ownership only. */
export type ProjectUse = 'proxy' | 'read-log';

/**
 * Checks a proxy caller with the service's own rules: the key is valid (401), the project exists
 * and the key's organization owns it (404 either way) and, for proxied calls, has proxy access (403).
 */
export async function authorizeProject(
  service: SvcService,
  credential: string | null,
  projectId: string,
  use: ProjectUse,
): Promise<Principal> {
  if (credential === null) {
    throw new SvcError('authentication', "Missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'");
  }
  const principal = await service.authenticate(credential);
  if (use === 'proxy') await service.authorizeProxy(principal, projectId);
  else await service.ownProject(principal, projectId);
  return principal;
}
