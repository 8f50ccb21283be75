// classify() between tenants (the service's organizations): fitted heads are cached per tenant, a fit
// one call joined survives the call that started it going away, and a call whose fit would be too large
// is refused before any work.
import { afterAll, describe, expect, it } from 'vitest';

import { kMaxClassifyFitCells } from '../../src/contract/classify-request.js';
import { backgroundStats, closePool, keepWorkerForPredictions } from '../../src/pool/pool.js';
import { cachedClassifyHeads, classify, clearClassifyHeads } from '../../src/train/classify.js';
import { imdbExamples } from '../_support/examples.js';
import { refusal } from '../_support/refusal.js';

afterAll(async () => {
  await closePool();
});

const examples = imdbExamples(0, 10);
const inputs = ['An absolutely wonderful, moving film.', 'Terrible, boring and a complete waste of time.'];

describe('classify between tenants', () => {
  it("keeps each tenant's fitted heads apart: the same examples from another tenant are fitted again", async () => {
    clearClassifyHeads();
    const first = await classify(inputs, examples, { tenant: 'org-a' });
    expect(cachedClassifyHeads()).toBe(1);
    expect(await classify(inputs, examples, { tenant: 'org-a' })).toEqual(first);
    expect(cachedClassifyHeads()).toBe(1);
    // Another organization never meets org-a's head (no timing to read), and gets the same answer from its own fit.
    expect(await classify(inputs, examples, { tenant: 'org-b' })).toEqual(first);
    expect(cachedClassifyHeads()).toBe(2);
  });

  it('answers a call that joined a fit whose first caller went away', async () => {
    clearClassifyHeads();
    const controller = new AbortController();
    const starter = classify(inputs, examples, { tenant: 'org-a', signal: controller.signal });
    // Same tenant, same examples: this call finds the pending fit and waits on it.
    const joiner = classify(inputs, examples, { tenant: 'org-a' });
    controller.abort();
    expect((await refusal(starter)).code).toBe('aborted');
    const answer = await joiner;
    expect(answer.predictions.map((p) => (p as { label: boolean }).label)).toEqual([true, false]);
  });

  it(`refuses a call whose head would fit more than ${kMaxClassifyFitCells} examples x classes`, async () => {
    const classes = 100;
    const perClass = Math.floor(kMaxClassifyFitCells / classes / classes) + 1;
    const many = Array.from({ length: classes * perClass }, (_, i) => ({ text: `text ${i}`, label: `class ${i % classes}` }));
    const n = many.length;
    expect(await refusal(classify(['x'], many, { tenant: 'org-a' }))).toEqual({
      code: 'invalid_request',
      message:
        `a classify call fits its head while it runs: examples x classes may be at most ${kMaxClassifyFitCells} ` +
        `(got ${n} x ${classes} = ${n * classes}); send fewer examples, or train a model (POST /v2/train)`,
      param: 'examples',
    });
  });

  it("fits on training's share of the pool: with a worker kept for predictions, another tenant's call is answered meanwhile", async () => {
    clearClassifyHeads();
    keepWorkerForPredictions(true);
    try {
      await classify(inputs, examples, { tenant: 'org-a' }); // org-a's head is cached: its next call only embeds its inputs
      const classes = 100;
      const large = (salt: string) =>
        Array.from({ length: classes * 6 }, (_, i) => ({ text: `${salt} review ${i} of topic ${i % 17}`, label: `class ${i % classes}` }));
      let fitsDone = 0;
      const fits = ['first', 'second'].map((salt) => classify(['x'], large(salt), { tenant: 'org-b' }).finally(() => fitsDone++));
      while (backgroundStats().running === 0) await new Promise((r) => setTimeout(r, 5));
      const answer = await classify(inputs, examples, { tenant: 'org-a' });
      expect(answer.predictions.map((p) => (p as { label: boolean }).label)).toEqual([true, false]);
      // Both of org-b's fits were still to finish, one running on the share (2 workers: 1), the other embedding or waiting.
      expect(fitsDone).toBe(0);
      expect(backgroundStats().running).toBe(1);
      for (const fit of await Promise.all(fits)) expect(fit.predictions).toHaveLength(1);
    } finally {
      keepWorkerForPredictions(false);
    }
  });
});
