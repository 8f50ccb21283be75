// Publishing is durable (every file and directory flushed before the rename that publishes them, the rename flushed
// after) and a restart removes what a killed server left half done. fsync calls are observed on the real file
// handles: each one is recorded with the path its descriptor points at (/proc/self/fd).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import { afterAll, expect, it, vi } from 'vitest';

import { writeManifestAndHead } from '../../src/model/directory.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { startServer } from '../../src/server/app.js';
import { kFinetuneFolderPrefix } from '../../src/train/finetune-stage.js';

const root = mkdtempSync(join(tmpdir(), 'svc-durable-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const manifest = {
  format: 1,
  task: 'binary-classification',
  base_model: 'svc-small',
  label_text: 'positive',
  head_file: 'head.json',
} as never;

it('flushes every file and folder of a model before the rename that publishes it, and the rename after', async () => {
  const hub = new DirectoryHub(join(root, 'hub'));
  const final = join(hub.root, 'acme', 'svc-small-1a2b3c4d5e6f');
  const probe = await open(join(root, 'probe'), 'w');
  const prototype = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
  await probe.close();
  const synced: { path: string; published: boolean }[] = [];
  const original = prototype.sync;
  const spy = vi.spyOn(prototype, 'sync').mockImplementation(function (this: { fd: number }) {
    synced.push({ path: readlinkSync(`/proc/self/fd/${this.fd}`), published: existsSync(final) });
    return original.call(this);
  });
  try {
    await hub.publish('acme/svc-small-1a2b3c4d5e6f', async (dir) => {
      mkdirSync(join(dir, 'onnx'));
      writeFileSync(join(dir, 'onnx', 'model.onnx'), 'graph');
      await writeManifestAndHead(dir, manifest, { weights: new Float64Array([0.5, -0.25]), bias: 0.125 });
    });
  } finally {
    spy.mockRestore();
  }
  const staging = synced.find((s) => s.path.includes('.staging-'))!.path.replace(/(\.staging-[^/]+).*$/, '$1');
  const beforeRename = synced.filter((s) => !s.published && s.path.startsWith(staging)).map((s) => relative(staging, s.path) || '.');
  // The manifest and head were flushed as they were written (temporary name) and again with the whole tree.
  expect([...new Set(beforeRename)].sort()).toEqual(
    [
      '.',
      'head.json',
      'head.json.' + process.pid + '.tmp',
      'manifest.json',
      'manifest.json.' + process.pid + '.tmp',
      'onnx',
      'onnx/model.onnx',
    ].sort(),
  );
  const afterRename = synced.filter((s) => s.published);
  expect(afterRename.map((s) => s.path)).toEqual([join(hub.root, 'acme')]);
  expect((await hub.list('acme/svc-small-1a2b3c4d5e6f')).map((f) => f.name)).toEqual(['head.json', 'manifest.json', 'onnx/model.onnx']);
});

it('removes leftover staging, replaced-model and dead fine-tuning folders at start-up, and nothing else', async () => {
  const dataDir = join(root, 'data');
  const org = join(dataDir, 'hub', 'acme');
  for (const name of ['svc-small-000000000001', '.staging-svc-small-000000000002-0a1b2c3d', '.old-svc-small-000000000001-4e5f6a7b']) {
    mkdirSync(join(org, name), { recursive: true });
    writeFileSync(join(org, name, 'manifest.json'), '{}');
  }
  const tmp = join(root, 'tmp');
  mkdirSync(tmp);
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  const folders = [
    `${kFinetuneFolderPrefix}${dead}-aaaaaa`,
    `${kFinetuneFolderPrefix}${process.pid}-bbbbbb`,
    'svc-classify-other',
    'unrelated',
  ];
  for (const name of folders) mkdirSync(join(tmp, name));
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    const server = await startServer({ dataDir, port: 0, proxy: false });
    await server.close();
  } finally {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
  }
  expect(readdirSync(org)).toEqual(['svc-small-000000000001']);
  expect(readdirSync(tmp).sort()).toEqual(folders.slice(1).sort());
});
