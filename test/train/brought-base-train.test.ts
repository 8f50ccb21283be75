// Training on a registered base model folder (a copy of svc-small's files with the sentence-transformers files a clone
// of all-MiniLM-L6-v2 has): the same files give the same classifier as svc-small, frozen and with an adapter; the
// model's id and manifest carry the base's name and fingerprint, and a folder changed since training is refused.
import { execFile } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { Classifier, classify, registerBaseModel } from '../../src/index.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { writeBroughtFolder } from '../_support/brought-folder.js';
import { imdbExamples } from '../_support/examples.js';

const examples = imdbExamples(0, 10, 'positive review');
const heldOut = uciSentences('imdb')
  .slice(200, 208)
  .map((r) => r.text);
let root: string;
let folder: string;

beforeAll(async () => {
  // fp32 so that the brought copy and svc-small round alike whatever kernel level runs.
  configurePool({ precision: 'fp32' });
  root = await mkdtemp(join(tmpdir(), 'svc-brought-train-'));
  folder = writeBroughtFolder(join(root, 'all-minilm-l6-v2'));
  registerBaseModel('minilm-brought', folder);
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

async function probabilities(classifier: Classifier): Promise<number[]> {
  return (await classifier.predict(heldOut)).map((p) => p.probability);
}

describe('train() on a registered base model', () => {
  it('trains a frozen classifier that predicts as the same files under svc-small do', async () => {
    const brought = await train({ model: 'minilm-brought', task_type: 'binary-classification', examples, finetune: false }, { threads: 2 });
    const builtin = await train({ model: 'svc-small', task_type: 'binary-classification', examples, finetune: false }, { threads: 2 });
    expect(brought.id).toMatch(/^minilm-brought-[0-9a-f]{12}$/);
    expect(brought.manifest).toMatchObject({ base_model: 'minilm-brought', body: 'frozen' });
    expect(brought.manifest.base_model_fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(builtin.manifest.base_model_fingerprint).toBeUndefined();
    const ours = await probabilities(brought);
    const theirs = await probabilities(builtin);
    ours.forEach((p, i) => expect(p).toBeCloseTo(theirs[i]!, 6));
    brought.dispose();
    builtin.dispose();
  });

  it('trains an adapter on it, saves it and loads it back', async () => {
    const request = {
      model: 'minilm-brought',
      task_type: 'binary-classification',
      examples,
      finetune: { method: 'adapter', rank: 4 },
      num_iterations: 2,
    } as const;
    const classifier = await train(request, { threads: 2, seed: 7 });
    expect(classifier.body).toBe('adapter');
    const dir = join(root, 'adapter-model');
    await classifier.save(dir);
    const loaded = await Classifier.load(dir);
    expect(loaded.manifest.base_model).toBe('minilm-brought');
    expect(await probabilities(loaded)).toEqual(await probabilities(classifier));
    loaded.dispose();
    classifier.dispose();
  });

  it('fine-tunes a whole copy of it, saves it and loads it back', async () => {
    const request = {
      model: 'minilm-brought',
      task_type: 'binary-classification',
      examples,
      finetune: { method: 'full' },
      num_iterations: 1,
    } as const;
    const classifier = await train(request, { threads: 2, seed: 7 });
    expect(classifier.manifest).toMatchObject({ body: 'finetuned', base_model: 'minilm-brought' });
    const dir = join(root, 'finetuned-model');
    await classifier.save(dir, { transformersJs: false });
    const loaded = await Classifier.load(dir);
    expect(loaded.manifest.base_model_fingerprint).toBe(classifier.manifest.base_model_fingerprint);
    expect(await probabilities(loaded)).toEqual(await probabilities(classifier));
    loaded.dispose();
    classifier.dispose();
  }, 120_000);

  it("puts the folder's query prompt before every text it trains and predicts on", async () => {
    registerBaseModel('e5-style', writeBroughtFolder(join(root, 'e5-style'), { prompts: { query: 'query: ', passage: 'passage: ' } }));
    const prompted = await train({ model: 'e5-style', task_type: 'binary-classification', examples, finetune: false }, { threads: 2 });
    const byHand = await train(
      {
        model: 'svc-small',
        task_type: 'binary-classification',
        examples: examples.map((example) => ({ ...example, text: `query: ${example.text}` })),
        finetune: false,
      },
      { threads: 2 },
    );
    const ours = await probabilities(prompted);
    const theirs = (await byHand.predict(heldOut.map((text) => `query: ${text}`))).map((p) => p.probability);
    ours.forEach((p, i) => expect(p).toBeCloseTo(theirs[i]!, 6));
    prompted.dispose();
    byHand.dispose();
  });

  it('classifies by examples on it as on the same files under svc-small, prompt included', async () => {
    const onBrought = await classify(heldOut, examples, { model: 'e5-style' });
    const onBuiltin = await classify(
      heldOut.map((text) => `query: ${text}`),
      examples.map((example) => ({ ...example, text: `query: ${example.text}` })),
      { model: 'svc-small' },
    );
    const theirs = onBuiltin.predictions as { probability: number }[];
    (onBrought.predictions as { probability: number }[]).forEach((p, i) => expect(p.probability).toBeCloseTo(theirs[i]!.probability, 6));
  });

  it('trains frozen and adapter classifiers on a CLS-pooled folder, pooling as the folder says', async () => {
    registerBaseModel('minilm-cls', writeBroughtFolder(join(root, 'minilm-cls'), { pooling: 'cls' }));
    const cls = await train({ model: 'minilm-cls', task_type: 'binary-classification', examples, finetune: false }, { threads: 2 });
    const mean = await train({ model: 'minilm-brought', task_type: 'binary-classification', examples, finetune: false }, { threads: 2 });
    // The same weights pooled differently: other embeddings, so other probabilities.
    const meanProbabilities = await probabilities(mean);
    const clsProbabilities = await probabilities(cls);
    const gaps = clsProbabilities.map((p, i) => Math.abs(p - meanProbabilities[i]!));
    expect(Math.max(...gaps)).toBeGreaterThan(0.01);
    expect(cls.manifest.base_model).toBe('minilm-cls');
    // Fine-tuning pools as the folder does too: the adapter moves the CLS embeddings, so other probabilities again.
    const adapted = await train(
      { model: 'minilm-cls', task_type: 'binary-classification', examples, finetune: { method: 'adapter', rank: 4 }, num_iterations: 2 },
      { threads: 2 },
    );
    expect(adapted.manifest).toMatchObject({ base_model: 'minilm-cls', body: 'adapter' });
    const adaptedGaps = (await probabilities(adapted)).map((p, i) => Math.abs(p - clsProbabilities[i]!));
    expect(Math.max(...adaptedGaps)).toBeGreaterThan(1e-3);
    for (const classifier of [cls, mean, adapted]) classifier.dispose();
  });

  it('refuses a model once the folder it was trained on has changed', async () => {
    const classifier = await train(
      { model: 'minilm-brought', task_type: 'binary-classification', examples, finetune: false },
      { threads: 2 },
    );
    const dir = join(root, 'frozen-model');
    await classifier.save(dir);
    classifier.dispose();
    const loadInNewProcess = async () => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'test/_support/load-on-base-child.ts', 'minilm-brought', folder, dir],
        { timeout: 60_000 },
      );
      return JSON.parse(stdout) as { loaded?: true; error?: string; message?: string };
    };
    expect(await loadInNewProcess()).toEqual({ loaded: true });

    // One weight byte changed, past the header: the file's size and tensor layout stay as they were.
    const weights = await open(join(folder, 'model.safetensors'), 'r+');
    const byte = Buffer.alloc(1);
    await weights.read(byte, 0, 1, 1_000_000);
    byte[0] ^= 0x01;
    await weights.write(byte, 0, 1, 1_000_000);
    await weights.close();

    const refused = await loadInNewProcess();
    expect(refused.error).toBe('invalid_request');
    expect(refused.message).toContain(
      `base model 'minilm-brought' was trained on files with fingerprint ${classifier.manifest.base_model_fingerprint}`,
    );
    expect(refused.message).toMatch(/now has sha256:[0-9a-f]{64}: the folder changed since training/);
  }, 120_000);
});
