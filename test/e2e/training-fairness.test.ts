// Organizations share the training worker task by task: on a real server (SQLite file, the library runtime, the
// default 2 workers x 1 engine thread, so one worker trains), org A queues a large job (20 examples and 400
// unlabelled e-mail texts of 1,550 characters: about 100,000 tokens to embed, some 20 s of one engine thread on a quiet machine), and
// org B a 20-example frozen job once A's is running. B's job runs beside A's instead of after it: its tasks take
// turns with A's embedding chunks (at most 4,096 estimated tokens each), so it waits for a few of A's chunks, not
// for A's whole job. Before, a replica ran one job per training worker and B's waited until A's ended.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { emailBodies, uciSentences } from '../../fixtures/corpora.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { kLevelSlowdown } from '../_support/level.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const small = { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false };
const kUnlabeled = 400;
const unlabeled = emailBodies(3000, 4000)
  .filter((text) => text.length >= 1550)
  .slice(0, kUnlabeled)
  .map((text) => text.slice(0, 1550));
const large = { ...small, unlabeled };
// A's embedding chunks: 16 texts of 1,550 characters (256 tokens each as the encoder reads them) make 4,096 tokens.
const kLargeChunks = Math.ceil(kUnlabeled / 16);

let dir: string;
let server: RunningServer;
const keys: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-training-fairness-'));
  server = await startServer({ dataDir: dir, port: 0, pool: { workers: 2, engineThreads: 1 } });
  for (const org of ['a', 'b']) {
    await server.service.createOrganization(org);
    // The test polls every 50 ms, far above the default requests per minute: that limit is not what it tests.
    await server.service.setOrgLimits(org, { requestsPerMinute: 1_000_000 });
    keys[org] = (await server.service.createApiKey(org)).key;
  }
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(org: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${keys[org]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** Starts training `body` for `org`; `done` resolves with the milliseconds from the request to `trained`. */
async function train(org: string, body: unknown): Promise<{ id: string; done: Promise<number> }> {
  const started = performance.now();
  const id = (await call(org, 'POST', '/v2/train', body)).id as string;
  const done = (async () => {
    for (;;) {
      const status = (await call(org, 'GET', `/v2/models/${id}`)).status;
      if (status !== 'training') {
        expect(status).toBe('trained');
        return performance.now() - started;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return { id, done };
}

describe('training jobs of two organizations', () => {
  it(
    "runs a small job of org B beside org A's large one, finishing in about its own time",
    async () => {
      // B's job on an idle server, for what "its own time" is (the encoder loaded by it, as it is for the later one).
      const soloMs = await (await train('b', small)).done;
      const a = await train('a', large);
      // Once A's job runs (claimed; its texts going through the pool), B sends its own.
      while ((await server.service.store.getJob(a.id))?.state !== 'running') await new Promise((r) => setTimeout(r, 50));
      const bMs = await (await train('b', small)).done;
      const aWhenBEnded = (await call('a', 'GET', `/v2/models/${a.id}`)).status;
      const aMs = await a.done;
      console.log(`B alone ${soloMs.toFixed(0)} ms, B beside A ${bMs.toFixed(0)} ms, A ${aMs.toFixed(0)} ms (${kLargeChunks} chunks)`);
      // Well before A's: A was still training when B's was trained, and B's took a small part of A's time.
      expect(aWhenBEnded).toBe('training');
      expect(bMs).toBeLessThan(aMs / 3);
      // Within its own time and a few of A's chunks: each of B's three tasks (two embedding chunks, the fit) waits
      // for at most the A task running when it came; the bound allows eight of A's mean chunk time, and 2 s for the
      // polls and the HTTP round trips.
      expect(bMs).toBeLessThan(soloMs + (8 * aMs) / kLargeChunks + 2_000 * kLevelSlowdown);
    },
    300_000 * kLevelSlowdown,
  );
});
