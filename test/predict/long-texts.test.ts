// Classifier.predict's truncate and explain on trained models: in memory after train(), and saved
// and loaded again (the examples and their embeddings kept in the model directory, read only when
// a call explains).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences, uciSites } from '../../fixtures/corpora.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { closePool } from '../../src/pool/pool.js';
import { batchStats } from '../../src/predict/batcher.js';
import { Classifier, type Prediction } from '../../src/predict/classifier.js';
import { kExampleEmbeddingsFile, kExamplesFile } from '../../src/predict/example-bank.js';
import { splitClasses } from '../../fixtures/draw.js';
import { train } from '../../src/train/train.js';
import { refusal } from '../_support/refusal.js';

const imdb = split(uciSentences('imdb'), 1);
const examples = imdb.trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
const texts = imdb.testSet.slice(0, 4).map((row) => row.text);
// 128 distinct short words of the corpus (about a token each), repeated: every 160-word window of it
// holds the same words in the same order, and fits the encoder.
const period = [...new Set(uciSentences('imdb').flatMap((row) => row.text.toLowerCase().match(/\b[a-z]{3,6}\b/g) ?? []))]
  .slice(0, 128)
  .join(' ');
// 416 words: windows of 160 at 0, 128 and 256, the last one ending with the text.
const periodic = Array(4).fill(period).join(' ').split(' ').slice(0, 416).join(' ');

const tokenizer = Tokenizer.fromPretrained('svc-small');

/**
 * The stretch of `text` whose tokens are the last ones 'start' keeps, from the first kept token's offset to the end:
 * checked to tokenize to exactly those ids, so scoring it is scoring what 'start' reads.
 */
function tailKept(text: string): string {
  const kept = tokenizer.encodeBatch([text], { truncate: 'start', offsets: true });
  expect(kept.truncated[0]).toBe(1);
  const tail = text.slice(kept.offsets![2]);
  expect([...tokenizer.encode(tail)]).toEqual([...kept.ids]);
  return tail;
}

