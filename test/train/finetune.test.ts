// Fine-tuning through the library: train() with the encoder fine-tuned on SetFit pairs, the
// model directory that holds its own encoder, and reloading it. Few pair rounds keep it short;
// the default recipe's speed and accuracy are measured by `npm run bench -- train|accuracy`.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { SvcError } from '../../src/errors.js';
import { resolveBaseModel } from '../../src/model/base-models.js';
import { SafetensorsFile } from '../../src/model/safetensors.js';
import { loadedWeightSets } from '../../src/native/encoder.js';
import { closePool, poolOptions, runTask } from '../../src/pool/pool.js';
import { Classifier } from '../../src/predict/classifier.js';
import { train } from '../../src/train/train.js';
import type { TrainProgress } from '../../src/train/train.js';

const { trainSet, testSet } = split(uciSentences('imdb'), 1);
// 2 rounds: 80 pairs, 5 steps of 16. A full fine-tune, named since the default method is the adapter
// (test/train/adapter-train.test.ts).
const request = {
  model: 'svc-small',
  task_type: 'binary-classification' as const,
  finetune: { method: 'full' as const },
  num_iterations: 2,
  examples: trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' })),
};
const texts = testSet.slice(0, 40).map((row) => row.text);

let root: string;
let scratchRoot: string;
let classifier: Classifier;
const events: TrainProgress[] = [];
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-finetune-'));
  // Training keeps a just-trained encoder under os.tmpdir(): give this file a folder of its own
  // (other test files train in parallel processes).
  scratchRoot = await mkdtemp(join(tmpdir(), 'svc-finetune-scratch-'));
  process.env.TMPDIR = scratchRoot;
  classifier = await train(request, { onProgress: (event) => events.push({ ...event }) });
});
afterAll(async () => {
  classifier.dispose();
  await closePool();
  await rm(root, { recursive: true, force: true });
  await rm(scratchRoot, { recursive: true, force: true });
});

