// What one explain call may cost and answer: a model's examples are searched by a pool worker, texts in the answer
// are cut to kExplainTextChars, and a call over the inputs or comparisons explain allows is a 400 before any work.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { kExplainTextChars, kMaxExplainComparisons, kMaxExplainInputs } from '../../src/contract/long-texts.js';
import { closePool } from '../../src/pool/pool.js';
import { configurePredictQueue } from '../../src/predict/batcher.js';
import { Classifier } from '../../src/predict/classifier.js';
import { train } from '../../src/train/train.js';
import { refusal } from '../_support/refusal.js';

const imdb = uciSentences('imdb');
// Long examples: each of 20 reviews is three sentences repeated to over 1,500 characters.
const long = (i: number) => {
  const sentences = [imdb[i * 3], imdb[i * 3 + 1], imdb[i * 3 + 2]].map((row) => row.text).join(' ');
  return Array(Math.ceil(1600 / sentences.length))
    .fill(sentences)
    .join(' ');
};
const examples = Array.from({ length: 20 }, (_, i) => ({ text: long(i), label: i % 2 === 0, label_text: 'positive' }));
// Enough short examples that 96 inputs would compare more than kMaxExplainComparisons times.
const many = 2700;
const manyExamples = Array.from({ length: many }, (_, i) => ({
  text: `${imdb[i % imdb.length].text} (${i})`,
  label: i % 2 === 0,
  label_text: 'positive',
}));

let root: string;
let classifier: Classifier;
let loaded: Classifier;
let large: Classifier;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-explain-bounds-'));
  classifier = await train({ model: 'svc-small', task_type: 'binary-classification', finetune: false, examples });
  await classifier.save(join(root, 'long'));
  loaded = await Classifier.load(join(root, 'long'));
  large = await train({ model: 'svc-small', task_type: 'binary-classification', finetune: false, examples: manyExamples });
});
afterAll(async () => {
  for (const c of [classifier, loaded, large]) c?.dispose();
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe('explain answers', () => {
  it(`carry each example's first ${kExplainTextChars} characters, flagged, in memory and loaded alike`, async () => {
    for (const model of [classifier, loaded]) {
      const [answer] = await model.predict([examples[4].text], { explain: 3 });
      expect(answer.nearest).toHaveLength(3);
      // The text's own example is nearest; every example is longer than the answer carries.
      expect(answer.nearest![0]).toMatchObject({ text: examples[4].text.slice(0, kExplainTextChars), text_truncated: true, label: true });
      for (const n of answer.nearest!) {
        expect(n.text).toHaveLength(kExplainTextChars);
        expect(n.text_truncated).toBe(true);
        expect(examples.some((e) => e.text.startsWith(n.text))).toBe(true);
      }
    }
  });

  it('leave a text that fits whole and unflagged', async () => {
    const [answer] = await large.predict([manyExamples[7].text], { explain: 2 });
    expect(answer.nearest![0]).toEqual({
      text: manyExamples[7].text,
      label: false,
      similarity: expect.closeTo(1, 2),
      supports: answer.label === false,
    });
    expect(Object.keys(answer.nearest![0])).not.toContain('text_truncated');
  });
});

describe('explain bounds', () => {
  it(`refuses more than ${kMaxExplainInputs} inputs a call, naming explain`, async () => {
    const inputs = Array.from({ length: kMaxExplainInputs + 1 }, (_, i) => imdb[i].text);
    expect(await refusal(classifier.predict(inputs, { explain: 1 }))).toEqual({
      code: 'invalid_request',
      message: `explain answers at most ${kMaxExplainInputs} inputs a call (got ${kMaxExplainInputs + 1})`,
      param: 'explain',
    });
    // Without explain the same call is answered.
    expect(await classifier.predict(inputs)).toHaveLength(kMaxExplainInputs + 1);
  });

  it('refuses more comparisons than it allows on a large model, saying how many inputs fit', async () => {
    const most = Math.floor(kMaxExplainComparisons / many);
    const inputs = Array.from({ length: most + 1 }, (_, i) => imdb[i].text);
    expect(await refusal(large.predict(inputs, { explain: 1 }))).toEqual({
      code: 'invalid_request',
      message:
        `explain compares every input with each of the model's ${many} training examples, at most ${kMaxExplainComparisons} ` +
        `comparisons a call: send at most ${most} inputs with explain (got ${most + 1})`,
      param: 'explain',
    });
    const answers = await large.predict(inputs.slice(0, most), { explain: 1 });
    expect(answers.every((a) => a.nearest!.length === 1)).toBe(true);
  });
});

describe('the main thread', () => {
  it("parses none of a loaded model's kept examples for explain: its worker reads and keeps them", async () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const [answer] = await loaded.predict([examples[6].text], { explain: 2 });
      expect(answer.nearest![0].text).toBe(examples[6].text.slice(0, kExplainTextChars));
      // examples.json parses to the model's examples: nothing on this thread parsed such an array.
      const banks = parse.mock.results.filter(({ value }) => Array.isArray(value) && value.length === examples.length);
      expect(banks).toEqual([]);
    } finally {
      parse.mockRestore();
    }
  });

  it("refuses a 'chunks' call the service could not answer in time before windowing any of its texts", async () => {
    configurePredictQueue({ deadlineMs: 10_000 });
    try {
      await classifier.predict(imdb.slice(0, 8).map((row) => row.text)); // a timed batch: the speed is measured
      const huge = Array.from({ length: 96 }, (_, i) => `${long(i % 20)} `.repeat(60).slice(0, 100_000));
      const split = vi.spyOn(String.prototype, 'split');
      const slice = vi.spyOn(String.prototype, 'slice');
      let outcome: { code: string; message: string; param: string | null };
      let windowed: unknown[];
      try {
        outcome = await refusal(classifier.predict(huge, { truncate: 'chunks' }));
      } finally {
        // Read before the spies are restored (restoring clears them); a string method's receiver arrives boxed.
        windowed = [...split.mock.contexts, ...slice.mock.contexts].filter((self) => huge.includes(String(self)));
        split.mockRestore();
        slice.mockRestore();
      }
      expect(outcome.code).toBe('overloaded');
      expect(outcome.message).toMatch(
        /^The service is overloaded: at the \d+ tokens\/s measured, this prediction would end in about \d+ ms/,
      );
      expect(windowed).toEqual([]);
    } finally {
      configurePredictQueue();
    }
  });
});
