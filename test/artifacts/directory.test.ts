import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { DirectoryHub } from '../../src/model/hub.js';
import { hubContract, modelDir, put } from './contract.js';

hubContract('DirectoryHub', {
  open: async (chunkBytes) => new DirectoryHub(await mkdtemp(join(tmpdir(), 'svc-hub-')), { chunkBytes }),
});

describe('DirectoryHub on its folder', () => {
  it('keeps the hub layout, <root>/<org>/<model_id>/<file>, with nothing left beside the models', async () => {
    const root = await mkdtemp(join(tmpdir(), 'svc-hub-'));
    const hub = new DirectoryHub(root);
    await put(hub, 'acme/svc-small-0123456789ab', await modelDir({ 'onnx/model.onnx': 'onnx', 'head.json': '{}' }));
    expect(await readdir(join(root, 'acme'))).toEqual(['svc-small-0123456789ab']);
    expect(await readFile(join(root, 'acme', 'svc-small-0123456789ab', 'onnx', 'model.onnx'), 'utf8')).toBe('onnx');
    expect(() => new DirectoryHub(root, { chunkBytes: 0 })).toThrow('options.chunkBytes must be a positive integer');
  });
});
