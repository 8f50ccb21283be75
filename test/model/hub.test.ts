import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { DirectoryHub, isHubId, parseHubId } from '../../src/model/hub.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-hub-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const id = 'acme/svc-small-1a2b3c4d5e6f';

async function publishFiles(hub: DirectoryHub, files: Record<string, string>): Promise<void> {
  await hub.publish(id, async (dir) => {
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  });
}

describe('hub ids', () => {
  it('accepts <org>/<model_id> only', () => {
    expect(parseHubId(id)).toEqual({ org: 'acme', modelId: 'svc-small-1a2b3c4d5e6f' });
    for (const bad of ['acme', 'acme/', '/m', 'a/b/c', '../m', 'acme/..', 'acme/.hidden', 'ac me/m']) {
      expect(isHubId(bad)).toBe(false);
    }
    expect(() => parseHubId('acme/..')).toThrow("'acme/..' is not a hub id (expected <org>/<model_id>)");
  });
});

describe('DirectoryHub', () => {
  it('publishes into <root>/<org>/<model_id>, lists and serves files, removes', async () => {
    const hub = new DirectoryHub(root);
    await publishFiles(hub, { 'manifest.json': '{}', 'head.json': '[]' });
    expect(await hub.resolve(id)).toBe(join(root, 'acme', 'svc-small-1a2b3c4d5e6f'));
    expect((await hub.list(id)).map((f) => f.name)).toEqual(['head.json', 'manifest.json']);
    expect(await readFile(await hub.file(id, 'head.json'), 'utf8')).toBe('[]');
    // Nothing of the staging folder is left beside the model.
    expect(await readdir(join(root, 'acme'))).toEqual(['svc-small-1a2b3c4d5e6f']);
    expect(await hub.remove(id)).toBe(true);
    expect(await hub.remove(id)).toBe(false);
    await expect(hub.resolve(id)).rejects.toMatchObject({
      code: 'not_found',
      message: "model 'acme/svc-small-1a2b3c4d5e6f' is not in the hub",
    });
  });

  it('replaces a model in one step and keeps the old one when writing fails', async () => {
    const hub = new DirectoryHub(root);
    await publishFiles(hub, { 'manifest.json': 'one' });
    await publishFiles(hub, { 'manifest.json': 'two' });
    expect(await readFile(join(root, 'acme', 'svc-small-1a2b3c4d5e6f', 'manifest.json'), 'utf8')).toBe('two');
    await expect(
      hub.publish(id, async () => {
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(await readFile(join(root, 'acme', 'svc-small-1a2b3c4d5e6f', 'manifest.json'), 'utf8')).toBe('two');
    expect(await readdir(join(root, 'acme'))).toEqual(['svc-small-1a2b3c4d5e6f']);
  });

  it('serves no file outside the model directory', async () => {
    const hub = new DirectoryHub(root);
    await publishFiles(hub, { 'manifest.json': '{}' });
    await writeFile(join(root, 'acme', 'secret.txt'), 'no');
    for (const path of ['../secret.txt', '/etc/passwd', 'missing.json', '', '.']) {
      await expect(hub.file(id, path)).rejects.toMatchObject({
        code: 'not_found',
        message: `model '${id}' has no file '${path}'`,
      });
    }
  });

  it('checks its root', () => {
    expect(() => new DirectoryHub('')).toThrow(new TypeError('root must be a non-empty string'));
  });
});
