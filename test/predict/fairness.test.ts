// Predict work shared between tenants, on the real encoder and pool: a tenant's large call goes out as
// many short batches and another tenant's call rides in the next one; a call's deadline bounds its parts
// no worker has started; an aborted call drops its texts not in a batch yet; a tenant over its share of
// the queue is refused, others not.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { closePool } from '../../src/pool/pool.js';
import { batchStats, configurePredictQueue } from '../../src/predict/batcher.js';
import type { Classifier } from '../../src/predict/classifier.js';
import { train } from '../../src/train/train.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const sentences = imdb.map((r) => r.text);
// About a kilobyte each, as in the review that found the hole: the encoder's full 256 tokens.
const long = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => Array.from({ length: 14 }, (_, k) => sentences[((from + i) * 14 + k) % sentences.length]).join(' '));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const untilBatchSent = async (batches: number) => {
  while (batchStats().batches === batches) await sleep(1);
};

let classifier: Classifier;
beforeAll(async () => {
  classifier = await train({
    model: 'svc-small',
    task_type: 'binary-classification',
    finetune: false,
    examples: [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
      text: r.text,
      label: r.label,
      label_text: 'positive',
    })),
  });
  // The batcher sizes batches by the speed it measured: let it measure some.
  for (let i = 0; i < 4; i += 1) await classifier.predict(long(8, i * 8));
}, 120_000 * kLevelSlowdown);
afterEach(() => {
  configurePredictQueue();
});
afterAll(async () => {
  await closePool();
});

describe('predict fairness between tenants', () => {
  it(
    "answers a tenant's call in the batch after the running one, while another tenant's 48 long texts wait",
    async () => {
      const big = long(48);
      const before = batchStats();
      let bigDone = false;
      const flood = classifier.predict(big, { tenant: 'b' }).then((r) => {
        bigDone = true;
        return r;
      });
      await untilBatchSent(before.batches);
      const arrived = batchStats().batches;
      const mine = await classifier.predict(sentences.slice(0, 8), { tenant: 'a' });
      // Two batches went out since A's call came: its own first (B filling the room it left), and B's next one,
      // sent as A's batch ended (before A's promise settles).
      expect(batchStats().batches - arrived).toBe(2);
      expect(bigDone).toBe(false);
      expect(mine).toHaveLength(8);
      // B's call, cut text by text into many batches, comes back whole and in order.
      const flooded = await flood;
      expect(batchStats().batches - before.batches).toBeGreaterThan(8);
      const alone = await classifier.predict([big[0], big[25], big[47]]);
      expect([flooded[0], flooded[25], flooded[47]].map((p) => p.probability)).toEqual(alone.map((p) => expect.closeTo(p.probability, 5)));
    },
    120_000 * kLevelSlowdown,
  );

  it(
    'refuses a call whose parts no worker started within its deadline, though its first part ran',
    async () => {
      // B alone: how long its call takes here, now.
      const mine = long(16, 7);
      const started = performance.now();
      await classifier.predict(mine, { tenant: 'b' });
      const alone = performance.now() - started;
      const deadlineMs = Math.max(1000, Math.round(3 * alone));
      configurePredictQueue({ deadlineMs });
      const before = batchStats().batches;
      const call = classifier.predict(mine, { tenant: 'b' }).then(
        () => 'answered',
        (error: { code: string; message: string }) => `${error.code}: ${error.message}`,
      );
      await untilBatchSent(before);
      // Eight more tenants, each keeping two calls waiting: B now leads one batch in nine.
      let stop = false;
      const tenants = Array.from({ length: 16 }, async (_, i) => {
        while (!stop) await classifier.predict(long(2, 100 + i * 2), { tenant: `t${i % 8}` }).catch(() => sleep(5));
      });
      const outcome = await call;
      stop = true;
      await Promise.all(tenants);
      // Refused when the speed measured says it would end past its deadline, or at the latest when the deadline passes.
      expect(outcome).toMatch(
        new RegExp(
          `^overloaded: The service is overloaded: (at the \\d+ tokens/s measured, the prediction would end past its deadline of ${deadlineMs} ms|the prediction waited ${deadlineMs} ms for a worker); retry in 2 seconds$`,
        ),
      );
    },
    120_000 * kLevelSlowdown,
  );

  it(
    'drops the texts of an aborted call that are not in a batch yet',
    async () => {
      const before = batchStats();
      const controller = new AbortController();
      const call = classifier.predict(long(256, 3), { tenant: 'b', signal: controller.signal });
      await untilBatchSent(before.batches);
      controller.abort();
      await expect(call).rejects.toMatchObject({ code: 'aborted' });
      // The batch that was running ends; nothing of the call goes out after it.
      await sleep(500);
      const sent = batchStats().texts - before.texts;
      expect(sent).toBeLessThan(128);
      await sleep(300);
      expect(batchStats().texts - before.texts).toBe(sent);
    },
    60_000 * kLevelSlowdown,
  );

  it(
    "refuses a tenant's call beyond its share of the queue with 429, and takes another tenant's",
    async () => {
      configurePredictQueue({ maxTenantTexts: 50 });
      const controller = new AbortController();
      const first = classifier.predict(long(80, 11), { tenant: 'b', signal: controller.signal });
      await expect(classifier.predict(sentences.slice(0, 8), { tenant: 'b' })).rejects.toMatchObject({
        code: 'rate_limited',
        status: 429,
        retryAfterSeconds: expect.any(Number),
        message: expect.stringMatching(
          /^Too many predictions queued: \d+ texts of 'b' are waiting for a worker and one organization may have 50 waiting; retry in \d+ seconds$/,
        ),
      });
      expect(await classifier.predict(sentences.slice(0, 8), { tenant: 'a' })).toHaveLength(8);
      controller.abort();
      await expect(first).rejects.toMatchObject({ code: 'aborted' });
    },
    60_000 * kLevelSlowdown,
  );
});
