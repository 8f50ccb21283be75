// A small ModelRuntime for tests of the service's own logic (queueing, ownership,
// HTTP mapping): a word-count naive Bayes that really trains on the examples and
// really writes its files to a hub directory, without the encoder's start-up cost.
// The end-to-end tests use the library runtime instead.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { ModelRuntime, RuntimePrediction, RuntimeTrainJob } from '../../src/service/runtime.js';
import type { TrainProgress } from '../../src/train/train.js';

const words = (text: string) => text.toLowerCase().match(/[a-z']+/g) ?? [];

interface Head {
  counts: [Record<string, number>, Record<string, number>];
  totals: [number, number];
  priors: [number, number];
}

export class WordCountRuntime implements ModelRuntime {
  readonly trainingSlots: number;
  readonly trained: string[] = [];
  /** When set, training waits for it: lets a test look at a model while it is `training`. */
  gate: Promise<void> | null = null;

  constructor(readonly hubRoot: string, slots = 1) {
    this.trainingSlots = slots;
  }

  modelDir(orgId: string, modelId: string): string {
    return join(this.hubRoot, orgId, modelId);
  }

  async train(job: RuntimeTrainJob, hooks: { onProgress?: (p: TrainProgress) => void; signal?: AbortSignal }): Promise<void> {
    if (this.gate) {
      // Waits for the gate, or stops at once when aborted (as the library's train() does).
      const signal = hooks.signal;
      await Promise.race([
        this.gate,
        new Promise<void>((_resolve, reject) => {
          if (signal?.aborted) reject(signal.reason);
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      ]);
    }
    hooks.signal?.throwIfAborted();
    if (job.examples.some((e) => e.text === 'please fail')) throw new Error('the example asked training to fail');
    const head: Head = { counts: [{}, {}], totals: [0, 0], priors: [0, 0] };
    job.examples.forEach((example, i) => {
      const side = example.label ? 1 : 0;
      head.priors[side] += 1;
      for (const word of words(example.text)) {
        head.counts[side][word] = (head.counts[side][word] ?? 0) + 1;
        head.totals[side] += 1;
      }
      hooks.onProgress?.({ stage: 'embed', done: i + 1, total: job.examples.length });
    });
    const dir = this.modelDir(job.orgId, job.modelId);
    await mkdir(join(dir, 'onnx'), { recursive: true });
    await writeFile(join(dir, 'head.json'), JSON.stringify(head));
    await writeFile(join(dir, 'config.json'), JSON.stringify({ id2label: { 0: 'false', 1: job.examples[0].label_text } }));
    await writeFile(join(dir, 'onnx', 'model.onnx'), Buffer.from([1, 2, 3, 4]));
    this.trained.push(job.modelId);
  }

  async predict(orgId: string, modelId: string, texts: string[]): Promise<RuntimePrediction[]> {
    const head = JSON.parse(await readFile(join(this.modelDir(orgId, modelId), 'head.json'), 'utf8')) as Head;
    const vocabulary = new Set([...Object.keys(head.counts[0]), ...Object.keys(head.counts[1])]).size;
    return texts.map((text) => {
      let logOdds = Math.log(head.priors[1] / head.priors[0]);
      for (const word of words(text)) {
        const p1 = ((head.counts[1][word] ?? 0) + 1) / (head.totals[1] + vocabulary);
        const p0 = ((head.counts[0][word] ?? 0) + 1) / (head.totals[0] + vocabulary);
        logOdds += Math.log(p1 / p0);
      }
      const probability = 1 / (1 + Math.exp(-logOdds));
      return { label: probability >= 0.5, probability };
    });
  }

  async remove(orgId: string, modelId: string): Promise<void> {
    await rm(this.modelDir(orgId, modelId), { recursive: true, force: true });
  }

  async close(): Promise<void> {}
}
