import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { DirectoryHub } from '../../src/model/hub.js';
import { closePool, runTask } from '../../src/pool/pool.js';
import type { PingResult } from '../../src/pool/tasks.js';
import { batchStats } from '../../src/predict/batcher.js';
import { Classifier } from '../../src/predict/classifier.js';
import { train } from '../../src/train/train.js';

const imdb = split(uciSentences('imdb'), 1);
const yelp = split(uciSentences('yelp'), 2);
const requestOf = (rows: typeof imdb.trainSet, labelText: string) => ({
  model: 'svc-small',
  task_type: 'binary-classification' as const,
  finetune: false,
  examples: rows.map((row) => ({ text: row.text, label: row.label, label_text: labelText })),
});
const texts = imdb.testSet.slice(0, 60).map((row) => row.text);

let root: string;
let classifier: Classifier;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-classifier-'));
  classifier = await train(requestOf(imdb.trainSet, 'positive'));
});
afterAll(async () => {
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe('Classifier.predict', () => {
  it('gives one prediction for a string and an array in input order for an array', async () => {
    const batch = await classifier.predict(texts.slice(0, 3));
    expect(batch).toHaveLength(3);
    const single = await classifier.predict(texts[1]);
    expect(single).toEqual({ label: single.probability >= 0.5, probability: single.probability, truncated: false });
    expect(single.probability).toBeCloseTo(batch[1].probability, 6);
    for (const p of batch) expect(p.label).toBe(p.probability >= 0.5);
    expect(await classifier.predict([])).toEqual([]);
  });

  it('says which predictions read only the start of a text longer than the base model reads', async () => {
    // 254 words and [CLS] [SEP] fill svc-small's 256 tokens exactly; one word more is cut.
    const [fits, cut, short] = await classifier.predict(['good '.repeat(254), 'good '.repeat(255), texts[0]]);
    expect([fits.truncated, cut.truncated, short.truncated]).toEqual([false, true, false]);
    // The cut text is scored on the same 256 tokens as the one that fits.
    expect(cut.probability).toBeCloseTo(fits.probability, 6);
  });

  it('flags texts the vocabulary barely knows with their share of unknown word pieces', async () => {
    // svc-small's word pieces: '😀😀😀 🎉🎉' is [UNK] [UNK]; 'Great product 😀' is great product [UNK]; the Chinese
    // text is 11 [UNK] of 14 pieces; German and English are all known pieces.
    const texts = [
      '😀😀😀 🎉🎉',
      'Great product 😀',
      '为什么这个月我被收了两次费?',
      'Warum wurde mir zweimal etwas berechnet?',
      'Loved it',
    ];
    const predictions = await classifier.predict(texts);
    expect(predictions.map((p) => p.unknown_tokens)).toEqual([1, 1 / 3, 11 / 14, undefined, undefined]);
    expect(Object.keys(predictions[4])).toEqual(['label', 'probability', 'truncated']);
    // The other ways of reading a text say it too: windows (their mean) and the cut of 'start'.
    const chunked = await classifier.predict(texts.slice(0, 3), { truncate: 'chunks' });
    expect(chunked.map((p) => p.unknown_tokens)).toEqual([1, 1 / 3, 11 / 14]);
    const fromStart = await classifier.predict(texts.slice(0, 2), { truncate: 'start' });
    expect(fromStart.map((p) => p.unknown_tokens)).toEqual([1, 1 / 3]);
  });

  it('merges concurrent calls into few engine batches, across classifiers of one base model', async () => {
    const other = await train(requestOf(yelp.trainSet, 'good service'));
    const alone = await classifier.predict(texts);
    const otherAlone = await other.predict(texts);
    const before = batchStats();
    const calls = texts.map((text, i) => (i % 2 === 0 ? classifier : other).predict(text));
    const results = await Promise.all(calls);
    const after = batchStats();
    expect(after.requests - before.requests).toBe(60);
    expect(after.texts - before.texts).toBe(60);
    expect(after.batches - before.batches).toBeLessThanOrEqual(3);
    results.forEach((p, i) => expect(p.probability).toBeCloseTo((i % 2 === 0 ? alone : otherAlone)[i].probability, 6));
  });

  it('sends waiting calls as one batch on every core, and what comes meanwhile as the next one', async () => {
    const before = batchStats();
    // Eight calls of four texts arrive together while every worker is free: one batch, not one per worker
    // (a predicting engine has every core of the pool).
    const first = Array.from({ length: 8 }, (_, i) => classifier.predict(texts.slice(i * 4, i * 4 + 4)));
    while (batchStats().batches === before.batches) await new Promise((resolve) => setTimeout(resolve, 1));
    const sent = batchStats();
    expect([sent.batches - before.batches, sent.texts - before.texts]).toEqual([1, 32]);
    // Calls that come while it runs gather, and go out together when it ends.
    const second = Array.from({ length: 7 }, (_, i) => classifier.predict(texts.slice(32 + i * 4, 36 + i * 4)));
    await Promise.all([...first, ...second]);
    const after = batchStats();
    expect([after.batches - before.batches, after.texts - before.texts]).toEqual([2, 60]);
  });

  it('checks its input', async () => {
    await expect(classifier.predict(5 as never)).rejects.toThrow(new TypeError('texts must be a string or an array of strings'));
    await expect(classifier.predict(['a', null] as never)).rejects.toThrow(new TypeError('texts[1] must be a string'));
  });

  it('refuses empty and whitespace-only texts, naming the index', async () => {
    await expect(classifier.predict('')).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'text must not be empty',
      param: 'text',
    });
    await expect(classifier.predict(['Loved it', 'Fine', ' \n\t'])).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'texts[2] must not be empty (it holds only whitespace)',
      param: 'texts[2]',
    });
  });

  it('stops waiting when aborted', async () => {
    await expect(classifier.predict('x', { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'aborted' });
  });
});

