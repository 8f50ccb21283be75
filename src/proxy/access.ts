import { SvcError } from '../errors.js';
import type { KeyIdentity, ResolvedProxyOptions } from './types.js';

/** What a caller asks for: a proxied call needs the operator's proxy grant; reading the log needs ownership only. */
export type ProjectUse = 'proxy' | 'read-log';

/**
 * Checks a caller against a project: the key is valid (401), the project exists and the key's organization owns
 * it (404 either way) and, for proxied calls, has been granted proxy access by the operator (403). With a service that has
 * its own `authorizeProxy`, that rule decides proxied calls. Messages match the service's.
 */
export async function authorizeProject(
  options: Pick<ResolvedProxyOptions, 'store' | 'authenticate' | 'authorizeProxy'>,
  credential: string | null,
  projectId: string,
  use: ProjectUse,
): Promise<KeyIdentity> {
  if (credential === null) {
    throw new SvcError('authentication', "Missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'");
  }
  let identity: KeyIdentity;
  try {
    identity = await options.authenticate(credential);
  } catch (error) {
    if (error instanceof SvcError && error.code !== 'authentication') throw error;
    throw new SvcError('authentication', error instanceof SvcError ? error.message : 'Invalid API key', { cause: error });
  }
  if (use === 'proxy' && options.authorizeProxy) {
    await options.authorizeProxy(identity, projectId);
    return identity;
  }
  const project = await options.store.getProject(projectId);
  if (project === null) {
    throw new SvcError('not_found', `The project '${projectId}' does not exist`, { param: 'project_id' });
  }
  // Another organization's project reads as an unknown one: a key must not learn which ids exist.
  if (project.orgId !== identity.orgId) throw new SvcError('not_found', `The project '${projectId}' does not exist`, { param: 'project_id' });
  if (use === 'proxy' && !(await options.store.getOrganization(identity.orgId))?.proxyAccess) {
    throw new SvcError(
      'permission',
      `The organization '${identity.orgId}' has no proxy access; request access from the operator`,
    );
  }
  return identity;
}
