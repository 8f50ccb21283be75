import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { CachedArtifactHub } from '../../src/artifacts/cached-hub.js';
import { DirectoryArtifacts } from '../../src/artifacts/directory.js';
import { modelDir } from './contract.js';

const temp = (prefix: string) => mkdtemp(join(tmpdir(), prefix));

describe('CachedArtifactHub', () => {
  it('publishes into the store, fetches a model another replica published, evicts the least recently used beyond the cap', async () => {
    const store = new DirectoryArtifacts(await temp('svc-shared-'));
    const one = new CachedArtifactHub(store, await temp('svc-cache-1-'));
    const two = new CachedArtifactHub(store, await temp('svc-cache-2-'), { maxBytes: 250 });

    await one.publish('acme/svc-small-000000000001', (dir) => writeFile(join(dir, 'head.json'), 'a'.repeat(100)));
    await store.put('acme/svc-small-000000000002', await modelDir({ 'head.json': 'b'.repeat(100) }));
    await store.put('acme/svc-small-000000000003', await modelDir({ 'onnx/model.onnx': 'c'.repeat(100) }));
    expect(await store.list('acme/svc-small-000000000001')).toEqual([{ name: 'head.json', size: 100 }]);

    // Replica two has none of them yet: each is fetched on first use, concurrent loads share one download.
    const [dir, again] = await Promise.all([two.resolve('acme/svc-small-000000000001'), two.resolve('acme/svc-small-000000000001')]);
    expect(again).toBe(dir);
    expect(await readFile(join(dir, 'head.json'), 'utf8')).toBe('a'.repeat(100));
    await two.resolve('acme/svc-small-000000000002');
    await two.resolve('acme/svc-small-000000000001'); // now the most recent
    expect(two.cached()).toEqual(['acme/svc-small-000000000002', 'acme/svc-small-000000000001']);
    expect(await readFile(await two.file('acme/svc-small-000000000003', 'onnx/model.onnx'), 'utf8')).toBe('c'.repeat(100));
    // 300 bytes > 250: the least recently used model left the disk, the store keeps it.
    expect(two.cached()).toEqual(['acme/svc-small-000000000001', 'acme/svc-small-000000000003']);
    expect(existsSync(two.pathOf('acme/svc-small-000000000002'))).toBe(false);
    expect(await two.files('acme/svc-small-000000000002')).toEqual(['head.json']);

    expect(await two.remove('acme/svc-small-000000000001')).toBe(true);
    await expect(one.files('acme/svc-small-000000000001')).rejects.toThrow("model 'acme/svc-small-000000000001' is not in the hub");
    await expect(two.resolve('acme/svc-small-000000000009')).rejects.toThrow("model 'acme/svc-small-000000000009' is not in the hub");
    expect(() => new CachedArtifactHub(store, dir, { maxBytes: 0 })).toThrow('options.maxBytes must be a positive integer');
  });

  it('counts the models an earlier process left in the cache against the cap, and evicts them first', async () => {
    const store = new DirectoryArtifacts(await temp('svc-shared-'));
    const cache = await temp('svc-cache-');
    for (const n of [1, 2]) await store.put(`acme/svc-small-00000000000${n}`, await modelDir({ 'head.json': 'x'.repeat(100) }));
    const before = new CachedArtifactHub(store, cache);
    await before.resolve('acme/svc-small-000000000001');
    // A restart: the new process finds model 1 on the disk and uses it without fetching (the store no longer has it
    // here, so a fetch would fail), then makes room for model 2.
    await store.delete('acme/svc-small-000000000001');
    const after = new CachedArtifactHub(store, cache, { maxBytes: 150 });
    expect(await after.resolve('acme/svc-small-000000000001')).toBe(before.pathOf('acme/svc-small-000000000001'));
    expect(after.cached()).toEqual(['acme/svc-small-000000000001']);
    await after.resolve('acme/svc-small-000000000002');
    expect(after.cached()).toEqual(['acme/svc-small-000000000002']);
    expect(existsSync(after.pathOf('acme/svc-small-000000000001'))).toBe(false);
  });
});
