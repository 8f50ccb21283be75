// The service's model runtime on the real library: a fine-tuning job trains with its worker's
// engine threads only (predictions keep the other worker's cores), where the library's own train()
// takes the whole pool's (test/train/finetune.test.ts). The manifest records the count used.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import type { Manifest } from '../../src/contract/manifest.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { LibraryRuntime } from '../../src/service/library-runtime.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));

let root: string;
let scratchRoot: string;
let runtime: LibraryRuntime;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-runtime-'));
  // The fine-tuned encoder waits under os.tmpdir() until it is saved: a folder of this file's own.
  scratchRoot = await mkdtemp(join(tmpdir(), 'svc-runtime-scratch-'));
  process.env.TMPDIR = scratchRoot;
  configurePool({ workers: 2, engineThreads: 1 });
  runtime = new LibraryRuntime({ hub: join(root, 'hub') });
});
afterAll(async () => {
  await runtime.close();
  await closePool();
  await rm(root, { recursive: true, force: true });
  await rm(scratchRoot, { recursive: true, force: true });
});

describe('LibraryRuntime training', () => {
  it("fine-tunes a job with one worker's engine threads, not the whole pool's", async () => {
    const steps: number[] = [];
    // 1 pair round: 40 pairs, 3 steps of 16.
    await runtime.train(
      {
        orgId: 'org-a',
        modelId: 'svc-small-0123456789ab',
        baseModel: 'svc-small',
        taskType: 'binary-classification',
        examples,
        options: { finetune: true, num_iterations: 1 },
      },
      { onProgress: (p) => p.stage === 'finetune' && steps.push(p.done) },
    );
    expect(steps).toEqual([0, 1, 2, 3]);
    const manifest = JSON.parse(
      await readFile(join(runtime.modelDir('org-a', 'svc-small-0123456789ab'), 'manifest.json'), 'utf8'),
    ) as Manifest;
    expect(runtime.trainingSlots).toBe(1);
    expect(manifest.training.finetune).toMatchObject({ pairs: 40, steps: 3, threads: 1 });
  });
});

describe('LibraryRuntime publishing behind a fence', () => {
  const job = (modelId: string) => ({
    orgId: 'org-f',
    modelId,
    baseModel: 'svc-small',
    taskType: 'binary-classification' as const,
    examples,
    options: { finetune: false },
  });

  it('publishes nothing when the fence refuses, and leaves the model it had as it was', async () => {
    const modelId = 'svc-small-0000000000fe';
    let fenced = 0;
    await runtime.train(job(modelId), { fence: async () => void (fenced += 1) });
    expect(fenced).toBe(1);
    const dir = runtime.modelDir('org-f', modelId);
    const before = await readFile(join(dir, 'manifest.json'), 'utf8');
    // The job was claimed again elsewhere: this run's model must not replace the published one, nor leave staging behind.
    const refusal = new Error('another replica took the job over');
    await expect(runtime.train(job(modelId), { fence: async () => Promise.reject(refusal) })).rejects.toBe(refusal);
    expect(await readFile(join(dir, 'manifest.json'), 'utf8')).toBe(before);
    expect((await readdir(join(dir, '..'))).sort()).toEqual([modelId]);
    await expect(runtime.train(job('svc-small-0000000000ff'), { fence: async () => Promise.reject(refusal) })).rejects.toBe(refusal);
    expect((await readdir(join(dir, '..'))).sort()).toEqual([modelId]);
  });
});

describe('LibraryRuntime options', () => {
  it('names the hub option when a caller gives none, or the old hubRoot', () => {
    const plain = {} as unknown as ConstructorParameters<typeof LibraryRuntime>[0];
    expect(() => new LibraryRuntime(plain)).toThrow('options.hub must be a folder path, a DirectoryHub or a PostgresHub');
    const old = { hubRoot: join(root, 'hub') } as unknown as ConstructorParameters<typeof LibraryRuntime>[0];
    expect(() => new LibraryRuntime(old)).toThrow('(`hubRoot` is now `hub`)');
    expect(() => new LibraryRuntime({ hub: 42 as unknown as string })).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});
