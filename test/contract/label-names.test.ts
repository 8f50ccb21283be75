// Class and label names where they enter (the one label-name schema, which the train and classify requests share):
// stored in NFC, two spellings that differ only in letter case refused with both named, no control characters, and
// a binary label_text capped as class names are.
import { describe, expect, it } from 'vitest';

import { validateClassifyRequest } from '../../src/contract/classify-request.js';
import { kMaxLabelLength, labelNameKey, sameLabelNames } from '../../src/contract/labelled-examples.js';
import { validateTrainRequest } from '../../src/contract/train-request.js';
import { SvcError } from '../../src/errors.js';

const composed = '\u00e9t\u00e9'; // été, one code point per letter
const decomposed = 'e\u0301te\u0301'; // été, each é as e + U+0301

const classes = (names: readonly string[], each = 8) =>
  names.flatMap((label, c) => Array.from({ length: each }, (_, i) => ({ text: `text ${c}-${i}`, label })));
const multiClass = (names: readonly string[], each?: number) => ({
  model: 'svc-small',
  task_type: 'multi-class-classification',
  examples: classes(names, each),
});
const binary = (labelText: string) => ({
  model: 'svc-small',
  task_type: 'binary-classification',
  examples: Array.from({ length: 20 }, (_, i) => ({ text: `text ${i}`, label: i % 2 === 0, label_text: labelText })),
});
const multiLabel = (sets: readonly string[][]) => ({
  model: 'svc-small',
  task_type: 'multi-label-classification',
  examples: Array.from({ length: 20 }, (_, i) => ({ text: `text ${i}`, labels: sets[i % sets.length] })),
});
const classifyBody = (body: Record<string, unknown>) => ({ model: 'svc-small', inputs: ['a text'], ...body });

function failure(validate: (input: unknown) => unknown, input: unknown): { message: string; param: string | null } {
  try {
    validate(input);
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe('invalid_request');
    return { message: (error as SvcError).message, param: (error as SvcError).param };
  }
  throw new Error('expected validation to fail');
}

describe('label names in a train request', () => {
  it('refuses two classes that differ only in letter case, naming both spellings', () => {
    expect(failure(validateTrainRequest, multiClass(['Billing', 'shipping', 'billing']))).toEqual({
      message: "'Billing' and 'billing' are one class name written two ways (they differ only in letter case); use one spelling",
      param: 'examples',
    });
    // Full case folding: 'ß' is 'ss'.
    expect(failure(validateTrainRequest, multiClass(['Straße', 'STRASSE']))).toEqual({
      message: "'Straße' and 'STRASSE' are one class name written two ways (they differ only in letter case); use one spelling",
      param: 'examples',
    });
  });

  it('stores names in NFC, so that "été" composed and decomposed is one class', () => {
    const parsed = validateTrainRequest(multiClass([composed, decomposed, 'hiver'], 8)) as { examples: { label: string }[] };
    expect([...new Set(parsed.examples.map((e) => e.label))]).toEqual([composed, 'hiver']);
    // One class of two spellings: 16 examples of été.
    expect(parsed.examples.filter((e) => e.label === composed)).toHaveLength(16);
    const labelText = (validateTrainRequest(binary(`positive ${decomposed}`)) as { examples: { label_text: string }[] }).examples;
    expect(new Set(labelText.map((e) => e.label_text))).toEqual(new Set([`positive ${composed}`]));
  });

  it('refuses a label set holding two spellings of one label, on one example or across them', () => {
    expect(failure(validateTrainRequest, multiLabel([['Price', 'price'], ['speed']]))).toEqual({
      message: "'Price' and 'price' are one label name written two ways (they differ only in letter case); use one spelling",
      param: 'examples[0].labels',
    });
    expect(failure(validateTrainRequest, multiLabel([['price'], ['speed'], ['Speed', 'colour']]))).toEqual({
      message: "'speed' and 'Speed' are one label name written two ways (they differ only in letter case); use one spelling",
      param: 'examples',
    });
    // Composed and decomposed on one example are one label named twice.
    expect(failure(validateTrainRequest, multiLabel([[composed, decomposed], ['speed']]))).toEqual({
      message: 'examples[0].labels must not name a label twice',
      param: 'examples[0].labels',
    });
  });

  it('refuses control characters (C0 with NUL, DEL, C1) in class names and label_text', () => {
    const at3 = (name: string) => {
      const body = multiClass(['billing', 'shipping']);
      body.examples[3] = { text: 'x', label: name };
      return body;
    };
    expect(failure(validateTrainRequest, at3('bil\u0000ling'))).toEqual({
      message: 'examples[3].label must not contain control characters (U+0000 at character 3)',
      param: 'examples[3].label',
    });
    expect(failure(validateTrainRequest, at3('billing\n'))).toEqual({
      message: 'examples[3].label must not contain control characters (U+000A at character 7)',
      param: 'examples[3].label',
    });
    expect(failure(validateTrainRequest, at3('\u007fbilling'))).toEqual({
      message: 'examples[3].label must not contain control characters (U+007F at character 0)',
      param: 'examples[3].label',
    });
    expect(failure(validateTrainRequest, at3('bill\u0085ing'))).toEqual({
      message: 'examples[3].label must not contain control characters (U+0085 at character 4)',
      param: 'examples[3].label',
    });
    expect(failure(validateTrainRequest, binary('positive\u0000'))).toEqual({
      message: 'examples[0].label_text must not contain control characters (U+0000 at character 8)',
      param: 'examples[0].label_text',
    });
  });

  it('caps label_text at the class-name limit, counted in NFC', () => {
    expect(failure(validateTrainRequest, binary('x'.repeat(700_000)))).toEqual({
      message: `examples[0].label_text must be at most ${kMaxLabelLength} characters (got 700000)`,
      param: 'examples[0].label_text',
    });
    // 200 decomposed letters are 400 code units, and 200 characters once composed: accepted.
    expect(validateTrainRequest(binary('\u00e9'.normalize('NFD').repeat(kMaxLabelLength))).examples[0]).toMatchObject({
      label_text: '\u00e9'.repeat(kMaxLabelLength),
    });
    expect(failure(validateTrainRequest, binary('False'))).toEqual({
      message: "examples[0].label_text must not be 'false' (that names the other class)",
      param: 'examples[0].label_text',
    });
  });
});

