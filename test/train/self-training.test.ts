// Self-training on unlabelled texts (src/train/self-training.ts): which texts get a pseudo-label, the
// head fitted on examples + those rows exactly as a fit on them by hand, every cross-validation fold
// self-training too, and train()'s `unlabeled` field end to end.
import { afterAll, describe, expect, it } from 'vitest';

import { split } from '../../fixtures/draw.js';
import { uciSentences } from '../../fixtures/corpora.js';
import { closePool, runTask } from '../../src/pool/pool.js';
import { train } from '../../src/train/train.js';
import { labelWordTexts } from '../../src/train/label-words.js';
import { fitAndMeasure } from '../../src/train/fit-head.js';
import { classProbabilities, kSelfTraining, pseudoLabels, withPseudoLabels } from '../../src/train/self-training.js';
import type { FitTask } from '../../src/pool/tasks.js';

describe('pseudoLabels', () => {
  it('takes, per class in the examples shares, the rows most surely of it', () => {
    const p = Float64Array.of(0.9, 0.1, 0.2, 0.8, 0.6, 0.4, 0.45, 0.55);
    expect(pseudoLabels(p, 2, [0.5, 0.5], 0.5)).toEqual({ rows: Int32Array.of(0, 1), classes: Int32Array.of(0, 1) });
    expect(pseudoLabels(p, 2, [0.5, 0.5], 1)).toEqual({ rows: Int32Array.of(0, 2, 1, 3), classes: Int32Array.of(0, 0, 1, 1) });
    // A class the head predicts for fewer rows than its quota gives only those.
    expect(pseudoLabels(p, 2, [0.25, 0.75], 1)).toEqual({ rows: Int32Array.of(0, 1, 3), classes: Int32Array.of(0, 1, 1) });
  });

  it('reads binary heads as [1 - p, p] and softmax heads as their softmax', () => {
    const binary = classProbabilities({ weights: [2, 0], biases: [0] }, Float32Array.of(0, 1, 1, 0), 2);
    expect(Array.from(binary).map((v) => Number(v.toFixed(6)))).toEqual([0.5, 0.5, 0.119203, 0.880797]);
    const softmax = classProbabilities({ weights: [1, 0, 0, 1, 0, 0], biases: [0, 0, Math.log(2)] }, Float32Array.of(0, 0), 2);
    expect(Array.from(softmax)).toEqual([0.25, 0.25, 0.5]);
  });
});

// Four examples on the second coordinate and four unlabelled points far out on it, two each side.
const x = new Float32Array([0.1, 1, 0.1, 0.5, -0.1, -1, -0.1, -0.5]);
const targets = { kind: 'classes' as const, classes: Int32Array.from([1, 1, 0, 0]), count: 2 };
const unlabeled = new Float32Array([1, 3, 1, 2, -1, -3, -1, -2]);

function task(selfTraining: boolean): FitTask {
  return {
    kind: 'fit',
    head: 'logistic',
    embeddings: x,
    targets,
    dim: 2,
    C: 1,
    balanced: false,
    validation: null,
    crossValidate: false,
    unlabeled: selfTraining ? { embeddings: unlabeled, selfTraining: { share: 0.5, rounds: 1 } } : null,
  };
}

describe('self-training in the fit task', () => {
  it('fits the head on the examples and the surest half of the texts, as a fit on those rows by hand', () => {
    const plain = fitAndMeasure(task(false));
    const pseudo = pseudoLabels(classProbabilities({ weights: plain.weights, biases: plain.biases }, unlabeled, 2), 2, [0.5, 0.5], 0.5);
    // The head is surest of the farthest point on each side.
    expect(pseudo).toEqual({ rows: Int32Array.of(2, 0), classes: Int32Array.of(0, 1) });
    const joined = withPseudoLabels(x, targets, unlabeled, 2, pseudo);
    const byHand = fitAndMeasure({ ...task(false), embeddings: Float32Array.from(joined.x), targets: joined.targets });
    const selfTrained = fitAndMeasure(task(true));
    expect(Array.from(selfTrained.weights)).toEqual(Array.from(byHand.weights));
    expect(Array.from(selfTrained.biases)).toEqual(Array.from(byHand.biases));
    expect(Array.from(selfTrained.weights)).not.toEqual(Array.from(plain.weights));
    // Train accuracy stays the examples' own.
    expect(selfTrained.trainAccuracy).toBe(1);
  });

  it('self-trains in every cross-validation fold', () => {
    // Examples whose first coordinate misleads a head fitted on one of each class; the far unlabelled
    // points on the second coordinate pull each fold's head back.
    const noisy = Float32Array.of(1, 0.2, 0, 0.5, 0.5, -0.1, -1, -0.3);
    const plain = fitAndMeasure({ ...task(false), embeddings: noisy, crossValidate: true });
    const selfTrained = fitAndMeasure({ ...task(true), embeddings: noisy, crossValidate: true });
    expect(plain.crossValidation).toEqual({ accuracy: 0.25, macroF1: 0.2, folds: 2 });
    expect(selfTrained.crossValidation!.accuracy).toBe(0.75);
  });

  it('leaves label sets to the examples alone', () => {
    const sets = { kind: 'label-sets' as const, sets: Uint8Array.from([1, 1, 0, 0]), count: 1 };
    const oneVsRest = (selfTraining: boolean) => fitAndMeasure({ ...task(selfTraining), head: 'one-vs-rest', targets: sets });
    expect(Array.from(oneVsRest(true).weights)).toEqual(Array.from(oneVsRest(false).weights));
  });
});

