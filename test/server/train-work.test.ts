// The work one train request may ask for: at most kMaxTrainTokens tokens of text to embed (examples, validation
// and unlabelled texts, estimated at 4 characters a token, each text at most the 256 the encoder reads unless
// truncate is 'chunks'). Past it, POST /v2/train and POST /v2/models/{id}/versions answer 413 before a job is
// queued; at it, the job is queued. A real SQLite store, the word-count runtime, the routes' default body limit.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { emailBodies, uciSentences } from '../../fixtures/corpora.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive',
}));
// The review's request: 10,000 unlabelled e-mail texts of 1,550 characters (15.5 MB), each read as 256 tokens.
const long = emailBodies(3000, 4000).filter((text) => text.length >= 1550);
const unlabeled = (count: number) => Array.from({ length: count }, (_, i) => long[i % long.length].slice(0, 1550));
const request = { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false };
// The examples' own tokens by the documented estimate: ceil(characters / 4) + 2 each (none reaches 256).
const exampleTokens = examples.reduce((sum, example) => sum + Math.ceil(example.text.length / 4) + 2, 0);

let dir: string;
let app: FastifyInstance;
let service: SvcService;
let key: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-train-work-'));
  service = new SvcService({ store: SqliteStore.open(dir), runtime: new WordCountRuntime(join(dir, 'hub')) });
  await service.start();
  await service.createOrganization('acme');
  key = (await service.createApiKey('acme')).key;
  app = Fastify();
  await app.register(svcRoutes, { prefix: '/v2', service });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await app.inject({ method: 'POST', url, payload: body as object, headers: { authorization: `Bearer ${key}` } });
  return { status: response.statusCode, body: response.json() as Record<string, unknown> };
}

const tooLarge = (tokens: number, read = 'at most 256 a text, as the encoder reads it') => ({
  status: 413,
  body: {
    error: {
      message:
        `The request asks to embed about ${tokens} tokens of text (its examples, validation and unlabeled texts, estimated at ` +
        `4 characters a token, ${read}); one training request may ask for at most 1000000`,
      type: 'request_too_large',
      param: null,
      code: 'payload_too_large',
    },
  },
});

describe('the work a train request may ask for', () => {
  it('answers 413 naming the bound and the figure for 10,000 unlabelled texts of 1,550 characters, and queues nothing', async () => {
    expect(exampleTokens).toBeGreaterThan(0);
    expect(await post('/v2/train', { ...request, unlabeled: unlabeled(10_000) })).toEqual(tooLarge(2_560_000 + exampleTokens));
    expect(await service.store.listModels('acme')).toEqual([]);
  });

  it('counts validation texts, and each text whole with truncate chunks', async () => {
    const validation = unlabeled(3_000).map((text, i) => ({ text, label: i % 2 === 0, label_text: 'positive' }));
    expect(await post('/v2/train', { ...request, validation, unlabeled: unlabeled(1_000) })).toEqual(tooLarge(exampleTokens + 4_000 * 256));
    // 2,600 texts of 1,550 characters read whole: 390 tokens each, where the other modes count 256.
    expect(await post('/v2/train', { ...request, truncate: 'chunks', unlabeled: unlabeled(2_600) })).toEqual(
      tooLarge(exampleTokens + 2_600 * 390, "each text whole, as truncate 'chunks' reads it"),
    );
    expect(await service.store.listModels('acme')).toEqual([]);
  });

  it('queues a request at the bound, and bounds a new version of a classifier the same way', async () => {
    // The most 1,550-character texts that fit beside the examples.
    const fits = Math.floor((1_000_000 - exampleTokens) / 256);
    const queued = await post('/v2/train', { ...request, unlabeled: unlabeled(fits) });
    expect([queued.status, queued.body.status]).toEqual([200, 'training']);
    await service.idle();
    const id = queued.body.id as string;
    expect(await post(`/v2/models/${id}/versions`, { ...request, unlabeled: unlabeled(fits + 1) })).toEqual(
      tooLarge(exampleTokens + (fits + 1) * 256),
    );
    expect((await service.store.listModels('acme')).length).toBe(1);
  });
});
