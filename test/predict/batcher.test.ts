import { afterEach, describe, expect, it } from 'vitest';

import { configurePredictQueue, kServicePredictQueue } from '../../src/predict/batcher.js';

afterEach(() => {
  configurePredictQueue();
});

describe('configurePredictQueue', () => {
  it('leaves the queue unbounded unless asked, and takes the bounds a service runs with', () => {
    expect(configurePredictQueue()).toEqual({ maxWaitingTexts: Infinity, maxTenantTexts: Infinity, deadlineMs: Infinity });
    expect(configurePredictQueue(kServicePredictQueue)).toEqual({ maxWaitingTexts: 2048, maxTenantTexts: 1024, deadlineMs: 10_000 });
    expect(configurePredictQueue({ deadlineMs: 500 })).toEqual({ maxWaitingTexts: Infinity, maxTenantTexts: Infinity, deadlineMs: 500 });
  });

  it('validates its options', () => {
    expect(() => configurePredictQueue({ maxWaitingTexts: 0 })).toThrow(
      new RangeError('options.maxWaitingTexts must be a positive integer'),
    );
    expect(() => configurePredictQueue({ maxTenantTexts: 1.5 })).toThrow(
      new TypeError('options.maxTenantTexts must be a positive integer'),
    );
    expect(() => configurePredictQueue({ deadlineMs: 2.5 })).toThrow(
      new TypeError('options.deadlineMs must be an integer from 1 to 2147483647'),
    );
    expect(() => configurePredictQueue({ deadlineMs: 2 ** 31 })).toThrow(
      new RangeError('options.deadlineMs must be an integer from 1 to 2147483647'),
    );
  });
});
