// classify() through the library: heads fitted on the frozen base encoder from the call's own
// examples (UCI review sentences), cached by a hash of the examples, and zero-shot from label names.
import { afterAll, describe, expect, it } from 'vitest';

import { uciSentences, uciSites } from '../../fixtures/corpora.js';
import { batchStats } from '../../src/predict/batcher.js';
import { closePool } from '../../src/pool/pool.js';
import { cachedClassifyHeads, classify, clearClassifyHeads } from '../../src/train/classify.js';
import { windowsOf } from '../../src/predict/embed-windows.js';
import { imdbExamples } from '../_support/examples.js';
import { refusal } from '../_support/refusal.js';

afterAll(async () => {
  await closePool();
});

// 10 positive and 10 negative IMDB sentences; the inputs are sentences none of them holds.
const examples = imdbExamples(0, 10);
const imdb = uciSentences('imdb');
const positives = imdb
  .filter((r) => r.label)
  .slice(100, 147)
  .map((r) => r.text);
const negatives = imdb
  .filter((r) => !r.label)
  .slice(100, 147)
  .map((r) => r.text);

describe('classify (library)', () => {
  it("labels clear sentiment by 20 examples, in predict's binary shape, and fits the head once for the same examples", async () => {
    clearClassifyHeads();
    const clear = ['An absolutely wonderful, moving film. I loved every minute.', 'Terrible, boring and a complete waste of time.'];
    const first = await classify([...clear, ...positives, ...negatives], examples);
    expect(Object.keys(first)).toEqual(['model', 'label_text', 'zero_shot', 'predictions']);
    expect(first.model).toBe('svc-small');
    expect((first as { label_text: string }).label_text).toBe('positive');
    expect(first.zero_shot).toBe(false);
    const predictions = first.predictions as { label: boolean; probability: number; truncated: boolean }[];
    expect(predictions).toHaveLength(96);
    for (const p of predictions) {
      expect(Object.keys(p)).toEqual(['label', 'probability', 'truncated']);
      expect(p.label).toBe(p.probability >= 0.5);
      expect(p.truncated).toBe(false);
    }
    expect(predictions.slice(0, 2).map((p) => p.label)).toEqual([true, false]);
    // 94 held-out sentences: 20 examples on the frozen encoder got about 84 % right when this was written; 75 % is asked.
    const right = predictions.slice(2).filter((p, i) => p.label === i < 47).length;
    expect(right / 94).toBeGreaterThanOrEqual(0.75);
    expect(cachedClassifyHeads()).toBe(1);

    // Same examples: the cached head, the inputs alone embedded, the same probabilities.
    const before = batchStats().texts;
    const again = await classify([...clear, ...positives, ...negatives], examples);
    expect(batchStats().texts - before).toBe(96);
    expect(cachedClassifyHeads()).toBe(1);
    again.predictions.forEach((p, i) => expect((p as { probability: number }).probability).toBeCloseTo(predictions[i].probability, 5));
  });

  it('answers multi-class with every class score, and multi-label with the labels that reach 0.5', async () => {
    const sites = uciSites();
    const pick = (label: string, from: number) =>
      sites
        .filter((r) => r.label === label)
        .slice(from, from + 6)
        .map((r) => ({ text: r.text, label: r.label as string }));
    const classExamples = [...pick('imdb', 0), ...pick('yelp', 0), ...pick('amazon', 0)];
    const inputs = [
      "The film's director and cast were superb.",
      'The waiter brought our food cold.',
      'This phone charger broke after a week.',
    ];
    const multi = await classify(inputs, classExamples);
    expect(Object.keys(multi)).toEqual(['model', 'task_type', 'zero_shot', 'predictions']);
    expect((multi as { task_type: string }).task_type).toBe('multi-class-classification');
    const classes = multi.predictions as { label: string; probability: number; scores: Record<string, number>; truncated: boolean }[];
    expect(classes.map((p) => p.label)).toEqual(['imdb', 'yelp', 'amazon']);
    for (const p of classes) {
      expect(Object.keys(p)).toEqual(['label', 'probability', 'scores', 'truncated']);
      expect(Object.keys(p.scores)).toEqual(['amazon', 'imdb', 'yelp']);
      expect(Object.values(p.scores).reduce((s, v) => s + v, 0)).toBeCloseTo(1, 5);
      expect(p.probability).toBe(Math.max(...Object.values(p.scores)));
    }

    const tagged = classExamples.map((e) => ({ text: e.text, labels: e.label === 'imdb' ? ['film'] : e.label === 'yelp' ? ['food'] : [] }));
    const tags = await classify(inputs, tagged);
    expect((tags as { task_type: string }).task_type).toBe('multi-label-classification');
    const sets = tags.predictions as { labels: string[]; scores: Record<string, number> }[];
    for (const p of sets) {
      expect(Object.keys(p.scores)).toEqual(['film', 'food']);
      expect(p.labels).toEqual(['film', 'food'].filter((l) => p.scores[l] >= 0.5));
    }
    expect(sets.map((p) => p.scores.film > p.scores.food)).toEqual([true, false, sets[2].scores.film > sets[2].scores.food]);
  });

  it('classifies zero-shot from label names, and says so', async () => {
    const answer = await classify(
      [
        'The striker scored twice in the final.',
        'The central bank raised interest rates again.',
        'The new vaccine cut hospital admissions.',
      ],
      [],
      { taskType: 'multi-class-classification', labels: ['sports', 'economy', 'health'] },
    );
    expect(answer.zero_shot).toBe(true);
    expect(answer.predictions.map((p) => (p as { label: string }).label)).toEqual(['sports', 'economy', 'health']);
    const binary = await classify(['I loved this film, it was wonderful.'], [], {
      taskType: 'binary-classification',
      labelText: 'positive review',
    });
    expect(binary).toMatchObject({ label_text: 'positive review', zero_shot: true });
  });

  it('answers binary zero-shot by the label against everyday texts, not at 0.5', async () => {
    const answer = await classify(['Why was I charged twice?', 'My parcel is late'], [], {
      taskType: 'binary-classification',
      labelText: 'billing question',
    });
    const predictions = answer.predictions as { label: boolean; probability: number }[];
    expect(predictions.map((p) => p.label)).toEqual([true, false]);
    // Scores, not coin flips: each side is clear of 0.5.
    expect(predictions[0].probability).toBeGreaterThan(0.6);
    expect(predictions[1].probability).toBeLessThan(0.4);
    // A threshold moves the cut: at 0.1 the parcel is a billing question too.
    const low = await classify(['My parcel is late'], [], {
      taskType: 'binary-classification',
      labelText: 'billing question',
      threshold: 0.1,
    });
    expect((low.predictions[0] as { label: boolean }).label).toBe(true);
  });

  it('answers multi-label zero-shot with the label a text clearly carries, and takes a threshold', async () => {
    const texts = ['The central bank raised interest rates again.', 'The new vaccine cut hospital admissions.'];
    const options = { taskType: 'multi-label-classification' as const, labels: ['sports', 'economy', 'health'] };
    const answer = await classify(texts, [], options);
    expect(answer.zero_shot).toBe(true);
    const sets = answer.predictions as { labels: string[]; scores: Record<string, number> }[];
    expect(sets.map((p) => p.labels)).toEqual([['economy'], ['health']]);
    const strict = await classify(texts, [], { ...options, threshold: { economy: 0.99 } });
    expect((strict.predictions as { labels: string[] }[]).map((p) => p.labels)).toEqual([[], ['health']]);
    expect(await refusal(classify(texts, [], { ...options, threshold: { finance: 0.5 } }))).toEqual({
      code: 'invalid_request',
      message: "threshold names the label 'finance', which the model does not have (economy, health, sports)",
      param: 'threshold.finance',
    });
  });

  it('cuts long texts into overlapping windows of 160 words, 32 shared (chunks), and sends them whole otherwise', () => {
    const words = Array.from({ length: 400 }, (_, i) => `w${i}`);
    const text = words.join(' ');
    const chunked = windowsOf(['short text', text], 'chunks');
    expect(chunked.windows[0]).toEqual(['short text']);
    expect(chunked.windows[1]).toEqual([words.slice(0, 160).join(' '), words.slice(128, 288).join(' '), words.slice(256, 400).join(' ')]);
    // 'start' is the tokenizer's: the text goes whole and keeps its last tokens there.
    expect(windowsOf([text], 'start')).toEqual({ windows: [[text]] });
    expect(windowsOf([text], 'end')).toEqual({ windows: [[text]] });
  });

  it('reads a long review whole with chunks, flags it cut with end and start, and says how many windows it read', async () => {
    // A long text whose end says what its start does not: a dull plot summary, then the verdict.
    const summary = Array(30)
      .fill('The film follows a family who move to a small town and the story covers their first year there.')
      .join(' ');
    const long = `${summary} I loved it: a wonderful, moving film with superb acting, the best I have seen this year.`;
    const end = await classify([long], examples, { truncate: 'end' });
    expect(end.predictions[0]).toMatchObject({ truncated: true });
    expect(end.predictions[0]).not.toHaveProperty('chunks');
    const start = await classify([long], examples, { truncate: 'start' });
    expect(start.predictions[0]).toMatchObject({ truncated: true });
    const chunked = await classify([long, 'Great film.'], examples, { truncate: 'chunks' });
    const [whole, short] = chunked.predictions as { label: boolean; probability: number; truncated: boolean; chunks: number }[];
    expect(Object.keys(whole)).toEqual(['label', 'probability', 'truncated', 'chunks']);
    expect(whole).toMatchObject({ truncated: false, chunks: 5 });
    expect(short).toMatchObject({ truncated: false, chunks: 1 });
    // The verdict at the end moves the answer toward positive when the text is read whole.
    expect(whole.probability).toBeGreaterThan((end.predictions[0] as { probability: number }).probability);
  });

  it('explains each answer by the k nearest examples, their labels, similarity and whether they support it', async () => {
    // An example's own text is nearest to itself, with similarity 1.
    const own = examples[3].text;
    const answer = await classify([own, 'Terrible, boring and a complete waste of time.'], examples, { explain: 3 });
    const predictions = answer.predictions as {
      label: boolean;
      nearest: { text: string; label: boolean; similarity: number; supports: boolean }[];
    }[];
    expect(Object.keys(predictions[0])).toEqual(['label', 'probability', 'truncated', 'nearest']);
    expect(predictions[0].nearest[0]).toEqual({ text: own, label: true, similarity: expect.closeTo(1, 5), supports: predictions[0].label });
    for (const p of predictions) {
      expect(p.nearest).toHaveLength(3);
      for (const n of p.nearest) {
        expect(Object.keys(n)).toEqual(['text', 'label', 'similarity', 'supports']);
        expect(n.supports).toBe(n.label === p.label);
        expect(examples.find((e) => e.text === n.text)?.label).toBe(n.label);
      }
      expect(p.nearest.map((n) => n.similarity)).toEqual([...p.nearest.map((n) => n.similarity)].sort((a, b) => b - a));
    }
    const tags = await classify(
      ['The waiter was rude.'],
      [
        { text: 'Great food', labels: ['food'] },
        { text: 'Tasty dishes', labels: ['food'] },
        { text: 'Slow service', labels: ['service'] },
        { text: 'Rude staff', labels: ['service'] },
        { text: 'Nice view', labels: [] },
      ],
      { explain: 2 },
    );
    const first = (tags.predictions[0] as { nearest: { text: string; labels: string[] }[] }).nearest[0];
    expect(Object.keys(first)).toEqual(['text', 'labels', 'similarity']);
    expect(first.labels).toEqual(['service']);
  });

  it('refuses a bad call with a 4xx that names the field', async () => {
    expect(await refusal(classify(Array(97).fill('x'), examples))).toEqual({
      code: 'invalid_request',
      message: 'inputs holds more than 96 texts, the limit per classify request',
      param: 'inputs',
    });
    expect(
      await refusal(
        classify(
          ['x'],
          [
            { text: 'a', label: 'x' },
            { text: 'b', label: 'x' },
            { text: 'c', label: 'y' },
          ],
        ),
      ),
    ).toEqual({
      code: 'invalid_request',
      message: "the class 'y' has 1 example; each needs at least 2",
      param: 'examples',
    });
    expect(await refusal(classify(['x'], examples.slice(0, 11)))).toEqual({
      code: 'invalid_request',
      message: "the label 'false' has 1 example; each needs at least 2",
      param: 'examples',
    });
    expect(await refusal(classify(['x'], [], { taskType: 'multi-class-classification' }))).toEqual({
      code: 'invalid_request',
      message: 'with no examples (zero-shot), labels is required: the classes are told apart by their names',
      param: 'labels',
    });
    expect(await refusal(classify(['x'], examples, { explain: 1.5 }))).toEqual({
      code: 'invalid_request',
      message: 'explain must be an integer',
      param: 'explain',
    });
    expect(await refusal(classify(['x'], examples, { explain: 21 }))).toEqual({
      code: 'invalid_request',
      message: 'explain must be at most 20',
      param: 'explain',
    });
    expect(await refusal(classify(['x'], [], {}))).toEqual({
      code: 'invalid_request',
      message: 'task_type is required',
      param: 'task_type',
    });
    const long = Array(400).fill('word').join(' ');
    expect(await refusal(classify(['short', long], examples, { truncate: 'none' }))).toEqual({
      code: 'invalid_request',
      message:
        "inputs[1] is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to classify it",
      param: 'inputs[1]',
    });
  });
});