describe('save and load', () => {
  it('round-trips to identical probabilities', async () => {
    const dir = join(root, 'positive');
    await classifier.save(dir);
    expect(await readdir(dir)).toEqual(expect.arrayContaining(['head.json', 'manifest.json']));
    const loaded = await Classifier.load(dir);
    expect(loaded.manifest).toEqual(classifier.manifest);
    expect(loaded.head.weights).toEqual(classifier.head.weights);
    expect(await loaded.predict(texts)).toEqual(await classifier.predict(texts));
  });

  it('publishes to a hub while training and loads by hub id', async () => {
    const hub = new DirectoryHub(join(root, 'hub'));
    const id = 'acme/svc-small-1a2b3c4d5e6f';
    const stages: string[] = [];
    const trained = await train(requestOf(imdb.trainSet, 'positive'), {
      hub,
      id,
      onProgress: (event) => stages.push(`${event.stage} ${event.done}/${event.total}`),
    });
    expect(stages.slice(-2)).toEqual(['save 0/1', 'save 1/1']);
    expect(trained.id).toBe('svc-small-1a2b3c4d5e6f');
    const loaded = await Classifier.load(id, { hub });
    expect(loaded.id).toBe('svc-small-1a2b3c4d5e6f');
    expect(await loaded.predict(texts)).toEqual(await trained.predict(texts));
    await expect(Classifier.load('acme/svc-small-000000000000', { hub })).rejects.toMatchObject({
      code: 'not_found',
      message: "model 'acme/svc-small-000000000000' is not in the hub",
    });
  });

  it('loads a format-1 directory and predicts with its head', async () => {
    const old = await Classifier.load(join(dirname(fileURLToPath(import.meta.url)), '..', 'model', 'fixtures', 'format-1'));
    const some = texts.slice(0, 5);
    const probabilities = (await old.predict(some)).map((p) => p.probability);
    // The embed task embeds in fp32 (as training does); predictions run in the pool's default precision, 'auto'.
    const embeddings = await runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts: some });
    const { precision } = await runTask<PingResult>({ kind: 'ping' });
    const { weights, bias } = old.head;
    some.forEach((_, i) => {
      const z = weights.reduce((sum, w, j) => sum + w * embeddings[i * 384 + j], bias);
      const expected = 1 / (1 + Math.exp(-z));
      // Where 'auto' runs fp32 the prediction is the head on fp32 embeddings to 6 decimals; where it runs bf16, it is
      // within bf16's bound of it (probabilities within 1e-3).
      if (precision === 'fp32') expect(probabilities[i]).toBeCloseTo(expected, 6);
      else expect(Math.abs(probabilities[i] - expected)).toBeLessThan(1e-3);
    });
  });

  it('refuses to work once disposed', async () => {
    const loaded = await Classifier.load(join(root, 'positive'));
    loaded.dispose();
    await expect(loaded.predict('x')).rejects.toMatchObject({
      code: 'invalid_request',
      message: `classifier ${loaded.id} was disposed`,
    });
  });
});
