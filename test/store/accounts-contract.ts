// The store contract's accounts part: organizations and their proxy grants, API keys by hash, projects and their
// budgets, the limits an operator sets. contract.ts runs it for every backend.
import { describe, expect, it } from 'vitest';

import { freshStore, type StoreBackend } from './contract-fixtures.js';

export function accountsContract(backend: StoreBackend): void {
  describe('organizations, API keys, projects and limits', () => {
    const fresh = freshStore(backend);

    it('keeps organizations, proxy grants, keys by hash and their revocation', async () => {
      const { store } = fresh;
      const org = await store.createOrganization('acme');
      expect(org).toEqual({ id: 'acme', createdAt: org.createdAt, proxyAccess: false });
      await expect(store.createOrganization('acme')).rejects.toThrow(backend.errors.duplicateOrganization);
      await store.setProxyAccess('acme', true);
      expect(await store.getOrganization('acme')).toEqual({ ...org, proxyAccess: true });
      expect(await store.getOrganization('nope')).toBeNull();

      const key = { id: 'key_000000000001', orgId: 'acme', hash: 'ab'.repeat(32), prefix: 'svc_AbCd', createdAt: 5, revokedAt: null };
      await store.insertApiKey(key);
      expect(await store.findApiKeyByHash('ab'.repeat(32))).toEqual(key);
      expect(await store.findApiKeyByHash('cd'.repeat(32))).toBeNull();
      expect(await store.revokeApiKey('key_000000000001', 9)).toBe(true);
      expect(await store.revokeApiKey('key_000000000001', 12)).toBe(true);
      expect(await store.revokeApiKey('key_missing', 9)).toBe(false);
      expect(await store.listApiKeys('acme')).toEqual([{ ...key, revokedAt: 9 }]);
    });

    it('keeps projects per organization', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      const project = { id: 'proj_0123456789ab', orgId: 'acme', name: 'chatbot', createdAt: 7, monthlyTokenBudget: null };
      await store.createProject(project);
      expect(await store.getProject('proj_0123456789ab')).toEqual(project);
      expect(await store.listProjects('acme')).toHaveLength(1);
      expect(await store.listProjects('other')).toEqual([]);
      await expect(store.createProject({ ...project, id: 'proj_x', orgId: 'ghost' })).rejects.toThrow(
        backend.errors.projectOfUnknownOrganization,
      );
      await store.setProjectBudget('proj_0123456789ab', 5000);
      expect((await store.getProject('proj_0123456789ab'))?.monthlyTokenBudget).toBe(5000);
      await store.setProjectBudget('proj_0123456789ab', null);
      expect((await store.getProject('proj_0123456789ab'))?.monthlyTokenBudget).toBeNull();
    });

    it('keeps the limits an operator set per organization, null for the ones left at the default', async () => {
      const { store } = fresh;
      await store.createOrganization('acme');
      const unset = {
        maxRunningJobs: null,
        maxQueuedJobs: null,
        requestsPerMinute: null,
        orgRequestsPerMinute: null,
        maxModels: null,
        maxVersionsPerModel: null,
        maxStorageMb: null,
      };
      expect(await store.getOrgLimits('acme')).toEqual(unset);
      await store.setOrgLimits('acme', { maxRunningJobs: 2, requestsPerMinute: 60, maxModels: 3 });
      await store.setOrgLimits('acme', { maxQueuedJobs: 5, orgRequestsPerMinute: 150, maxVersionsPerModel: 4, maxStorageMb: 64 });
      expect(await store.getOrgLimits('acme')).toEqual({
        maxRunningJobs: 2,
        maxQueuedJobs: 5,
        requestsPerMinute: 60,
        orgRequestsPerMinute: 150,
        maxModels: 3,
        maxVersionsPerModel: 4,
        maxStorageMb: 64,
      });
      await store.setOrgLimits('acme', { requestsPerMinute: null, maxStorageMb: null });
      expect(await store.getOrgLimits('acme')).toEqual({
        maxRunningJobs: 2,
        maxQueuedJobs: 5,
        requestsPerMinute: null,
        orgRequestsPerMinute: 150,
        maxModels: 3,
        maxVersionsPerModel: 4,
        maxStorageMb: null,
      });
      expect(await store.getOrgLimits('ghost')).toEqual(unset);
      await expect(store.setOrgLimits('ghost', { maxRunningJobs: 1 })).rejects.toThrow(backend.errors.limitsOfUnknownOrganization);
    });
  });
}
