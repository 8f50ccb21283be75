// train()'s truncate: how examples longer than the encoder reads are read for the head, and the
// refusal of 'none'. The examples kept for explain are the embeddings the head was fitted on, so a
// training example explained the same way finds itself at similarity 1.
import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { kExplainTextChars } from '../../src/contract/long-texts.js';
import { refusal } from '../_support/refusal.js';

const imdb = split(uciSentences('imdb'), 3);
const short = imdb.trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
// Two examples of about 400 words: longer than the 256 tokens read, three windows each.
const filler = imdb.testSet
  .slice(0, 150)
  .map((row) => row.text)
  .join(' ');
const long = (label: boolean, at: number) => ({
  text: `${filler
    .split(' ')
    .slice(at, at + 400)
    .join(' ')}`,
  label,
  label_text: 'positive',
});
const examples = [...short.slice(0, 18), long(true, 0), long(false, 400)];
const request = { model: 'svc-small', task_type: 'binary-classification' as const, finetune: false, examples };

afterAll(() => closePool());

describe('train truncate', () => {
  it.each(['chunks', 'start', 'end'] as const)(
    "fits the head on examples read as '%s', and explains a long example by itself read the same way",
    async (truncate) => {
      const classifier = await train({ ...request, truncate });
      try {
        const [answer] = await classifier.predict([examples[18].text], { truncate, explain: 1 });
        // Its own nearest example, its text cut to what an explanation carries.
        expect(examples[18].text.length).toBeGreaterThan(kExplainTextChars);
        expect(answer.nearest![0]).toMatchObject({ text: examples[18].text.slice(0, kExplainTextChars), text_truncated: true });
        // 1 up to the default precision's rounding: stored embeddings are fp32, the prediction's 'auto' (bf16 where it
        // measured faster: cosine >= 0.9999 to fp32).
        expect(answer.nearest![0].similarity).toBeGreaterThanOrEqual(0.9999);
        expect(answer.nearest![0].similarity).toBeLessThan(1 + 1e-5);
        expect(answer.chunks).toBe(truncate === 'chunks' ? 3 : undefined);
      } finally {
        classifier.dispose();
      }
    },
  );

  it("refuses an example the encoder would cut with 'none', naming it, before any training", async () => {
    expect(await refusal(train({ ...request, truncate: 'none' }))).toEqual({
      code: 'invalid_request',
      message:
        "examples[18].text is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to train on it",
      param: 'examples[18].text',
    });
    const fits = await train({ ...request, examples: short, truncate: 'none' });
    expect(fits.metrics.train_accuracy).toBeGreaterThan(0.5);
    fits.dispose();
  });

  it('refuses a truncate mode it does not know', async () => {
    expect(await refusal(train({ ...request, truncate: 'middle' as never }))).toEqual({
      code: 'invalid_request',
      message: `truncate must be one of 'end', 'start', 'none', 'chunks' (got "middle")`,
      param: 'truncate',
    });
  });
});
