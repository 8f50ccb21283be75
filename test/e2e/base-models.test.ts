// A base model folder the user brings, through the service end to end: registered with startServer's `baseModels`
// option and with the real `svc serve --base-model` (bin/svc.js over dist/), trained over HTTP (frozen and with an
// adapter), predicted over HTTP and with `svc predict`, listed by `svc info`; and the start-ups that must fail: a bad
// entry, and a replica bringing other files under a name the store already holds.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { type RunningServer, startServer } from '../../src/server/app.js';
import { writeBroughtFolder } from '../_support/brought-folder.js';
import { exited, expectFreshBundle, kRepoRoot, startNode, svcBin } from '../_support/cli.js';
import { httpCall } from '../_support/http.js';
import { kLevelSlowdown } from '../_support/level.js';
import { usePostgres } from '../_support/postgres.js';

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const heldOut = [imdb.filter((r) => r.label)[100].text, imdb.filter((r) => !r.label)[100].text];
const kSvcBin = join(kRepoRoot, 'bin', 'svc.js');
const kListening = /svc listening on (http:\/\/\S+)/;
const pgServer = usePostgres();
// No database, Redis or log noise from the environment the suite runs in.
const kEnv = { SVC_DATABASE_URL: '', SVC_REDIS_URL: '', SVC_BASE_MODELS: '', SVC_LOG_LEVEL: 'warn' };

type Body = Record<string, unknown>;
type Prediction = { label: boolean; probability: number };

let dir: string;
let meanDir: string;
let clsDir: string;

