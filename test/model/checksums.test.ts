// Model files' checksums through the library: a saved model's manifest records the SHA-256 of each file written
// with it, a file that still parses but holds a changed value is refused at load, naming the file, and a directory
// saved before checksums existed loads as before.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Classifier } from '../../src/index.js';
import { readModelDir } from '../../src/model/directory.js';
import { encodeSafetensors, SafetensorsFile } from '../../src/model/safetensors.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { writeAdapterModel } from '../_support/adapter.js';

const kTexts = ['A wonderful, moving film.', 'The battery died after a week.'];
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-checksums-'));
  // One worker: the adapter a load checks is the one the next predict finds in that worker's cache. fp32: the
  // default precision's adapter path ended this machine's pool worker (SIGSEGV) on HEAD too, an engine matter.
  configurePool({ workers: 1, engineThreads: 1, precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  rmSync(root, { recursive: true, force: true });
});

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
const altered = (file: string) =>
  `${file} is not the file the model was saved with: its SHA-256 differs from the one in manifest.json (the file was damaged or changed since)`;

/** Rewrites the adapter as a valid fp16 safetensors file with one value of one tensor changed. */
function changeOneAdapterValue(dir: string): void {
  const file = join(dir, 'adapter_model.safetensors');
  const stored = SafetensorsFile.open(file);
  const tensors = stored.names.map((name, i) => {
    const data = stored.float32(name);
    if (i === 3) data[5] += 0.25;
    return { name, shape: stored.info(name).shape, data, dtype: 'F16' as const };
  });
  writeFileSync(file, encodeSafetensors(tensors, { format: 'pt' }));
}

describe("a model directory's checksums", () => {
  it('records the SHA-256 of every file written with the manifest', async () => {
    const dir = join(root, 'recorded');
    await writeAdapterModel(dir);
    const names = ['adapter_config.json', 'adapter_model.safetensors', 'head.json'];
    expect(manifestOf(dir).files).toEqual(Object.fromEntries(names.map((name) => [name, sha256(join(dir, name))])));
    expect((await readModelDir(dir)).checksums).toEqual(manifestOf(dir).files);
  });

  it('refuses at load an adapter with one value changed (a valid file), naming the file', async () => {
    const dir = join(root, 'adapter-changed');
    await writeAdapterModel(dir);
    changeOneAdapterValue(dir);
    await expect(Classifier.load(dir)).rejects.toMatchObject({
      code: 'invalid_request',
      message: altered(join(dir, 'adapter_model.safetensors')),
    });
  });

  it('refuses at load a head with one weight changed, naming the file', async () => {
    const dir = join(root, 'head-changed');
    await writeAdapterModel(dir);
    const headFile = join(dir, 'head.json');
    const head = JSON.parse(readFileSync(headFile, 'utf8')) as { weights: number[] };
    head.weights[7] += 0.5;
    writeFileSync(headFile, `${JSON.stringify(head)}\n`);
    await expect(Classifier.load(dir)).rejects.toMatchObject({ code: 'invalid_request', message: altered(headFile) });
  });

  it('loads a directory saved before checksums existed (no `files`), predicting as with them', async () => {
    const dir = join(root, 'old');
    await writeAdapterModel(dir);
    const classifier = await Classifier.load(dir);
    const withChecksums = await classifier.predict(kTexts);
    classifier.dispose();
    const { files, ...old } = manifestOf(dir);
    expect(Object.keys(files as object)).toHaveLength(3);
    writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify(old, null, 2)}\n`);
    expect((await readModelDir(dir)).checksums).toBeNull();
    const again = await Classifier.load(dir);
    expect(await again.predict(kTexts)).toEqual(withChecksums);
    again.dispose();
  });

  it('refuses a manifest whose checksums are malformed, naming the entry', async () => {
    const dir = join(root, 'malformed');
    await writeAdapterModel(dir);
    const manifest = manifestOf(dir);
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, files: { 'head.json': 'ABC' } }));
    await expect(readModelDir(dir)).rejects.toMatchObject({
      code: 'invalid_request',
      message: `${dir}/manifest.json: files['head.json'] is not a SHA-256 in lowercase hex`,
    });
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, files: { '../head.json': '0'.repeat(64) } }));
    await expect(readModelDir(dir)).rejects.toMatchObject({
      code: 'invalid_request',
      message: `${dir}/manifest.json: files names '../head.json', which is not a path inside the directory`,
    });
  });
});
