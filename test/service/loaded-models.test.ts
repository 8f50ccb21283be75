// Which classifiers a service keeps loaded: a byte budget where each counts its weight file (an adapter model under a
// megabyte), least recently used unloaded first. A loaded adapter model keeps predicting from memory when its folder
// goes; an unloaded one loads again from the folder, so a deleted folder tells which were kept.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { closePool, configurePool } from '../../src/pool/pool.js';
import { LibraryRuntime, type LibraryRuntimeOptions } from '../../src/service/library-runtime.js';
import { writeAdapterModel } from '../_support/adapter.js';

const kOrg = 'org-loaded';
const kModels = 5;
const ids = Array.from({ length: kModels }, (_, m) => `svc-small-${m.toString(16).padStart(12, '0')}`);
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-loaded-models-'));
  configurePool({ workers: 1, engineThreads: 2 });
});
afterAll(async () => {
  await closePool();
  rmSync(root, { recursive: true, force: true });
});

/** Predicts each model once in order, deletes every folder, and says which still predict (were kept loaded). */
async function keptAfterRoundRobin(name: string, options: Omit<LibraryRuntimeOptions, 'hub'>): Promise<boolean[]> {
  const hubRoot = join(root, name);
  // Rank 4 on all six modules: 331,776 bytes of fp16 A and B, about 340 KB counted with the file's header and head.
  for (const [m, id] of ids.entries()) await writeAdapterModel(join(hubRoot, kOrg, id), { seed: 60 + m, rank: 4 });
  const runtime = new LibraryRuntime({ hub: hubRoot, closePool: false, ...options });
  try {
    for (const id of ids) expect(await runtime.predict(kOrg, id, ['A fine film.'])).toHaveLength(1);
    await sleep(50); // a loaded model's size is read off the predict's path
    rmSync(join(hubRoot, kOrg), { recursive: true, force: true });
    const kept: boolean[] = [];
    // Most recently used first: a load that fails is still a classifier counted while it loads, and would push out
    // a kept one checked after it.
    for (const id of [...ids].reverse()) {
      kept.unshift(
        await runtime.predict(kOrg, id, ['A fine film.']).then(
          () => true,
          (error: { code?: string }) => {
            expect(error.code).toBe('not_found');
            return false;
          },
        ),
      );
    }
    return kept;
  } finally {
    await runtime.close();
  }
}

describe('loaded classifiers', () => {
  it('are kept by their bytes: every adapter model of a small service stays loaded by default', async () => {
    expect(await keptAfterRoundRobin('default', {})).toEqual([true, true, true, true, true]);
  });

  it('are unloaded least recently used first once their weight files pass maxLoadedModelBytes', async () => {
    // Room for three of the five.
    expect(await keptAfterRoundRobin('bytes', { maxLoadedModelBytes: 1_100_000 })).toEqual([false, false, true, true, true]);
  });

  it('are at most maxCachedModels when it is given', async () => {
    expect(await keptAfterRoundRobin('count', { maxCachedModels: 2 })).toEqual([false, false, false, true, true]);
  });
});
