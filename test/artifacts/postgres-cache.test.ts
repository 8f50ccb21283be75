// PostgresHub's local cache: two replicas on one database, each with its own cache folder.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { PostgresHub } from '../../src/artifacts/postgres-hub.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
const temp = (prefix: string) => mkdtemp(join(tmpdir(), prefix));
const head = (bytes: string) => (dir: string) => writeFile(join(dir, 'head.json'), bytes);

describe('PostgresHub cache', () => {
  it('publishes into the database, fetches a model another replica published, evicts the least recently used beyond the cap', async () => {
    const url = await server.cluster.createDatabase();
    const one = await PostgresHub.open(url, { cacheDir: await temp('svc-cache-1-') });
    const two = await PostgresHub.open(url, { cacheDir: await temp('svc-cache-2-'), maxCacheBytes: 250 });
    const three = await PostgresHub.open(url, { cacheDir: await temp('svc-cache-3-') });
    try {
      await one.publish('acme/svc-small-000000000001', head('a'.repeat(100)));
      await three.publish('acme/svc-small-000000000002', head('b'.repeat(100)));
      await three.publish('acme/svc-small-000000000003', (dir) => writeFile(join(dir, 'model.onnx'), 'c'.repeat(100)));
      expect(await two.list('acme/svc-small-000000000001')).toEqual([{ name: 'head.json', size: 100 }]);
      expect(one.cached()).toEqual(['acme/svc-small-000000000001']);

      // Replica two has none of them yet: each is fetched on first use, concurrent loads share one download.
      const [dir, again] = await Promise.all([two.resolve('acme/svc-small-000000000001'), two.resolve('acme/svc-small-000000000001')]);
      expect(again).toBe(dir);
      expect(await readFile(join(dir, 'head.json'), 'utf8')).toBe('a'.repeat(100));
      await two.resolve('acme/svc-small-000000000002');
      await two.resolve('acme/svc-small-000000000001'); // now the most recent
      expect(two.cached()).toEqual(['acme/svc-small-000000000002', 'acme/svc-small-000000000001']);
      expect(await readFile(join(await two.resolve('acme/svc-small-000000000003'), 'model.onnx'), 'utf8')).toBe('c'.repeat(100));
      // 300 bytes > 250: the least recently used model left the disk, the database keeps it.
      expect(two.cached()).toEqual(['acme/svc-small-000000000001', 'acme/svc-small-000000000003']);
      expect(existsSync(two.pathOf('acme/svc-small-000000000002'))).toBe(false);
      expect((await two.list('acme/svc-small-000000000002')).map((f) => f.name)).toEqual(['head.json']);

      expect(await two.remove('acme/svc-small-000000000001')).toBe(true);
      expect(existsSync(two.pathOf('acme/svc-small-000000000001'))).toBe(false);
      await expect(one.list('acme/svc-small-000000000001')).rejects.toThrow("model 'acme/svc-small-000000000001' is not in the hub");
      await expect(two.resolve('acme/svc-small-000000000009')).rejects.toThrow("model 'acme/svc-small-000000000009' is not in the hub");
      await expect(PostgresHub.open(url, { cacheDir: dir, maxCacheBytes: 0 })).rejects.toThrow(
        'options.maxCacheBytes must be a positive integer',
      );
    } finally {
      await Promise.all([one.close(), two.close(), three.close()]);
    }
  });

  it('counts the models an earlier process left in the cache against the cap, and evicts them first', async () => {
    const url = await server.cluster.createDatabase();
    const cacheDir = await temp('svc-cache-');
    const before = await PostgresHub.open(url, { cacheDir });
    for (const n of [1, 2]) await before.publish(`acme/svc-small-00000000000${n}`, head('x'.repeat(100)));
    await before.close();
    // Only model 1 stays on the disk, as if the process had fetched only it.
    const other = await PostgresHub.open(url, { cacheDir: await temp('svc-cache-other-') });
    const survivor = await PostgresHub.open(url, { cacheDir });
    try {
      await survivor.remove('acme/svc-small-000000000002');
      await other.publish('acme/svc-small-000000000002', head('x'.repeat(100)));
      // A restart: the new process finds model 1 on the disk and uses it without fetching (the database no longer has
      // it here, so a fetch would fail), then makes room for model 2.
      await other.remove('acme/svc-small-000000000001');
      const after = await PostgresHub.open(url, { cacheDir, maxCacheBytes: 150 });
      try {
        expect(await after.resolve('acme/svc-small-000000000001')).toBe(after.pathOf('acme/svc-small-000000000001'));
        expect(after.cached()).toEqual(['acme/svc-small-000000000001']);
        await after.resolve('acme/svc-small-000000000002');
        expect(after.cached()).toEqual(['acme/svc-small-000000000002']);
        expect(existsSync(after.pathOf('acme/svc-small-000000000001'))).toBe(false);
      } finally {
        await after.close();
      }
    } finally {
      await Promise.all([other.close(), survivor.close()]);
    }
  });
});
