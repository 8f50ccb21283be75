import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import {
  closePool,
  configurePool,
  kDefaultAdapterCacheBytes,
  poolOptions,
  runTask,
  trainingWorkers,
  workerEntry,
} from '../../src/pool/pool.js';
import { finetuneThreads } from '../../src/train/finetune-stage.js';
import type { PingResult } from '../../src/pool/tasks.js';

afterAll(async () => {
  await closePool();
});

describe('pool', () => {
  it('runs the TypeScript worker through tsx when running from sources', () => {
    const entry = workerEntry();
    expect(entry.filename.endsWith('/src/worker/worker.ts')).toBe(true);
    expect(entry.execArgv).toEqual(['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href]);
  });

  it('defaults to two workers sharing the cores', () => {
    const cores = availableParallelism();
    const workers = Math.min(2, cores);
    expect(poolOptions()).toEqual({
      workers,
      engineThreads: Math.floor(cores / workers),
      precision: 'auto',
      adapterCacheBytes: kDefaultAdapterCacheBytes,
    });
    expect(poolOptions().workers * poolOptions().engineThreads).toBeLessThanOrEqual(cores);
  });

  it('validates its options', () => {
    expect(() => configurePool({ workers: 0 })).toThrow(new RangeError('options.workers must be a positive integer'));
    expect(() => configurePool({ engineThreads: 1.5 })).toThrow(new TypeError('options.engineThreads must be a positive integer'));
    const cores = availableParallelism();
    expect(() => configurePool({ workers: cores, engineThreads: 2 })).toThrow(
      new RangeError(`options.workers x options.engineThreads must be at most the ${cores} available cores (got ${cores} x 2)`),
    );
    expect(() => configurePool({ precision: 'int4' as 'int8' })).toThrow(
      new TypeError("options.precision must be 'fp32', 'int8', 'bf16' or 'auto'"),
    );
    expect(poolOptions()).toEqual({
      workers: Math.min(2, cores),
      engineThreads: Math.floor(cores / Math.min(2, cores)),
      precision: 'auto',
      adapterCacheBytes: kDefaultAdapterCacheBytes,
    });
  });

  it('runs tasks off the main thread with the configured engine threads', async () => {
    configurePool({ workers: 2, engineThreads: 1 });
    const results = await Promise.all([runTask<PingResult>({ kind: 'ping' }), runTask<PingResult>({ kind: 'ping' })]);
    for (const result of results) {
      expect(result.threadId).toBeGreaterThan(0);
      expect(result.engineThreads).toBe(1);
      // Predicting encoders have every core of the pool: 2 workers x 1 engine thread.
      expect(result.predictThreads).toBe(2);
      // 'auto' by default: the worker runs what the kernel choice picked on this CPU.
      expect(result.kernels).not.toBeNull();
      expect(result.precision).toBe(result.kernels!.precision);
    }
    expect(() => configurePool({ workers: 1 })).toThrow('configurePool must be called before the pool starts (call closePool first)');
    await closePool();
    expect(configurePool({ workers: 1 })).toEqual({
      workers: 1,
      engineThreads: availableParallelism(),
      precision: 'auto',
      adapterCacheBytes: kDefaultAdapterCacheBytes,
    });
    expect(configurePool({ engineThreads: 1, precision: 'int8' })).toEqual({
      workers: Math.min(2, availableParallelism()),
      engineThreads: 1,
      precision: 'int8',
      adapterCacheBytes: kDefaultAdapterCacheBytes,
    });
  });

  it("reports what precision 'auto' runs in each worker, and the measurement behind it", async () => {
    await closePool();
    configurePool({ workers: 2, engineThreads: 1, precision: 'auto' });
    const results = await Promise.all([runTask<PingResult>({ kind: 'ping' }), runTask<PingResult>({ kind: 'ping' })]);
    for (const result of results) {
      expect(result.kernels).not.toBeNull();
      expect(result.precision).toBe(result.kernels!.precision);
      expect(result.kernels!.threads).toBe(2);
      if (result.kernels!.source === 'forced') {
        // SVC_KERNEL (a run emulating a bf16 CPU): nothing measured.
        expect(result.kernels!.rates).toEqual([]);
      } else {
        expect(result.kernels!.rates[0]).toMatchObject({ kernel: 'fp32', relError: 0 });
        expect(['measured', 'cache']).toContain(result.kernels!.source);
      }
    }
    // Both workers hold the same rates: one measured, the other read its file (or both read an older one).
    expect(results[1]!.kernels!.rates).toEqual(results[0]!.kernels!.rates);
    await closePool();
  });

  it('keeps a worker, and its cores, for predictions: training gets the other workers, each on its own share', () => {
    configurePool({ workers: 2, engineThreads: 1 });
    expect([trainingWorkers(), finetuneThreads()]).toEqual([1, 1]);
    // One worker has nothing to keep back: training and predictions take turns on it.
    configurePool({ workers: 1, engineThreads: 1 });
    expect([trainingWorkers(), finetuneThreads()]).toEqual([1, 1]);
  });
});
