// The store contract's base model part: what replicas on one store registered under each name, recorded by the first
// to bring it, agreed with by a replica bringing the same files (from any folder), and refused, with nothing recorded,
// to one bringing other files. Replicas recording at once are ordered. sqlite.test.ts and postgres.test.ts run it.
import { describe, expect, it } from 'vitest';

import type { RecordedBaseModel } from '../../src/store/base-model-ledger.js';
import { freshStore, type StoreBackend } from './contract-fixtures.js';

const fingerprint = (digit: string) => `sha256:${digit.repeat(64)}`;
const e5 = (digit: string, dir = '/models/e5'): RecordedBaseModel => ({ name: 'e5-small', fingerprint: fingerprint(digit), dir });
const bge: RecordedBaseModel = { name: 'bge-small', fingerprint: fingerprint('b'), dir: '/models/bge' };

export function baseModelsContract(name: string, backend: StoreBackend): void {
  describe(`${name}: registered base models`, () => {
    const fresh = freshStore(backend);

    it('records the first replica, agrees with the same files from another folder, refuses other files whole', async () => {
      expect(await fresh.store.baseModels.list()).toEqual([]);
      expect(await fresh.store.baseModels.record([e5('1')], 1000)).toEqual([]);
      const other = await backend.open(fresh.location);
      try {
        // The same files where another replica keeps its copy: agreed, the first folder stays recorded.
        expect(await other.baseModels.record([e5('1', '/mnt/replica-2/e5'), bge], 2000)).toEqual([]);
        expect(await fresh.store.baseModels.list()).toEqual([bge, e5('1')]);
        // Other files under a recorded name: refused, and the new name beside it is not recorded either.
        const gte = { name: 'gte-small', fingerprint: fingerprint('c'), dir: '/models/gte' };
        expect(await other.baseModels.record([gte, e5('2', '/models/e5-tampered')], 3000)).toEqual([
          { name: 'e5-small', recorded: e5('1'), registered: e5('2', '/models/e5-tampered') },
        ]);
        expect(await other.baseModels.list()).toEqual([bge, e5('1')]);
      } finally {
        await other.close();
      }
    });

    it('orders replicas that bring other files under one new name at once: one is recorded, the other refused', async () => {
      const replicas = await Promise.all([1, 2, 3].map(() => backend.open(fresh.location)));
      try {
        const answers = await Promise.all(replicas.map((replica, i) => replica.baseModels.record([e5(String(i + 1))], 1000 + i)));
        const recorded = await fresh.store.baseModels.list();
        expect(recorded).toHaveLength(1);
        expect(answers.filter((refused) => refused.length === 0)).toHaveLength(1);
        for (const refused of answers.filter((r) => r.length > 0)) expect(refused.map((r) => r.recorded)).toEqual(recorded);
      } finally {
        await Promise.all(replicas.map((replica) => replica.close()));
      }
    });
  });
}
