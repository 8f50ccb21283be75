// The one "did you mean" rule the CLI (commands, options, examples-file columns) and the HTTP errors (body fields)
// suggest with.
import { describe, expect, it } from 'vitest';

import { closestName, didYouMean, editDistance } from '../src/did-you-mean.js';

describe('editDistance', () => {
  it('counts an insertion, a deletion, a replacement and a swap of neighbours as one edit each', () => {
    expect(editDistance('txt', 'text')).toBe(1);
    expect(editDistance('examples', 'example')).toBe(1);
    expect(editDistance('lavel', 'label')).toBe(1);
    expect(editDistance('exmaples', 'examples')).toBe(1);
    expect(editDistance('lable', 'label')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});

describe('closestName', () => {
  it('picks the nearest known name, letter case aside, within a third of the typed length', () => {
    expect(closestName('lable', ['text', 'label', 'label_text', 'labels'])).toBe('label');
    expect(closestName('TXT', ['text', 'label'])).toBe('text');
    expect(closestName('label_txt', ['text', 'label', 'label_text'])).toBe('label_text');
    // 'verbose' is four edits from 'version': a guess that far off would mislead.
    expect(closestName('verbose', ['help', 'version'])).toBeUndefined();
    expect(closestName('temperature', ['model', 'inputs'])).toBeUndefined();
    // Two-letter names allow one edit, not a jump to any short name.
    expect(closestName('ab', ['xy', 'ac'])).toBe('ac');
    expect(closestName('ab', ['xy'])).toBeUndefined();
  });

  it('takes an explicit bound, and gives ties to the earlier name', () => {
    expect(closestName('trian', ['train', 'predict'], 2)).toBe('train');
    expect(closestName('abcd', ['abzz'], 1)).toBeUndefined();
    expect(closestName('cat', ['bat', 'hat'])).toBe('bat');
  });
});

describe('didYouMean', () => {
  it("is the tail of a message naming an unknown name, or '' when nothing is close", () => {
    expect(`unknown field 'exmaples'${didYouMean('exmaples', ['model', 'examples'])}`).toBe(
      "unknown field 'exmaples' (did you mean 'examples'?)",
    );
    expect(didYouMean('temperature', ['model', 'inputs'])).toBe('');
  });
});
