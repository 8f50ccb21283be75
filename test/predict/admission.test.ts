// Admission by measured speed against an idle pool: an estimate gone wrong must not refuse a call that an idle
// pool starts at once, and must still refuse work that waits behind other work. No pool task runs here: the
// estimate is recorded by hand.
import { afterEach, describe, expect, it } from 'vitest';

import { admission, configurePredictQueue, kServicePredictQueue, meter, waiting } from '../../src/predict/admission.js';

// What a restarted service once measured on its first call, its start-up counted: 4 tokens a second.
meter.record(4, 1000);
const kOneBatch = 32_768;

afterEach(() => {
  configurePredictQueue();
});

describe('admission by measured speed', () => {
  it('takes a call of up to one batch on an idle pool whatever the estimate, and refuses a larger one', () => {
    configurePredictQueue(kServicePredictQueue);
    // A 2,000-character text: 256 estimated tokens, about 64 s at 4 tokens a second.
    expect(admission('acme', 1, 256, kOneBatch)).toBeNull();
    expect(admission('acme', 200, kOneBatch, kOneBatch)).toBeNull();
    expect(admission('acme', 201, kOneBatch + 1, kOneBatch)).toMatchObject({
      code: 'overloaded',
      retryAfterSeconds: 8188,
      message:
        'The service is overloaded: at the 4 tokens/s measured, this prediction would end in about 8192250 ms, too close to its deadline of 10000 ms; retry in 8188 seconds',
    });
  });

  it('refuses by the estimate a call that would wait behind others', () => {
    configurePredictQueue(kServicePredictQueue);
    waiting.add('other', 1, 16);
    try {
      expect(admission('acme', 1, 256, kOneBatch)).toMatchObject({
        code: 'overloaded',
        retryAfterSeconds: 63,
        message:
          'The service is overloaded: at the 4 tokens/s measured, this prediction would end in about 68000 ms, too close to its deadline of 10000 ms; retry in 63 seconds',
      });
    } finally {
      waiting.remove('other', 1, 16);
    }
  });

  it('takes anything without a deadline', () => {
    waiting.add('other', 1, 16);
    try {
      expect(admission('acme', 1, 256, kOneBatch)).toBeNull();
    } finally {
      waiting.remove('other', 1, 16);
    }
  });
});