describe('train with a fine-tuned encoder', () => {
  it('reports each step with its loss, then the head', () => {
    const steps = events.filter((e) => e.stage === 'finetune');
    expect(steps.map((e) => [e.done, e.total])).toEqual([0, 1, 2, 3, 4, 5].map((done) => [done, 5]));
    for (const e of steps.slice(1)) expect(e.loss).toBeGreaterThan(0);
    expect(steps[0].loss).toBeUndefined();
    // Then the base encoder embeds the examples for the accuracy estimate (split over the workers
    // as a frozen model's are), and the head is fitted.
    const chunk = Math.ceil(20 / poolOptions().workers);
    const embedded = Array.from({ length: Math.ceil(20 / chunk) }, (_, k) => Math.min(20, (k + 1) * chunk));
    expect(events.slice(steps.length)).toEqual([
      { stage: 'embed', done: 0, total: 20 },
      ...embedded.map((done) => ({ stage: 'embed', done, total: 20 })),
      { stage: 'fit', done: 0, total: 1 },
      { stage: 'fit', done: 1, total: 1 },
    ]);
  });

  it("estimates its accuracy on the base encoder: the frozen model's estimate on the same examples", async () => {
    // The fine-tuned encoder was trained on every fold's held-out examples; the base encoder never saw them.
    const { num_iterations, ...frozenRequest } = request;
    expect(num_iterations).toBe(2);
    const frozen = await train({ ...frozenRequest, finetune: false });
    const estimate = { cv_accuracy: 0.85, cv_macro_f1: 0.849624060150376, cv_folds: 5 };
    expect(frozen.metrics).toEqual({ train_accuracy: 1, train_seconds: frozen.metrics.train_seconds, ...estimate, cv_encoder: 'trained' });
    expect(classifier.metrics).toEqual({
      train_accuracy: 1,
      train_seconds: classifier.metrics.train_seconds,
      ...estimate,
      cv_encoder: 'base',
    });
    // Saved and loaded, the manifest keeps which encoder the estimate was measured on.
    const dir = join(root, 'estimate');
    await classifier.save(dir);
    const loaded = await Classifier.load(dir);
    expect(loaded.metrics).toEqual(classifier.metrics);
    loaded.dispose();
    frozen.dispose();
  });

  it('records how it was trained in the manifest', () => {
    const { manifest } = classifier;
    expect(classifier.body).toBe('finetuned');
    expect(manifest.body).toBe('finetuned');
    expect(manifest.encoder_file).toBe('model.fp16.safetensors');
    expect(manifest.training.method).toBe('setfit');
    expect(manifest.training.finetune).toMatchObject({
      num_iterations: 2,
      pairs: 80,
      batch_pairs: 16,
      steps: 5,
      learning_rate: 2e-5,
      weight_decay: 0.01,
      warmup_ratio: 0.1,
      dropout: 0.1,
      max_grad_norm: 1,
      seed: 42,
      // No prediction waits beside a library call: every thread of the pool (2 on 2 cores).
      threads: poolOptions().workers * poolOptions().engineThreads,
    });
    expect(manifest.training.finetune!.final_loss).toBeGreaterThan(0);
    expect(manifest.metrics.train_accuracy).toBe(1);
  });

  it('saves its own encoder, which differs from the base, and loads back to the same predictions', async () => {
    const dir = join(root, 'saved');
    await classifier.save(dir);
    expect((await readdir(dir)).sort()).toEqual([
      'config.json',
      'example_embeddings.safetensors',
      'examples.json',
      'head.json',
      'manifest.json',
      'model.fp16.safetensors',
      'onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const tuned = SafetensorsFile.open(join(dir, 'model.fp16.safetensors'));
    const base = SafetensorsFile.open(resolveBaseModel('svc-small').weightsFile);
    const name = 'encoder.layer.0.attention.self.query.weight';
    const prefix = base.has(name) ? '' : 'bert.';
    const [a, b] = [tuned.float32(prefix + name), base.float32(prefix + name)];
    expect(a.length).toBe(b.length);
    const changed = a.filter((x, i) => x !== b[i]).length;
    expect(changed / a.length).toBeGreaterThan(0.5);

    const loaded = await Classifier.load(dir);
    expect(loaded.body).toBe('finetuned');
    expect(await loaded.predict(texts)).toEqual(await classifier.predict(texts));
    loaded.dispose();
  });

  it('predicts with the fine-tuned encoder, not the base one', async () => {
    const ours = await classifier.predict(texts);
    const base = await runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts });
    const { weights, bias } = classifier.head;
    const onBase = texts.map((_, i) => {
      let z = bias;
      for (let j = 0; j < 384; j++) z += weights[j] * base[i * 384 + j];
      return 1 / (1 + Math.exp(-z));
    });
    const differences = ours.map((p, i) => Math.abs(p.probability - onBase[i]));
    expect(Math.max(...differences)).toBeGreaterThan(1e-3);
  });

  it('gives the same bits for the same seed, and another classifier for another seed', async () => {
    const again = await train(request);
    expect(again.head.weights).toEqual(classifier.head.weights);
    expect(again.head.bias).toBe(classifier.head.bias);
    expect(await again.predict(texts)).toEqual(await classifier.predict(texts));
    const other = await train(request, { seed: 7 });
    expect(other.head.weights).not.toEqual(classifier.head.weights);
    // Saved over the same directory, the other model's encoder replaces the loaded one.
    const dir = join(root, 'overwritten');
    await classifier.save(dir);
    const first = await Classifier.load(dir);
    expect(await first.predict(texts)).toEqual(await classifier.predict(texts));
    await other.save(dir);
    const second = await Classifier.load(dir);
    expect(await second.predict(texts)).toEqual(await other.predict(texts));
    first.dispose();
    second.dispose();
    again.dispose();
    other.dispose();
  });

  it('keeps the encoder in a temporary directory until the classifier is disposed', async () => {
    const before = await scratchDirs();
    const trained = await train(request);
    const added = (await scratchDirs()).filter((d) => !before.includes(d));
    expect(added).toHaveLength(1);
    const scratch = join(scratchRoot, added[0]!);
    expect((await readdir(scratch)).sort()).toEqual(['config.json', 'model.fp16.safetensors']);
    // Predicting loads its encoder in a worker; disposing unloads it from every worker (before
    // each one's next task).
    const loaded = loadedWeightSets();
    await trained.predict(texts);
    expect(loadedWeightSets()).toBe(loaded + 1);
    trained.dispose();
    for (let i = 0; i < 10 && loadedWeightSets() > loaded; i++) {
      await Promise.all([runTask({ kind: 'ping' }), runTask({ kind: 'ping' })]);
    }
    expect(loadedWeightSets()).toBe(loaded);
    expect(existsSync(scratch)).toBe(false);
    await expect(trained.predict('still there?')).rejects.toThrow(SvcError);
  });

  it('stops between steps when aborted, removing its files, and the pool works on', async () => {
    const before = await scratchDirs();
    const controller = new AbortController();
    const seen: TrainProgress[] = [];
    const training = train(request, {
      signal: controller.signal,
      onProgress: (event) => {
        seen.push(event);
        if (event.stage === 'finetune' && event.done === 1) controller.abort();
      },
    });
    await expect(training).rejects.toEqual(new SvcError('aborted', 'training was aborted'));
    // At most the step running when the signal came is finished after it.
    expect(Math.max(...seen.map((e) => e.done))).toBeLessThanOrEqual(2);
    expect(await scratchDirs()).toEqual(before);
    expect(await classifier.predict(texts.slice(0, 2))).toHaveLength(2);
  });

  it('validates finetune and num_iterations', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ finetune: 'yes' }, "finetune must be a boolean or { method: 'adapter' | 'full', rank? }", 'finetune'],
      [{ num_iterations: 0 }, 'num_iterations must be at least 1', 'num_iterations'],
      [{ num_iterations: 2.5 }, 'num_iterations must be an integer', 'num_iterations'],
      [{ num_iterations: 101 }, 'num_iterations must be at most 100', 'num_iterations'],
      [{ finetune: false, num_iterations: 3 }, 'num_iterations is only used when finetune is true', 'num_iterations'],
    ];
    for (const [fields, message, param] of cases) {
      await expect(train({ ...request, ...fields } as never)).rejects.toMatchObject({ code: 'invalid_request', message, param });
    }
  });
});

/** The scratch directories of training runs in this file's temporary folder. */
async function scratchDirs(): Promise<string[]> {
  return (await readdir(scratchRoot)).filter((name) => name.startsWith('svc-classify-')).sort();
}
