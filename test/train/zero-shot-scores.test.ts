// Binary zero-shot's two features on real UCI reviews: the contrast with the negated label tells a
// clear positive review from a clear negative one, the lift (relevance - cut) does not, and the
// answer's probability is sigmoid(lift + contrast), the rule the calibration bench keeps.
import { afterAll, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { closePool } from '../../src/pool/pool.js';
import { embedTexts } from '../../src/predict/embed-windows.js';
import { classify } from '../../src/train/classify.js';
import { binaryZeroShot } from '../../src/train/zero-shot.js';
import { binaryZeroShotFeatures, kBinaryZeroShotWeights, zeroShotReference } from '../../src/train/zero-shot-scores.js';

afterAll(async () => {
  await closePool();
});

// Clear IMDB reviews: the short ones that say "excellent" / "brilliant" or "terrible" / "worst" outright.
const imdb = uciSentences('imdb');
const clear = (label: boolean, words: RegExp) =>
  imdb.filter((row) => row.label === label && words.test(row.text) && row.text.length < 70).map((row) => row.text.trim());
const positives = clear(true, /excellent|brilliant/i);
const negatives = clear(false, /terrible|worst/i);

const embed = async (texts: readonly string[]) =>
  (await embedTexts('svc-small', texts, 'end', { tenant: undefined, paramOf: () => 'inputs' })).embeddings;

it('separates clear positive from clear negative reviews by the contrast, not by the lift', async () => {
  expect(positives.length).toBeGreaterThanOrEqual(3);
  expect(negatives.length).toBeGreaterThanOrEqual(3);
  const reference = await zeroShotReference('svc-small', undefined);
  const features = binaryZeroShotFeatures(await embed(binaryZeroShot('positive review').map((e) => e.text)), reference);
  const of = async (texts: string[]) => {
    const f = features(await embed(texts));
    return { lift: texts.map((_, i) => f[2 * i]), contrast: texts.map((_, i) => f[2 * i + 1]) };
  };
  const good = await of(positives);
  const bad = await of(negatives);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  // Every clear positive review is on the label's side of its negation, every clear negative one on the other.
  expect(Math.min(...good.contrast)).toBeGreaterThan(Math.max(...bad.contrast));
  // The lift moves less between the two sides than the contrast does: both sides are reviews.
  expect(Math.abs(mean(good.lift) - mean(bad.lift))).toBeLessThan(mean(good.contrast) - mean(bad.contrast));
});

it("answers binary zero-shot with sigmoid(lift + contrast) of the texts' features", async () => {
  expect(kBinaryZeroShotWeights).toEqual({ lift: 1, contrast: 1, bias: 0 });
  const texts = [positives[0]!, negatives[0]!];
  const answer = await classify(texts, [], { taskType: 'binary-classification', labelText: 'positive review' });
  const reference = await zeroShotReference('svc-small', undefined);
  const f = binaryZeroShotFeatures(await embed(binaryZeroShot('positive review').map((e) => e.text)), reference)(await embed(texts));
  const expected = texts.map((_, i) => 1 / (1 + Math.exp(-(f[2 * i] + f[2 * i + 1]))));
  (answer.predictions as { probability: number }[]).forEach((p, i) => expect(p.probability).toBeCloseTo(expected[i]!, 4));
});
