// The pool's fine-tune task with a LoRA adapter: run in a real worker, it writes nothing and hands
// back the adapter's tensors (PEFT names) and the examples embedded by base + adapter.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';

import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool, runTask } from '../../src/pool/pool.js';
import type { FinetuneResult, FinetuneStepMessage, FinetuneTask } from '../../src/pool/tasks.js';
import { kDefaultAdapter } from '../../src/native/trainer.js';
import { kAdapterRecipe } from '../../src/train/pairs.js';
import type { ExampleTargets } from '../../src/train/pairs.js';

const { trainSet } = split(uciSentences('imdb'), 1);
const texts = trainSet.map((row) => row.text);
const targets: ExampleTargets = { kind: 'classes', classes: Int32Array.from(trainSet, (row) => (row.label ? 1 : 0)), count: 2 };

afterAll(() => closePool());

async function run(
  task: Pick<FinetuneTask, 'adapter' | 'lr'>,
  outDir: string,
): Promise<{ result: FinetuneResult; steps: FinetuneStepMessage[] }> {
  const { port1, port2 } = new MessageChannel();
  const steps: FinetuneStepMessage[] = [];
  port1.on('message', (m: FinetuneStepMessage) => steps.push(m));
  const result = await runTask<FinetuneResult>(
    {
      kind: 'finetune',
      baseModel: 'svc-small',
      texts,
      targets,
      // 2 rounds: 80 pairs, 5 steps of 16.
      iterations: 2,
      seed: 42,
      threads: 1,
      outDir,
      progress: port2,
      stop: new Int32Array(new SharedArrayBuffer(4)),
      ...task,
    },
    undefined,
    [port2],
  );
  port1.close();
  return { result, steps };
}

describe('the finetune pool task with an adapter', () => {
  it('returns the adapter tensors and embeddings, writes no encoder, and follows the learning rate it is given', async () => {
    const outDir = await mkdtemp(join(tmpdir(), 'svc-pool-finetune-'));
    try {
      const { result, steps } = await run({ adapter: kDefaultAdapter }, outDir);
      expect(steps.map((s) => s.done)).toEqual([1, 2, 3, 4, 5]);
      expect(await readdir(outDir)).toEqual([]);
      expect(result.encoderFile).toBeNull();
      expect([result.pairs, result.steps]).toEqual([80, 5]);
      expect(result.embeddings.length).toBe(texts.length * 384);
      const adapter = result.adapter!;
      expect(adapter.length).toBe(6 * 6 * 2);
      expect(adapter[0]!.name).toBe('base_model.model.encoder.layer.0.attention.self.query.lora_A.weight');
      expect(adapter[0]!.shape).toEqual([8, 384]);
      expect(adapter[0]!.data).toBeInstanceOf(Float32Array);
      expect(adapter[0]!.data.length).toBe(8 * 384);
      // B moved away from zero in 5 steps at the adapter recipe's rate.
      expect(adapter[1]!.data.some((v) => v !== 0)).toBe(true);
      // Each row is a unit vector (normalized embeddings).
      const norm = Math.hypot(...result.embeddings.subarray(0, 384));
      expect(norm).toBeCloseTo(1, 5);

      // The default rate is the adapter recipe's: the same run at that rate given explicitly is bitwise the same.
      const explicit = await run({ adapter: kDefaultAdapter, lr: kAdapterRecipe.lr }, outDir);
      expect(explicit.result.adapter).toEqual(adapter);
      const slower = await run({ adapter: kDefaultAdapter, lr: 2e-5 }, outDir);
      expect(slower.result.adapter![1]!.data).not.toEqual(adapter[1]!.data);
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  });
});
