// Classifiers trained on registered base models, published to the hub and loaded from the hub copy in transformers.js'
// text-classification pipeline: a seeded tiny BERT with CLS pooling and no Normalize module (a bert. checkpoint, no
// prompt), a seeded tiny XLM-RoBERTa with the SentencePiece Unigram fixture tokenizer, mean pooling, Normalize and
// e5's `query: ` prompt, which our predict puts before every text and a transformers.js user puts there themselves, and
// a seeded tiny MPNet (its relative position bias in the graph, mean pooling and Normalize).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { env, pipeline } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { registerBaseModel } from '../../src/model/base-models.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { writeTransformersJsModelDir } from '../../src/model/onnx/index.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { imdbExamples } from '../_support/examples.js';
import { kLevelSlowdown } from '../_support/level.js';
import { kFamilyCases, kShape, writeFamilyBase } from './_families.js';

const examples = imdbExamples(0, 12, 'positive');
// Held-out sentences and one of eight of them joined, past the 48 tokens the tiny bases keep: truncation is compared too.
const texts = uciSentences('imdb')
  .slice(300, 340)
  .map((row) => row.text);
texts.push(texts.slice(0, 8).join(' '));

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-transformers-families-'));
  // fp32, not the default 'auto': the exported ONNX model matching our predictions is an fp32 statement.
  configurePool({ precision: 'fp32' });
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe.each(kFamilyCases.map((c) => [c.name, c] as const))('a classifier on the registered base %s', (name, c) => {
  it(
    'loads from the hub in transformers.js with our probabilities within 1e-3',
    async () => {
      const folder = join(root, 'bases', name);
      const tokenizerFile = writeFamilyBase(folder, c);
      const base = registerBaseModel(name, folder);
      expect(base.prompt).toBe(c.prompt);
      const hubRoot = join(root, 'hub');
      const hub = new DirectoryHub(hubRoot);
      const classifier = await train(
        { model: name, task_type: 'binary-classification', examples, finetune: false },
        { hub, id: c.id, threads: 2 },
      );
      try {
        const config = JSON.parse(await readFile(await hub.file(c.id, 'config.json'), 'utf8'));
        expect(config).toMatchObject({ model_type: c.modelType, architectures: [c.architecture], id2label: { 0: 'false', 1: 'positive' } });
        const tokenizerConfig = JSON.parse(await readFile(await hub.file(c.id, 'tokenizer_config.json'), 'utf8'));
        expect(tokenizerConfig).toMatchObject({ tokenizer_class: c.tokenizerClass, model_max_length: kShape.maxSeqLength });
        // The base folder's own tokenizer, truncated where ours truncates.
        const tokenizer = JSON.parse(await readFile(await hub.file(c.id, 'tokenizer.json'), 'utf8'));
        const own = JSON.parse(await readFile(tokenizerFile, 'utf8'));
        expect(tokenizer.model).toEqual(own.model);
        expect(tokenizer.model.type).toBe(c.tokenizerModel);
        expect(tokenizer.truncation.max_length).toBe(kShape.maxSeqLength);

        const ours = (await classifier.predict(texts)).map((p) => p.probability);
        // Both sides of 0.5 (a head that says one thing to every text would compare nothing).
        expect(Math.min(...ours)).toBeLessThan(0.5);
        expect(Math.max(...ours)).toBeGreaterThan(0.5);
        // The hub's layout is the Hugging Face one: <root>/<org>/<model_id>.
        env.allowRemoteModels = false;
        env.allowLocalModels = true;
        env.localModelPath = hubRoot;
        const classify = await pipeline('text-classification', c.id, { dtype: 'fp32' });
        // The pipeline puts no prompt before a text: the base's, as our predict does.
        const outputs = (await classify(
          texts.map((text) => base.prompt + text),
          { top_k: null },
        )) as { label: string; score: number }[][];
        await classify.dispose();
        const theirs = outputs.map((labels) => labels.find((entry) => entry.label === 'positive')?.score ?? NaN);
        const largest = Math.max(...ours.map((p, i) => Math.abs(theirs[i]! - p)));
        expect(largest).toBeLessThan(1e-3);
      } finally {
        classifier.dispose();
      }
    },
    // Training, the ONNX build and transformers.js' load: seconds each on two busy cores.
    120_000 * kLevelSlowdown,
  );
});

describe("a base folder's own tokenizer_config.json", () => {
  it('goes into the exported folder, truncated at the base max_seq_length', async () => {
    const c = kFamilyCases[0]!;
    const folder = join(root, 'bases', 'own-tokenizer-config');
    writeFamilyBase(folder, c);
    // A clone of a Hugging Face repository has one; its model_max_length is the encoder's, not sentence-transformers'.
    const own = { tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 512, never_split: ['[LINK]'] };
    await writeFile(join(folder, 'tokenizer_config.json'), JSON.stringify(own));
    const base = registerBaseModel('own-tokenizer-config', folder);
    const out = join(root, 'exported', 'own-tokenizer-config');
    await writeTransformersJsModelDir(out, { baseModel: base, task: 'feature-extraction' });
    expect(JSON.parse(await readFile(join(out, 'tokenizer_config.json'), 'utf8'))).toEqual({
      ...own,
      model_max_length: kShape.maxSeqLength,
    });
    expect(JSON.parse(await readFile(join(out, 'config.json'), 'utf8'))).toMatchObject({
      model_type: 'bert',
      architectures: ['BertModel'],
    });
  });
});
