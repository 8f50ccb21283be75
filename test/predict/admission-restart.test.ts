// A service that has just started, with the bounds `svc serve` runs with: its first call pays for the workers
// starting and the encoder loading, and that must not make the next, longer call look like minutes of work. Each
// test starts the library afresh (new modules: a new pool, no speed measured yet), as a restarted `svc serve` is.
import { afterEach, describe, expect, it, vi } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { kLevelSlowdown } from '../_support/level.js';

// A 2,000-character text, an e-mail's length: the encoder reads its first 256 tokens, or all of it in three windows.
const email = uciSentences('imdb')
  .map((row) => row.text)
  .join(' ')
  .slice(0, 2000);

let closePool: (() => Promise<void>) | undefined;

afterEach(async () => {
  await closePool?.();
  closePool = undefined;
});

/** The library as a process that just started loads it, bounded as the service bounds it. */
async function restarted() {
  vi.resetModules();
  const pool = await import('../../src/pool/pool.js');
  const batcher = await import('../../src/predict/batcher.js');
  const windows = await import('../../src/predict/embed-windows.js');
  closePool = pool.closePool;
  batcher.configurePredictQueue(batcher.kServicePredictQueue);
  const embed = (texts: string[], mode: 'end' | 'chunks') =>
    windows.embedTexts('svc-small', texts, mode, { tenant: 'acme', paramOf: (i) => `inputs[${i}]` });
  return { embed };
}

describe('admission after a restart', () => {
  it(
    "takes a 2,000-character text after the first call, 'hi', paid for the start-up",
    async () => {
      const { embed } = await restarted();
      expect((await embed(['hi'], 'end')).truncated).toEqual([false]);
      const answer = await embed([email], 'end');
      expect(answer).toMatchObject({ truncated: [true], chunks: [1] });
      expect(answer.embeddings).toHaveLength(384);
    },
    60_000 * kLevelSlowdown,
  );

  it(
    "takes two reviews at once after 'hi': the second waits behind the first, at the speed measured without the start-up",
    async () => {
      const { embed } = await restarted();
      await embed(['hi'], 'end');
      // The second call comes while the first waits for its batch: the pool is not idle, the estimate decides
      // (254 tokens: about 1.5 s at the scalar kernel level, a minute at the speed 'hi' measured with its start-up).
      const review = email.slice(0, 500);
      const answers = await Promise.all([embed([review], 'end'), embed([review], 'end')]);
      expect(answers.map((answer) => answer.truncated)).toEqual([[false], [false]]);
    },
    60_000 * kLevelSlowdown,
  );

  it(
    "takes the same text read in chunks after 'hi'",
    async () => {
      const { embed } = await restarted();
      await embed(['hi'], 'end');
      const answer = await embed([email], 'chunks');
      expect(answer).toMatchObject({ truncated: [false], chunks: [3] });
      expect(answer.embeddings).toHaveLength(384);
    },
    60_000 * kLevelSlowdown,
  );
});
