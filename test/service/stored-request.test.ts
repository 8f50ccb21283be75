// A /v2/train job keeps the request's options beside its examples (src/service/examples.ts): the request
// the job runs is the one that was sent, `unlabeled` texts included.
import { describe, expect, it } from 'vitest';

import { storedExamples, storedTrainingOptions, storedTrainRequest } from '../../src/service/examples.js';
import { validateTrainRequest } from '../../src/contract/train-request.js';

describe('a stored train job', () => {
  const examples = Array.from({ length: 20 }, (_, i) => ({ text: `text ${i}`, label: i % 2 === 0, label_text: 'positive' }));

  it('runs with the unlabeled texts it was sent', () => {
    const request = validateTrainRequest({
      model: 'svc-small',
      task_type: 'binary-classification',
      examples,
      finetune: false,
      unlabeled: ['one more text', ''],
    });
    // The options go through JSON in the store.
    const options = JSON.parse(JSON.stringify(storedTrainingOptions(request))) as Record<string, unknown>;
    const again = storedTrainRequest('svc-small', 'binary-classification', storedExamples(request), options);
    expect(again.unlabeled).toEqual(['one more text', '']);
    expect(validateTrainRequest(again)).toEqual(request);
  });

  it('runs without them when none were sent', () => {
    const request = validateTrainRequest({ model: 'svc-small', task_type: 'binary-classification', examples, finetune: false });
    const options = JSON.parse(JSON.stringify(storedTrainingOptions(request))) as Record<string, unknown>;
    const again = storedTrainRequest('svc-small', 'binary-classification', storedExamples(request), options);
    expect(validateTrainRequest(again).unlabeled).toBeUndefined();
  });
});
