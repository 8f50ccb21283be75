import { describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { finetunePlan, labelNames } from '../../src/train/request.js';
import { kDefaultAdapterRank, kDefaultFinetuneMethod, validateTrainRequest } from '../../src/contract/train-request.js';

const example = (i: number, extra: Record<string, unknown> = {}) => ({
  text: `example ${i}`,
  label: i % 2 === 0,
  label_text: 'positive',
  ...extra,
});
const examples = (n: number) => Array.from({ length: n }, (_, i) => example(i));
const request = (overrides: Record<string, unknown> = {}) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  examples: examples(20),
  ...overrides,
});
/** examples(20) with example 3 replaced. */
const withExample3 = (extra: Record<string, unknown>) => {
  const list: unknown[] = examples(20);
  list[3] = example(3, extra);
  return request({ examples: list });
};

/** What a set too small to train on is told it can do instead. */
const kClassifyHint =
  'to label texts from fewer without training a model, classify needs only 2 examples per label ' +
  '(POST /v2/classify, svc classify, or classify() in the library)';

function failure(input: unknown): { message: string; param: string | null; code: string } {
  try {
    validateTrainRequest(input);
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    const { message, param, code } = error as SvcError;
    return { message, param, code };
  }
  throw new Error('expected validation to fail');
}

describe('validateTrainRequest', () => {
  it('returns a valid request as is', () => {
    const input = request();
    expect(validateTrainRequest(input)).toEqual(input);
  });

  it.each([
    [5, 'the request must be an object', null],
    [null, 'the request must be an object', null],
    [request({ model: undefined }), 'model is required', 'model'],
    [request({ model: 7 }), 'model must be a string', 'model'],
    [request({ model: 'svc-huge' }), "model must be one of svc-small (got 'svc-huge')", 'model'],
    [request({ task_type: undefined }), 'task_type is required', 'task_type'],
    [
      request({ task_type: 'regression' }),
      `task_type must be one of 'binary-classification', 'multi-class-classification', 'multi-label-classification' (got "regression")`,
      'task_type',
    ],
    [request({ examples: 'many' }), 'examples must be an array', 'examples'],
    [request({ examples: examples(19) }), `at least 20 examples are required (got 19); ${kClassifyHint}`, 'examples'],
    [request({ examples: examples(10_001) }), 'at most 10000 examples are allowed (got 10001)', 'examples'],
    [
      withExample3({ label: 'yes' }),
      'examples[3].label must be a boolean (got "yes"): write label: true or false, or for named classes send ' +
        'task_type: "multi-class-classification" with the class as label',
      'examples[3].label',
    ],
    [
      withExample3({ label: 'true' }),
      'examples[3].label must be a boolean, not the string "true": write true without quotes',
      'examples[3].label',
    ],
    [withExample3({ label: 0 }), 'examples[3].label must be a boolean (got 0): write false for 0', 'examples[3].label'],
    [withExample3({ label: 1 }), 'examples[3].label must be a boolean (got 1): write true for 1', 'examples[3].label'],
    [withExample3({ label: null }), 'examples[3].label must be a boolean (got null): write label: true or false', 'examples[3].label'],
    [withExample3({ label: undefined }), 'examples[3].label is required', 'examples[3].label'],
    [withExample3({ text: 42 }), 'examples[3].text must be a string', 'examples[3].text'],
    [withExample3({ text: '' }), 'examples[3].text must not be empty', 'examples[3].text'],
    [withExample3({ text: 'a'.repeat(100_001) }), 'examples[3].text must be at most 100000 characters (got 100001)', 'examples[3].text'],
    [withExample3({ label_text: '  ' }), 'examples[3].label_text must be a non-empty string', 'examples[3].label_text'],
    [withExample3({ label_text: 1 }), 'examples[3].label_text must be a non-empty string', 'examples[3].label_text'],
    [
      withExample3({ label_text: 'false' }),
      "examples[3].label_text must not be 'false' (that names the other class)",
      'examples[3].label_text',
    ],
    [withExample3({ score: 1 }), "examples[3] has unknown field 'score'", 'examples[3].score'],
    [withExample3({ label_text: 'negative' }), 'all examples must share one label_text', 'examples'],
    [request({ extra: true }), "the request has unknown field 'extra'", 'extra'],
    [request({ finetun: false }), "the request has unknown field 'finetun' (did you mean 'finetune'?)", 'finetun'],
    [
      request({ examples: undefined, exmaples: examples(20) }),
      "examples is required; the request has unknown field 'exmaples' (did you mean 'examples'?)",
      'examples',
    ],
    [
      withExample3({ label_text: undefined, label_txt: 'positive' }),
      "examples[3].label_text is required; examples[3] has unknown field 'label_txt' (did you mean 'label_text'?)",
      'examples[3].label_text',
    ],
    [
      request({ examples: examples(20).map((e) => ({ ...e, label: true })) }),
      'examples need at least one true and one false label',
      'examples',
    ],
  ])('rejects %#: %s', (input, message, param) => {
    expect(failure(input)).toEqual({ message, param, code: 'invalid_request' });
  });

  it('accepts 100,000-character texts and 10,000 examples', () => {
    const list = examples(10_000);
    list[0] = example(0, { text: 'b'.repeat(100_000) });
    expect(validateTrainRequest(request({ examples: list })).examples).toHaveLength(10_000);
  });

  it('names the first example at fault', () => {
    const list: unknown[] = examples(20);
    list[5] = null;
    list[9] = example(9, { label: 1 });
    expect(failure(request({ examples: list }))).toEqual({
      message: 'examples[5] must be an object',
      param: 'examples[5]',
      code: 'invalid_request',
    });
  });
});