beforeAll(() => {
  expectFreshBundle();
  dir = mkdtempSync(join(tmpdir(), 'svc-base-models-'));
  meanDir = writeBroughtFolder(join(dir, 'minilm'));
  clsDir = writeBroughtFolder(join(dir, 'minilm-cls'), { pooling: 'cls', normalize: false, maxSeqLength: 128 });
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function call(url: string, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: Body }> {
  const answer = await httpCall(url, method, path, key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as Body };
}

/** Trains over HTTP and polls until the model leaves `training`; returns the first and the last model object. */
async function trainToEnd(url: string, key: string, body: Body): Promise<{ started: Body; done: Body }> {
  const started = await call(url, 'POST', '/v2/train', key, { task_type: 'binary-classification', examples, ...body });
  expect(started.status).toBe(200);
  let done = started.body;
  for (let i = 0; i < 900 * kLevelSlowdown && done.status === 'training'; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    done = (await call(url, 'GET', `/v2/models/${String(started.body.id)}`, key)).body;
  }
  return { started: started.body, done };
}

async function predictions(url: string, key: string, model: string): Promise<Prediction[]> {
  const answer = await call(url, 'POST', '/v2/predict', key, { model, inputs: heldOut });
  expect(answer.status).toBe(200);
  return (answer.body.predictions as Prediction[]).map(({ label, probability }) => ({ label, probability }));
}

describe('a brought base model through startServer({ baseModels })', () => {
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    server = await startServer({
      dataDir: join(dir, 'library'),
      port: 0,
      baseModels: { 'minilm-brought': meanDir },
      pool: { precision: 'fp32' },
    });
    await server.service.createOrganization('acme');
    key = (await server.service.createApiKey('acme')).key;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('trains frozen and with an adapter on it; a frozen model predicts as one on svc-small, whose files it copies', async () => {
    const frozen = await trainToEnd(server.url, key, { model: 'minilm-brought', finetune: false });
    expect(frozen.started.id).toMatch(/^minilm-brought-[0-9a-f]{12}$/);
    expect([frozen.started.status, frozen.started.context_window]).toEqual(['training', 256]);
    expect([frozen.done.status, frozen.done.error, frozen.done.context_window]).toEqual(['trained', undefined, 256]);
    const reference = await trainToEnd(server.url, key, { model: 'svc-small', finetune: false });
    expect(reference.done.status).toBe('trained');
    // Same weights, same mean pooling and normalization: the same embeddings, so the same head and probabilities.
    const brought = await predictions(server.url, key, String(frozen.done.id));
    const builtin = await predictions(server.url, key, String(reference.done.id));
    expect(brought.map((p) => p.label)).toEqual(builtin.map((p) => p.label));
    for (const [i, p] of brought.entries()) expect(p.probability).toBeCloseTo(builtin[i].probability, 5);

    const adapter = await trainToEnd(server.url, key, { model: 'minilm-brought', finetune: { method: 'adapter' }, num_iterations: 1 });
    expect(adapter.started.id).toMatch(/^minilm-brought-[0-9a-f]{12}$/);
    expect([adapter.done.status, adapter.done.error, adapter.done.context_window]).toEqual(['trained', undefined, 256]);
    const tuned = await predictions(server.url, key, String(adapter.done.id));
    expect(tuned).toHaveLength(2);
    for (const p of tuned) expect([p.label, p.probability >= 0 && p.probability <= 1]).toEqual([p.probability >= 0.5, true]);
    const listed = (await call(server.url, 'GET', '/v2/models', key)).body.data as Body[];
    expect(listed.map((m) => m.id).sort()).toEqual([frozen.done.id, reference.done.id, adapter.done.id].sort());
  });

  it('classifies by examples on it (POST /v2/classify) as on svc-small, whose files it copies', async () => {
    const body = { task_type: 'binary-classification', inputs: heldOut, examples };
    const [brought, builtin] = await Promise.all(
      ['minilm-brought', 'svc-small'].map((model) => call(server.url, 'POST', '/v2/classify', key, { ...body, model })),
    );
    expect([brought.status, builtin.status]).toEqual([200, 200]);
    const probabilities = (answer: { body: Body }) => (answer.body.predictions as Prediction[]).map((p) => p.probability);
    for (const [i, p] of probabilities(brought).entries()) expect(p).toBeCloseTo(probabilities(builtin)[i], 5);
  });

  it('refuses a train request on a name nobody registered, listing the ones there are', async () => {
    const refused = await call(server.url, 'POST', '/v2/train', key, {
      model: 'minilm-other',
      task_type: 'binary-classification',
      examples,
    });
    expect(refused.status).toBe(400);
    expect((refused.body.error as Body).message).toBe("model must be one of svc-small, minilm-brought (got 'minilm-other')");
  });
});

describe('a brought base model through svc serve --base-model (bin/svc.js)', () => {
  const data = join(tmpdir(), `svc-base-models-serve-${process.pid}`);
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  it('registers the CLS variant, trains and predicts on it over HTTP and with svc predict; svc info lists it', async () => {
    await svcBin(['orgs', 'create', 'acme', '--data', data], kEnv);
    const key = (await svcBin(['keys', 'create', '--org', 'acme', '--data', data], kEnv)).stdout.trim();
    const served = await startNode([kSvcBin, 'serve', '--port', '0', '--data', data, '--base-model', `minilm-cls=${clsDir}`], kListening, {
      env: kEnv,
    });
    try {
      const { started, done } = await trainToEnd(served.url, key, { model: 'minilm-cls', finetune: false });
      expect(started.id).toMatch(/^minilm-cls-[0-9a-f]{12}$/);
      // sentence_bert_config.json's max_seq_length, within the 512 positions config.json gives.
      expect([done.status, done.error, done.context_window]).toEqual(['trained', undefined, 128]);
      const overHttp = await predictions(served.url, key, String(done.id));
      const cli = await svcBin(['predict', '--model', String(done.id), ...heldOut], { ...kEnv, SVC_URL: served.url, SVC_KEY: key });
      expect([cli.code, cli.stderr]).toEqual([0, '']);
      const printed = JSON.parse(cli.stdout) as { model: string; predictions: Prediction[] };
      expect(printed.model).toBe(done.id);
      expect(printed.predictions.map(({ label, probability }) => ({ label, probability }))).toEqual(overHttp);
    } finally {
      served.child.kill('SIGTERM');
      await exited(served.child);
    }

    const info = await svcBin(['info', '--json', '--base-model', `minilm-cls=${clsDir}`], kEnv);
    expect(info.code).toBe(0);
    const listed = (JSON.parse(info.stdout) as { base_models: Body[] }).base_models;
    expect(listed.map((m) => [m.name, m.family, m.pooling, m.normalize, m.max_seq_length, m.dimensions, m.dir, m.builtin])).toEqual([
      ['svc-small', 'bert', 'mean', true, 256, 384, expect.any(String), true],
      ['minilm-cls', 'bert', 'cls', false, 128, 384, clsDir, false],
    ]);
    expect(listed[1].fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    const text = await svcBin(['info'], { ...kEnv, SVC_BASE_MODELS: `minilm-cls=${clsDir}` });
    expect(text.stdout).toContain(
      `  minilm-cls  bert    cls      no         128             384         ${String(listed[1].fingerprint).slice(0, 19)}  ${clsDir}\n`,
    );

    // A replica on the same store bringing other files under the name is refused, naming both fingerprints.
    const other = await svcBin(['info', '--json', '--base-model', `minilm-cls=${meanDir}`], kEnv);
    const otherFingerprint = (JSON.parse(other.stdout) as { base_models: Body[] }).base_models[1].fingerprint as string;
    const refused = await svcBin(['serve', '--port', '0', '--data', data, '--base-model', `minilm-cls=${meanDir}`], kEnv);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `svc serve: base model 'minilm-cls' is registered here from ${meanDir} (${otherFingerprint}), but the store records 'minilm-cls' as ` +
        `${String(listed[1].fingerprint)} (first registered from ${clsDir}); register the same files on every replica, or another name\n`,
    ]);
    // Started without it, the server warns that the store's minilm-cls models cannot be served here.
    const without = await startNode([kSvcBin, 'serve', '--port', '0', '--data', data], kListening, { env: kEnv });
    without.child.kill('SIGTERM');
    await exited(without.child);
    expect(without.output()).toContain(
      `base model 'minilm-cls' (${String(listed[1].fingerprint)}, registered from ${clsDir}) is in the store but not registered here: ` +
        'its models cannot be served by this server; register it with --base-model minilm-cls=DIR',
    );
    // A bad entry stops the start, named as it was given.
    const missing = await svcBin(['serve', '--port', '0', '--data', data], { ...kEnv, SVC_BASE_MODELS: `gone=${join(dir, 'gone')}` });
    expect([missing.code, missing.stderr]).toEqual([
      1,
      `svc serve: SVC_BASE_MODELS gone=${join(dir, 'gone')}: ${join(dir, 'gone', 'config.json')}: is missing; a base model folder is a sentence-transformers model as saved by save_pretrained\n`,
    ]);
    const malformed = await svcBin(['serve', '--port', '0', '--data', data, '--base-model', clsDir], kEnv);
    expect([malformed.code, malformed.stderr.split('\n')[0]]).toEqual([
      2,
      `svc serve: --base-model entry '${clsDir}' must be NAME=DIR (a name, '=', then the folder)`,
    ]);
  });
});

describe('replicas on one PostgreSQL database', () => {
  it('agree on the same files from another folder; one bringing other files under the name refuses to start', async () => {
    const database = await pgServer.cluster.createDatabase();
    const copy = join(dir, 'replica-2', 'minilm-cls');
    cpSync(clsDir, copy, { recursive: true });
    const replica = (n: number, folder: string) => [
      kSvcBin,
      'serve',
      '--port',
      '0',
      '--database',
      database,
      '--artifacts',
      join(dir, 'shared-models'),
      '--data',
      join(dir, `replica-${n}-cache`),
      '--base-model',
      `minilm-cls=${folder}`,
    ];
    const first = await startNode(replica(1, clsDir), kListening, { env: kEnv });
    try {
      const second = await startNode(replica(2, copy), kListening, { env: kEnv });
      second.child.kill('SIGTERM');
      await exited(second.child);
      const info = (folder: string) => svcBin(['info', '--json', '--base-model', `minilm-cls=${folder}`], kEnv);
      const fingerprintOf = async (folder: string) =>
        (JSON.parse((await info(folder)).stdout) as { base_models: Body[] }).base_models[1].fingerprint as string;
      const [recorded, other] = await Promise.all([fingerprintOf(clsDir), fingerprintOf(meanDir)]);
      const refused = await svcBin(replica(3, meanDir).slice(1), kEnv);
      expect([refused.code, refused.stderr]).toEqual([
        1,
        `svc serve: base model 'minilm-cls' is registered here from ${meanDir} (${other}), but the store records 'minilm-cls' as ` +
          `${recorded} (first registered from ${clsDir}); register the same files on every replica, or another name\n`,
      ]);
    } finally {
      first.child.kill('SIGTERM');
      await exited(first.child);
    }
  });
});