describe('label names in a classify request', () => {
  it("refuses zero-shot labels that differ only in letter case, and counts NFC's two spellings as one name twice", () => {
    const zeroShot = (labels: string[]) => classifyBody({ task_type: 'multi-class-classification', examples: [], labels });
    expect(failure(validateClassifyRequest, zeroShot(['Billing', 'billing']))).toEqual({
      message: "'Billing' and 'billing' are one label name written two ways (they differ only in letter case); use one spelling",
      param: 'labels',
    });
    expect(failure(validateClassifyRequest, zeroShot([composed, decomposed]))).toEqual({
      message: 'labels must not name a label twice',
      param: 'labels',
    });
    expect(
      failure(validateClassifyRequest, { ...zeroShot(['a', 'b']), task_type: 'multi-label-classification', labels: ['Speed', 'speed'] }),
    ).toEqual({
      message: "'Speed' and 'speed' are one label name written two ways (they differ only in letter case); use one spelling",
      param: 'labels',
    });
  });

  it('refuses classes that differ only in letter case, and caps and checks a zero-shot label_text', () => {
    expect(failure(validateClassifyRequest, classifyBody(multiClass(['Billing', 'billing'], 2)))).toEqual({
      message: "'Billing' and 'billing' are one class name written two ways (they differ only in letter case); use one spelling",
      param: 'examples',
    });
    const zeroShotBinary = (labelText: string) => classifyBody({ task_type: 'binary-classification', examples: [], label_text: labelText });
    expect(failure(validateClassifyRequest, zeroShotBinary('y'.repeat(700_000)))).toEqual({
      message: `label_text must be at most ${kMaxLabelLength} characters (got 700000)`,
      param: 'label_text',
    });
    expect(failure(validateClassifyRequest, zeroShotBinary('spam\u0000'))).toEqual({
      message: 'label_text must not contain control characters (U+0000 at character 4)',
      param: 'label_text',
    });
    expect(validateClassifyRequest(zeroShotBinary(decomposed))).toMatchObject({ label_text: composed });
  });
});

describe('labelNameKey and sameLabelNames', () => {
  it('fold case and composition, and name the first two spellings of one name', () => {
    expect(labelNameKey(decomposed)).toBe(composed);
    expect(labelNameKey('ÉTÉ')).toBe(composed);
    expect(sameLabelNames(['billing', 'shipping', 'BILLING', 'Billing'])).toEqual(['billing', 'BILLING']);
    expect(sameLabelNames(['billing', 'billing', 'shipping'])).toBeNull();
  });
});