// Three classes of eight examples, the fewest a multi-class request may carry.
const classExamples = (perClass = 8, classes = ['amazon', 'imdb', 'yelp']) =>
  classes.flatMap((label) => Array.from({ length: perClass }, (_, i) => ({ text: `${label} review ${i}`, label })));
const multiClass = (overrides: Record<string, unknown> = {}) => ({
  model: 'svc-small',
  task_type: 'multi-class-classification',
  examples: classExamples(),
  ...overrides,
});
const labelSets = [['price'], ['speed'], ['price', 'speed'], []];
const multiLabel = (overrides: Record<string, unknown> = {}) => ({
  model: 'svc-small',
  task_type: 'multi-label-classification',
  examples: Array.from({ length: 20 }, (_, i) => ({ text: `review ${i}`, labels: labelSets[i % 4] })),
  ...overrides,
});

describe('validateTrainRequest: multi-class and multi-label', () => {
  it('returns valid requests as they are, with their sorted label names', () => {
    const classes = multiClass({ class_weight: 'balanced', validation: [{ text: 'held out', label: 'yelp' }], finetune: false });
    expect(validateTrainRequest(classes)).toEqual(classes);
    expect(labelNames(validateTrainRequest(multiClass({ examples: classExamples(8, ['yelp', 'amazon']) })) as never)).toEqual([
      'amazon',
      'yelp',
    ]);
    const labels = multiLabel({ validation: [{ text: 'held out', labels: [] }] });
    expect(validateTrainRequest(labels)).toEqual(labels);
    expect(labelNames(validateTrainRequest(labels) as never)).toEqual(['price', 'speed']);
  });

  it.each([
    [
      multiClass({ examples: [...classExamples(8, ['amazon', 'imdb']), ...classExamples(3, ['yelp'])] }),
      "the class 'yelp' has 3 examples; each class needs at least 8",
      'examples',
    ],
    [multiClass({ examples: classExamples(16, ['amazon']) }), 'examples need 2 to 100 classes (got 1)', 'examples'],
    [
      multiClass({
        examples: classExamples(
          8,
          Array.from({ length: 101 }, (_, i) => `c${i}`),
        ),
      }),
      'examples need 2 to 100 classes (got 101)',
      'examples',
    ],
    [multiClass({ examples: classExamples(5, ['a', 'b']) }), `at least 16 examples are required (got 10); ${kClassifyHint}`, 'examples'],
    [
      multiClass({ examples: [{ text: 'x', label: true }, ...classExamples()] }),
      'examples[0].label must be a non-empty string',
      'examples[0].label',
    ],
    [
      multiClass({ examples: [{ text: 'x', label: ' ' }, ...classExamples()] }),
      'examples[0].label must be a non-empty string',
      'examples[0].label',
    ],
    [
      multiClass({ examples: [{ text: 'x', label: 'a', label_text: 'b' }, ...classExamples()] }),
      "examples[0] has unknown field 'label_text'",
      'examples[0].label_text',
    ],
    [multiClass({ class_weight: 'auto' }), `class_weight must be 'balanced' (got "auto")`, 'class_weight'],
    [multiClass({ validation: [] }), 'validation must hold at least one example', 'validation'],
    [
      multiClass({ validation: [{ text: 'x', label: 'ebay' }] }),
      "validation[0] names the label 'ebay', which no training example has",
      'validation[0]',
    ],
    [multiClass({ finetune: false, num_iterations: 3 }), 'num_iterations is only used when finetune is true', 'num_iterations'],
    [
      multiLabel({ examples: multiLabel().examples.map((e) => ({ ...e, labels: ['price'] })) }),
      'examples need 2 to 100 distinct labels (got 1)',
      'examples',
    ],
    [
      multiLabel({ examples: multiLabel().examples.slice(0, 19) }),
      `at least 20 examples are required (got 19); ${kClassifyHint}`,
      'examples',
    ],
    [multiLabel({ examples: [{ text: 'x', labels: ['a', 'a'] }] }), 'examples[0].labels must not name a label twice', 'examples[0].labels'],
    [multiLabel({ examples: [{ text: 'x', labels: 'a' }] }), 'examples[0].labels must be an array of strings', 'examples[0].labels'],
    [
      multiLabel({ examples: [{ text: 'x', label: 'a' }] }),
      "examples[0].labels is required; examples[0] has unknown field 'label' (did you mean 'labels'?)",
      'examples[0].labels',
    ],
    [
      multiLabel({ validation: [{ text: 'x', labels: ['price', 'colour'] }] }),
      "validation[0] names the label 'colour', which no training example has",
      'validation[0]',
    ],
  ])('rejects %#: %s', (input, message, param) => {
    expect(failure(input)).toEqual({ message, param, code: 'invalid_request' });
  });
});