let root: string;
let classifier: Classifier;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-long-texts-'));
  classifier = await train({ model: 'svc-small', task_type: 'binary-classification', finetune: false, examples });
});
afterAll(async () => {
  classifier?.dispose();
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe('predict truncate', () => {
  it("reads the default and 'end' alike, and refuses a text that does not fit with 'none'", async () => {
    const byDefault = await classifier.predict(texts);
    expect(await classifier.predict(texts, { truncate: 'end' })).toEqual(byDefault);
    expect(await classifier.predict(texts, { truncate: 'none' })).toEqual(byDefault);
    // 254 words and [CLS] [SEP] fill the 256 tokens; one more does not fit.
    expect((await classifier.predict(['good '.repeat(254)], { truncate: 'none' }))[0].truncated).toBe(false);
    expect(await refusal(classifier.predict([texts[0], 'good '.repeat(255)], { truncate: 'none' }))).toEqual({
      code: 'invalid_request',
      message:
        "texts[1] is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to classify it",
      param: 'texts[1]',
    });
    expect((await refusal(classifier.predict('good '.repeat(255), { truncate: 'none' }))).param).toBe('text');
  });

  it("refuses with 'none' before any inference: no engine batch runs", async () => {
    const before = batchStats();
    await refusal(classifier.predict([texts[0], 'good '.repeat(255)], { truncate: 'none' }));
    await refusal(classifier.predict(['good '.repeat(255)], { truncate: 'none', explain: 1 }));
    expect(batchStats()).toEqual(before);
  });

  it("scores a long text's last tokens with 'start', texts without spaces too, and flags only texts that lost tokens", async () => {
    const long = imdb.testSet.map((row) => row.text).join(' ');
    const chinese = '这部电影的结局让我非常感动，演员的表演也十分出色，但开头很无聊。'.repeat(20);
    for (const text of [long, chinese]) {
      const tail = tailKept(text);
      const [start] = await classifier.predict([text], { truncate: 'start' });
      const [read] = await classifier.predict([tail]);
      expect(start).toEqual({ ...read, truncated: true });
    }
    // A text that fits is read whole and not flagged, on either side.
    const [fits] = await classifier.predict([texts[0]], { truncate: 'start' });
    expect(fits).toEqual((await classifier.predict([texts[0]]))[0]);
    expect(fits.truncated).toBe(false);
  });

  it('shares one engine batch between calls cut on either side, each text read from its own side', async () => {
    const long = imdb.testSet.map((row) => row.text).join(' ');
    const [fromEnd] = await classifier.predict([long]);
    const [fromStart] = await classifier.predict([long], { truncate: 'start' });
    expect(fromStart.probability).not.toBe(fromEnd.probability);
    const before = batchStats();
    const together = await Promise.all([
      classifier.predict([long], { truncate: 'start' }),
      classifier.predict([long]),
      classifier.predict([long, texts[0]], { truncate: 'start' }),
    ]);
    expect(batchStats().batches - before.batches).toBe(1);
    // Within float rounding: a batch of four texts may round its rows unlike four batches of one.
    const expected = [
      [fromStart.probability],
      [fromEnd.probability],
      [fromStart.probability, (await classifier.predict([texts[0]]))[0].probability],
    ];
    together.forEach((answer, c) => answer.forEach((p, t) => expect(p.probability).toBeCloseTo(expected[c][t], 6)));
    expect(together.map((answer) => answer.map((p) => p.truncated))).toEqual([[true], [true], [true, false]]);
  });

  it("reads a long text whole with 'chunks', pooling its windows' embeddings, and says how many", async () => {
    const [chunked, short] = await classifier.predict([periodic, texts[0]], { truncate: 'chunks' });
    // Every window of the periodic text is the same 160 words, so their mean is that window's embedding.
    const [window] = await classifier.predict([periodic.split(' ').slice(0, 160).join(' ')]);
    expect(chunked.chunks).toBe(3);
    expect(chunked.truncated).toBe(false);
    expect(chunked.probability).toBeCloseTo(window.probability, 5);
    // A short text is one window: the embedding path agrees with the batcher's own head within float rounding.
    const [plain] = await classifier.predict([texts[0]]);
    expect(short.chunks).toBe(1);
    expect(short.probability).toBeCloseTo(plain.probability, 5);
  });
});

describe('predict explain', () => {
  it('names the k training examples nearest each text, most similar first, and which ones carry the answer', async () => {
    const answers = await classifier.predict([examples[3].text, ...texts], { explain: 3 });
    for (const p of answers) {
      expect(p.nearest).toHaveLength(3);
      const similarities = p.nearest!.map((n) => n.similarity);
      expect(similarities).toEqual([...similarities].sort((a, b) => b - a));
      for (const n of p.nearest!) {
        const example = examples.find((e) => e.text === n.text)!;
        expect(n).toEqual({ text: example.text, label: example.label, similarity: n.similarity, supports: example.label === p.label });
      }
    }
    // A training example's nearest example is itself: similarity 1 up to the default precision's rounding (the stored
    // embeddings are fp32, the prediction's 'auto', bf16 where it measured faster: cosine >= 0.9999 to fp32).
    expect(answers[0].nearest![0].text).toBe(examples[3].text);
    expect(answers[0].nearest![0].similarity).toBeGreaterThanOrEqual(0.9999);
    expect(answers[0].nearest![0].similarity).toBeLessThan(1 + 1e-5);
    // Explaining changes no probability.
    expect(answers.slice(1).map((p) => p.probability)).toEqual(
      (await classifier.predict(texts)).map((p) => expect.closeTo(p.probability, 5)),
    );
  });

  it('keeps the examples in the saved directory and reads them only when a call explains', async () => {
    const dir = join(root, 'binary');
    await classifier.save(dir);
    expect(await readdir(dir)).toEqual(expect.arrayContaining([kExamplesFile, kExampleEmbeddingsFile]));
    const loaded = await Classifier.load(dir);
    const before = await classifier.predict(texts, { explain: 2 });
    const after = await loaded.predict(texts, { explain: 2 });
    expect(after.map((p) => p.nearest!.map((n) => n.text))).toEqual(before.map((p) => p.nearest!.map((n) => n.text)));
    after.forEach((p, i) => p.nearest!.forEach((n, j) => expect(n.similarity).toBeCloseTo(before[i].nearest![j].similarity, 6)));
    // Without the files a model predicts as before (nothing reads them), and explain says why it cannot.
    await rm(join(dir, kExamplesFile));
    await rm(join(dir, kExampleEmbeddingsFile));
    const bare = await Classifier.load(dir);
    expect(await bare.predict(texts)).toEqual(await loaded.predict(texts));
    expect(await refusal(bare.predict(texts, { explain: 1 }))).toEqual({
      code: 'conflict',
      message: `explain needs the training examples kept with the model, and ${classifier.id} was saved without them; train it again to explain its answers`,
      param: 'explain',
    });
  });

  it('explains a multi-class model, chunked texts included', async () => {
    const { trainSet, testSet } = splitClasses(uciSites(), 0, 8);
    const sites = await train({ model: 'svc-small', task_type: 'multi-class-classification', finetune: false, examples: trainSet });
    try {
      const inputs = [testSet[0].text, `${testSet[1].text} ${periodic}`];
      const answers = await sites.predict(inputs, { explain: 2, truncate: 'chunks' });
      expect(answers.map((p) => p.chunks)).toEqual([1, 4]); // the site sentence adds a window
      for (const p of answers) {
        for (const n of p.nearest!) expect(n.supports).toBe(n.label === p.label);
        expect(trainSet.map((e) => e.text)).toContain(p.nearest![0].text);
      }
    } finally {
      sites.dispose();
    }
  });
});

describe('predict options', () => {
  it.each([
    [{ explain: 1.5 }, 'explain must be an integer', 'explain'],
    [{ explain: '2' }, 'explain must be an integer', 'explain'],
    [{ explain: 0 }, 'explain must be at least 1', 'explain'],
    [{ explain: 21 }, 'explain must be at most 20', 'explain'],
    [{ truncate: 'middle' }, `truncate must be one of 'end', 'start', 'none', 'chunks' (got "middle")`, 'truncate'],
  ])('refuses %j: %s', async (options, message, param) => {
    expect(await refusal(classifier.predict(texts, options as never))).toEqual({ code: 'invalid_request', message, param });
  });

  it('answers only the fields asked for', async () => {
    const [p] = (await classifier.predict([texts[0]])) as Prediction[];
    expect(Object.keys(p)).toEqual(['label', 'probability', 'truncated']);
  });
});
