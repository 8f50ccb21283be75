// A classify request without task_type: the task read from the examples' labels when they agree (boolean, string,
// label arrays), a 400 naming the first example that differs when they do not, and an explicit task_type kept.
import { describe, expect, it } from 'vitest';

import { validateClassifyRequest } from '../../src/contract/classify-request.js';
import { SvcError } from '../../src/errors.js';

const body = (examples: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'svc-small', inputs: ['a text'], examples, ...extra });
const binary = ['a', 'b', 'c', 'd'].map((text, i) => ({ text, label: i < 2, label_text: 'billing question' }));
const classes = ['a', 'b', 'c', 'd'].map((text, i) => ({ text, label: i < 2 ? 'billing' : 'delivery' }));
const sets = ['a', 'b', 'c', 'd'].map((text, i) => ({ text, labels: i < 2 ? ['billing'] : ['delivery'] }));

function refusal(input: unknown): { message: string; param: string | null } {
  try {
    validateClassifyRequest(input);
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    return { message: (error as SvcError).message, param: (error as SvcError).param };
  }
  throw new Error('the request was accepted');
}

describe('classify request: task_type read from the examples', () => {
  it('reads binary from boolean labels, multi-class from string labels, multi-label from label arrays', () => {
    expect(validateClassifyRequest(body(binary)).task_type).toBe('binary-classification');
    expect(validateClassifyRequest(body(classes)).task_type).toBe('multi-class-classification');
    expect(validateClassifyRequest(body(sets)).task_type).toBe('multi-label-classification');
  });

  it('refuses examples of two kinds, naming the first that differs', () => {
    expect(refusal(body([...binary, { text: 'e', label: 'refund' }]))).toEqual({
      message:
        'examples[4] has a string label (multi-class) but examples[0] has a boolean label (binary): send examples of one kind, or task_type',
      param: 'examples[4]',
    });
    expect(refusal(body([sets[0], classes[1], ...sets.slice(2)]))).toEqual({
      message:
        'examples[1] has a string label (multi-class) but examples[0] has labels (multi-label): send examples of one kind, or task_type',
      param: 'examples[1]',
    });
  });

  it('keeps an explicit task_type, and refuses one the examples disagree with', () => {
    expect(validateClassifyRequest(body(sets, { task_type: 'multi-label-classification' })).task_type).toBe('multi-label-classification');
    expect(refusal(body(binary, { task_type: 'multi-class-classification' })).param).toBe('examples[0].label');
  });

  it('still needs task_type with no examples, and names a misspelt field', () => {
    expect(refusal(body([], { labels: ['billing', 'delivery'] }))).toEqual({ message: 'task_type is required', param: 'task_type' });
    expect(refusal(body(binary, { threshhold: 0.3 })).message).toBe(
      "the request has unknown field 'threshhold' (did you mean 'threshold'?)",
    );
  });

  it('takes a threshold for binary and multi-label calls, from 0 to 1', () => {
    expect(validateClassifyRequest(body(binary, { threshold: 0.3 }))).toMatchObject({ threshold: 0.3 });
    expect(validateClassifyRequest(body(sets, { threshold: { billing: 0.2 } }))).toMatchObject({ threshold: { billing: 0.2 } });
    expect(refusal(body(binary, { threshold: 1.5 }))).toEqual({ message: 'threshold must be a number from 0 to 1', param: 'threshold' });
    expect(refusal(body(classes, { threshold: 0.3 })).message).toBe("the request has unknown field 'threshold'");
  });
});
