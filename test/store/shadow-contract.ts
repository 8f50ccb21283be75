// The store contract's shadow part: a project's shadow settings put, replaced, listed and removed, and the compared
// calls stored, listed, summed by bucket (with the classifier's median time) and pruned with their log rows.
// contract.ts runs it for every backend.
import { describe, expect, it } from 'vitest';

import type { ShadowResult, ShadowSetting } from '../../src/store/shadow-types.js';
import type { RequestLogRow } from '../../src/store/types.js';
import { freshStore, type StoreBackend } from './contract-fixtures.js';

const kHour = 3_600_000;

const setting = (overrides: Partial<ShadowSetting> = {}): ShadowSetting => ({
  projectId: 'proj_1',
  model: 'provider-a:gpt-4o-mini',
  classifierId: 'svc-small-000000000001',
  textPointer: null,
  labelRule: { words: { true: ['yes'], false: ['no'] } },
  createdAt: 10,
  updatedAt: 10,
  ...overrides,
});

const logRow = (createdAt: number): Omit<RequestLogRow, 'id'> => ({
  projectId: 'proj_1',
  keyId: 'key_1',
  provider: 'provider-a',
  model: 'provider-a:gpt-4o-mini',
  stream: false,
  status: 200,
  ttfbMs: 1,
  totalMs: 40,
  tokensIn: 7,
  tokensOut: 1,
  error: null,
  requestBody: '{}',
  responseBody: '{}',
  createdAt,
});

function result(requestId: number, createdAt: number, overrides: Partial<ShadowResult> = {}): Omit<ShadowResult, 'id'> {
  return {
    projectId: 'proj_1',
    requestId,
    model: 'provider-a:gpt-4o-mini',
    classifierId: 'svc-small-000000000001',
    chatLabel: true,
    classifierLabel: true,
    agreed: true,
    classifierMs: 2,
    error: null,
    tokensIn: 7,
    tokensOut: 1,
    chatMs: 40,
    createdAt,
    ...overrides,
  };
}

export function shadowContract(backend: StoreBackend): void {
  describe('shadow classifiers', () => {
    const fresh = freshStore(backend);
    const project = async () => {
      await fresh.store.createOrganization('acme');
      await fresh.store.createProject({ id: 'proj_1', orgId: 'acme', name: 'chat', createdAt: 0, monthlyTokenBudget: null });
    };

    it('puts, replaces (keeping createdAt), lists by model and removes settings', async () => {
      const { store } = fresh;
      await project();
      await store.shadows.put(setting());
      await store.shadows.put(
        setting({ model: 'provider-b:mistral-small', labelRule: { pointer: '/label' }, textPointer: '/messages/0/content' }),
      );
      await store.shadows.put(setting({ classifierId: 'svc-small-000000000002', createdAt: 20, updatedAt: 20 }));
      expect(await store.shadows.list('proj_1')).toEqual([
        setting({ classifierId: 'svc-small-000000000002', updatedAt: 20 }),
        setting({ model: 'provider-b:mistral-small', labelRule: { pointer: '/label' }, textPointer: '/messages/0/content' }),
      ]);
      expect(await store.shadows.remove('proj_1', 'provider-b:mistral-small')).toBe(true);
      expect(await store.shadows.remove('proj_1', 'provider-b:mistral-small')).toBe(false);
      expect((await store.shadows.list('proj_1')).map((s) => s.model)).toEqual(['provider-a:gpt-4o-mini']);
      expect(await store.shadows.list('proj_2')).toEqual([]);
    });

    it('stores results, lists them newest first, and sums them by bucket with the median classifier time', async () => {
      const { store } = fresh;
      const ids: number[] = [];
      for (let i = 0; i < 6; i++) ids.push(await store.insertRequestLog(logRow(i)));
      const rows = [
        result(ids[0], 10 * kHour + 1, { classifierMs: 5 }),
        result(ids[1], 10 * kHour + 2, { classifierLabel: false, agreed: false, classifierMs: 1 }),
        result(ids[2], 11 * kHour, { chatLabel: null, agreed: null, classifierMs: 3 }),
        result(ids[3], 11 * kHour + 5, {
          classifierLabel: null,
          agreed: null,
          classifierMs: null,
          error: "The model 'svc-small-000000000001' does not exist",
        }),
        result(ids[4], 12 * kHour, { model: 'provider-b:other', chatLabel: ['a', 'b'], classifierLabel: ['b', 'a'], classifierMs: 9 }),
      ];
      const stored: number[] = [];
      for (const row of rows) stored.push(await store.shadows.insertResult(row));
      const listed = await store.shadows.listResults('proj_1', { limit: 2 });
      expect(listed).toEqual([
        { ...rows[4], id: stored[4] },
        { ...rows[3], id: stored[3] },
      ]);
      expect((await store.shadows.listResults('proj_1', { limit: 9, before: stored[2] })).map((r) => r.id)).toEqual([stored[1], stored[0]]);

      expect(await store.shadows.stats('proj_1', { since: 0, bucketMs: kHour })).toEqual({
        calls: 5,
        compared: 3,
        agreed: 2,
        errors: 1,
        // Answered: 1, 3, 5, 9 -> the lower middle.
        classifierP50Ms: 3,
        savedTokensIn: 28,
        savedTokensOut: 4,
        savedChatMs: 160,
        classifierMs: 18,
        buckets: [
          { start: 10 * kHour, calls: 2, compared: 2, agreed: 1 },
          { start: 11 * kHour, calls: 2, compared: 0, agreed: 0 },
          { start: 12 * kHour, calls: 1, compared: 1, agreed: 1 },
        ],
      });
      const oneModel = await store.shadows.stats('proj_1', {
        since: 10 * kHour + 2,
        bucketMs: 24 * kHour,
        model: 'provider-a:gpt-4o-mini',
      });
      expect([oneModel.calls, oneModel.agreed, oneModel.classifierP50Ms, oneModel.buckets]).toEqual([
        3,
        0,
        1,
        [{ start: 0, calls: 3, compared: 1, agreed: 0 }],
      ]);
      const none = await store.shadows.stats('proj_2', { since: 0, bucketMs: kHour });
      expect([none.calls, none.classifierP50Ms, none.buckets]).toEqual([0, null, []]);
    });

    it('prunes results with their request-log rows, and refuses a result whose row is gone', async () => {
      const { store } = fresh;
      const old = await store.insertRequestLog(logRow(1));
      const kept = await store.insertRequestLog(logRow(5_000));
      await store.shadows.insertResult(result(old, 1));
      const keptResult = await store.shadows.insertResult(result(kept, 5_000));
      expect(await store.pruneRequestLog('proj_1', { olderThan: 1_000, keepNewest: 10, limit: 100 })).toBe(1);
      expect((await store.shadows.listResults('proj_1', { limit: 10 })).map((r) => r.id)).toEqual([keptResult]);
      await expect(store.shadows.insertResult(result(old, 2))).rejects.toThrow();
    });
  });
}
