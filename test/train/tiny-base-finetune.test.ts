// Fine-tuning the whole encoder of a registered base that keeps fewer tokens than svc-small (48 here): the fine-tuned
// copy reads as many tokens as its base, so a long text is cut there as on the base itself, and a saved copy loads
// back and predicts the same. BERT with CLS pooling and no Normalize, and XLM-RoBERTa with the Unigram tokenizer.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Classifier, registerBaseModel } from '../../src/index.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { imdbExamples } from '../_support/examples.js';
import { kFamilyCases, kShape, writeFamilyBase } from '../model/_families.js';

const examples = imdbExamples(0, 10, 'positive review');
// Far more than 48 tokens; the longer one only adds words after the tokens kept.
const kLong = 'The film opens slowly but the acting is superb and the story builds to a moving end. '.repeat(6);
const kLonger = `${kLong} Nothing after this point is read by a model that keeps its first tokens only.`;
let root: string;

beforeAll(async () => {
  configurePool({ precision: 'fp32' });
  root = await mkdtemp(join(tmpdir(), 'svc-tiny-finetune-'));
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

const cases = kFamilyCases.filter((c) => c.options.family !== 'mpnet');

describe.each(cases.map((c) => [c.name, c] as const))('full fine-tuning on %s', (name, c) => {
  it(`reads ${kShape.maxSeqLength} tokens of a long text, saved and loaded back alike`, async () => {
    const folder = join(root, name);
    writeFamilyBase(folder, c);
    registerBaseModel(name, folder);
    const classifier = await train(
      { model: name, task_type: 'binary-classification', examples, finetune: { method: 'full' }, num_iterations: 1 },
      { threads: 2, seed: 5 },
    );
    expect(classifier.manifest).toMatchObject({ body: 'finetuned', base_model: name });
    const texts = ['A short and happy review.', kLong, kLonger];
    const predictions = await classifier.predict(texts);
    expect(predictions.map((p) => p.truncated)).toEqual([false, true, true]);
    expect(predictions[2]!.probability).toBe(predictions[1]!.probability);
    const dir = join(root, `${name}-model`);
    await classifier.save(dir, { transformersJs: false });
    const loaded = await Classifier.load(dir);
    expect((await loaded.predict(texts)).map((p) => p.probability)).toEqual(predictions.map((p) => p.probability));
    loaded.dispose();
    classifier.dispose();
  });
});