describe('train with unlabeled texts', () => {
  afterAll(async () => {
    await closePool();
  });

  // The accuracy bench's first imdb draw: 10 + 10 examples; 200 of the other sentences sent without labels.
  const { trainSet, testSet } = split(uciSentences('imdb'), 1);
  const examples = trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive' }));
  const texts = testSet.slice(0, 200).map((row) => row.text);
  const request = { model: 'svc-small' as const, task_type: 'binary-classification' as const, finetune: false, examples };

  const embed = (t: string[]) => runTask<Float32Array>({ kind: 'embed', baseModel: 'svc-small', texts: t });
  const words = labelWordTexts('binary-classification', 'positive');
  // The head as train() fits it on the base encoder's embeddings, cross-validated: with the label words (w=2, which
  // unlabelled texts bring in unless options.labelWords says otherwise) and, when given, self-training on `unlabeled`.
  async function fitOnBase(unlabeled: string[] | null) {
    const [onExamples, onWords, onUnlabeled] = await Promise.all([
      embed(examples.map((e) => e.text)),
      embed(words.texts),
      unlabeled ? embed(unlabeled) : null,
    ]);
    return fitAndMeasure({
      kind: 'fit',
      head: 'logistic',
      embeddings: onExamples,
      targets: { kind: 'classes', classes: Int32Array.from(examples, (e) => (e.label ? 1 : 0)), count: 2 },
      dim: 384,
      C: 1,
      balanced: false,
      validation: null,
      crossValidate: true,
      unlabeled: onUnlabeled && { embeddings: onUnlabeled, selfTraining: kSelfTraining },
      labelWords: { embeddings: onWords, targets: words.targets, lever: { kind: 'examples', weight: 2 } },
    });
  }

  it('self-trains the head on the texts embedded by the model encoder, with the label words, and records it', async () => {
    const classifier = await train({ ...request, unlabeled: texts });
    const expected = await fitOnBase(texts);
    // Embedded in other batches than train()'s chunks: equal to the GEMM's rounding at every kernel level.
    classifier.head.weights.forEach((w, j) => expect(Math.abs(w - expected.weights[j]!)).toBeLessThan(1e-5));
    expect(classifier.metrics.cv_accuracy).toBe(expected.crossValidation!.accuracy);
    expect(classifier.manifest.training.self_training).toEqual({ share: 0.5, rounds: 1, unlabeled: 200 });
    expect(classifier.manifest.training.label_words).toEqual({ kind: 'examples', weight: 2, sentences: 12 });
    // The option still decides when given.
    const plainWords = await train({ ...request, unlabeled: texts }, { labelWords: { kind: 'none' } });
    expect(plainWords.manifest.training.label_words).toBeUndefined();
    expect(plainWords.manifest.training.self_training).toEqual({ share: 0.5, rounds: 1, unlabeled: 200 });
    classifier.dispose();
    plainWords.dispose();
  });

  it("estimates a fine-tuned model's accuracy on the base encoder, self-training in every fold on the texts it embeds", async () => {
    // An adapter's encoder saw every example, so the estimate is the base encoder's: the examples, the label
    // words and the unlabelled texts as the base encoder embeds them, self-trained in each fold as the head is.
    const few = texts.slice(0, 40);
    const classifier = await train({ ...request, finetune: { method: 'adapter' }, unlabeled: few }, { seed: 7 });
    const expected = await fitOnBase(few);
    expect(classifier.manifest.body).toBe('adapter');
    expect(classifier.metrics.cv_encoder).toBe('base');
    expect(classifier.metrics.cv_accuracy).toBe(expected.crossValidation!.accuracy);
    expect(classifier.metrics.cv_macro_f1).toBe(expected.crossValidation!.macroF1);
    expect(classifier.manifest.training.self_training).toEqual({ share: 0.5, rounds: 1, unlabeled: 40 });
    // Every fold self-trained: the out-of-fold probabilities are not those of the head fitted without the texts.
    expect(Array.from(expected.outOfFold!)).not.toEqual(Array.from((await fitOnBase(null)).outOfFold!));
    classifier.dispose();
    // One adapter fine-tuning run (a few seconds on a quiet machine).
  }, 300_000);

  it('refuses unlabeled texts on a multi-label request, and a text that is not a string', async () => {
    const labelled = examples.map((e) => ({ text: e.text, labels: [e.label ? 'positive' : 'negative'] }));
    await expect(
      train({ model: 'svc-small', task_type: 'multi-label-classification', finetune: false, examples: labelled, unlabeled: texts }),
    ).rejects.toThrow('unlabeled is used by binary and multi-class requests only');
    await expect(train({ ...request, unlabeled: [1] as never })).rejects.toThrow('unlabeled[0] must be a string');
  });
});
