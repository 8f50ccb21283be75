// The public types of classify(), pinned: its options, the threshold a binary or multi-label call takes, and a task
// type that may be left to the examples.
import { expectTypeOf } from 'expect-type';
import { describe, it } from 'vitest';

import { classify, type ClassifyOptions, type ClassifyResponse } from '../../src/index.js';

describe('classify types', () => {
  it('takes a threshold for every label or per label, and no task type when the examples say it', () => {
    expectTypeOf<ClassifyOptions['threshold']>().toEqualTypeOf<number | Readonly<Record<string, number>> | undefined>();
    expectTypeOf(classify).toBeCallableWith(['Why was I charged twice?'], [], {
      taskType: 'binary-classification',
      labelText: 'billing question',
      threshold: 0.3,
    });
    expectTypeOf(classify).toBeCallableWith(['a text'], [{ text: 'a', labels: ['billing'] }], { threshold: { billing: 0.3 } });
    expectTypeOf(classify(['a text'], [])).resolves.toEqualTypeOf<ClassifyResponse>();
  });
});