describe('the finetune field', () => {
  it('takes a boolean or a method with an optional rank, and says what each means', () => {
    for (const finetune of [true, false, { method: 'full' }, { method: 'adapter' }, { method: 'adapter', rank: 4 }]) {
      expect(validateTrainRequest(request({ finetune })).finetune).toEqual(finetune);
    }
    expect(finetunePlan({})).toEqual({ method: kDefaultFinetuneMethod, ...(kDefaultFinetuneMethod === 'adapter' ? { rank: 8 } : {}) });
    expect(finetunePlan({ finetune: true })).toEqual(finetunePlan({}));
    expect(finetunePlan({ finetune: false })).toBeNull();
    expect(finetunePlan({ finetune: { method: 'full' } })).toEqual({ method: 'full' });
    expect(finetunePlan({ finetune: { method: 'adapter' } })).toEqual({ method: 'adapter', rank: kDefaultAdapterRank });
    expect(finetunePlan({ finetune: { method: 'adapter', rank: 2 } })).toEqual({ method: 'adapter', rank: 2 });
  });

  it.each([
    [{ method: 'lora' }, `finetune.method must be 'adapter' or 'full' (got "lora")`, 'finetune.method'],
    [{ method: 'adapter', rank: 0 }, 'finetune.rank must be at least 1', 'finetune.rank'],
    [{ method: 'adapter', rank: 65 }, 'finetune.rank must be at most 64', 'finetune.rank'],
    [{ method: 'adapter', rank: 2.5 }, 'finetune.rank must be an integer', 'finetune.rank'],
    [{ method: 'full', rank: 4 }, "finetune.rank is only used when method is 'adapter'", 'finetune.rank'],
    [{ method: 'adapter', alpha: 4 }, "finetune has unknown field 'alpha'", 'finetune.alpha'],
    ['adapter', "finetune must be a boolean or { method: 'adapter' | 'full', rank? }", 'finetune'],
  ])('rejects %j', (finetune, message, param) => {
    expect(failure(request({ finetune }))).toEqual({ message, param, code: 'invalid_request' });
  });
});
