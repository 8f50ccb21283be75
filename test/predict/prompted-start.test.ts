// truncate: 'start' on a base model with a prompt (e5's `query: `): the prompt is kept whatever is cut, so a long
// text is read as [CLS], the prompt's tokens, then its own last tokens that fit, and a text that fits as it is.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { registerBaseModel, type Classifier } from '../../src/index.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { closePool, configurePool } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { writeBroughtFolder } from '../_support/brought-folder.js';
import { imdbExamples } from '../_support/examples.js';

const kPrompt = 'query: ';
const long = uciSentences('imdb')
  .slice(300, 400)
  .map((row) => row.text)
  .join(' ');
let root: string;
let classifier: Classifier;

beforeAll(async () => {
  // fp32: the two texts compared must round alike whatever kernel level runs.
  configurePool({ precision: 'fp32' });
  root = await mkdtemp(join(tmpdir(), 'svc-prompted-start-'));
  registerBaseModel('e5-start', writeBroughtFolder(join(root, 'e5-start'), { prompts: { query: kPrompt } }));
  classifier = await train({ model: 'e5-start', task_type: 'binary-classification', examples: imdbExamples(0, 10), finetune: false });
});
afterAll(async () => {
  classifier?.dispose();
  await closePool();
  await rm(root, { recursive: true, force: true });
});

describe("truncate 'start' with a prompt", () => {
  it("keeps the prompt and the text's last tokens that fit beside it", async () => {
    const tokenizer = Tokenizer.fromPretrained('svc-small');
    const promptTokens = tokenizer.encode(kPrompt).length - tokenizer.specialTokens;
    expect(promptTokens).toBeGreaterThan(0);
    // The stretch of the text whose tokens fill what the prompt leaves: scoring it (the prompt put before it) is
    // scoring what 'start' reads.
    const kept = tokenizer.encodeBatch([long], { maxLength: 256 - promptTokens, truncate: 'start', offsets: true });
    expect(kept.truncated[0]).toBe(1);
    const tail = long.slice(kept.offsets![2]);
    expect([...tokenizer.encode(kPrompt + tail)]).toEqual([
      kept.ids[0],
      ...tokenizer.encode(kPrompt).subarray(1, -1),
      ...kept.ids.subarray(1),
    ]);
    const [start] = await classifier.predict([long], { truncate: 'start' });
    const [read] = await classifier.predict([tail]);
    expect(start).toEqual({ ...read, truncated: true });
    const [fits] = await classifier.predict(['A wonderful, moving film.'], { truncate: 'start' });
    expect(fits).toEqual((await classifier.predict(['A wonderful, moving film.']))[0]);
  });
});
