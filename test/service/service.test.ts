import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { uciSentences } from '../../fixtures/corpora.js';
import { SvcError } from '../../src/errors.js';
import { hashApiKey } from '../../src/service/keys.js';
import { type Principal, SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { TrainingExample } from '../../src/store/types.js';
import type { BinaryPredictResponse } from '../../src/contract/schemas.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';

const imdb = uciSentences('imdb');
const examples: TrainingExample[] = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map(
  (r) => ({ text: r.text, label: r.label, label_text: 'positive' }),
);
const request = { model: 'svc-small', task_type: 'binary-classification', examples };

let dir: string;
let runtime: WordCountRuntime;
let service: SvcService;
let acme: Principal;

function open(slots = 1, timeoutMs?: number): SvcService {
  runtime = new WordCountRuntime(join(dir, 'hub'), slots);
  return new SvcService({ store: SqliteStore.open(dir), runtime, proxyModels: ['provider-a:gpt-4o-mini'], jobs: { timeoutMs } });
}

async function rejection(promise: Promise<unknown>): Promise<{ code: string; status: number; message: string; param: string | null }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof SvcError)) throw new Error(`expected an SvcError, got ${String(error)}`);
  return { code: error.code, status: error.status, message: error.message, param: error.param };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-service-'));
  service = open();
  await service.start();
  await service.createOrganization('acme');
  acme = await service.authenticate(`Bearer ${(await service.createApiKey('acme')).key}`);
});
afterEach(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('organizations and keys', () => {
  it('makes svc_ keys with 32 base62 characters, stores only their hash and authenticates them', async () => {
    const created = await service.createApiKey('acme');
    expect(created.key).toMatch(/^svc_[0-9A-Za-z]{32}$/);
    expect(created.id).toMatch(/^key_[0-9a-f]{12}$/);
    // By its id: the file's first key may share its millisecond, and keys of one millisecond list in id order.
    const stored = (await service.store.listApiKeys('acme')).find((key) => key.id === created.id);
    expect(stored).toEqual({
      id: created.id,
      orgId: 'acme',
      hash: hashApiKey(created.key),
      prefix: created.key.slice(0, 8),
      createdAt: created.createdAt,
      revokedAt: null,
    });
    expect(JSON.stringify(await service.store.listApiKeys('acme'))).not.toContain(created.key.slice(8));
    expect(await service.authenticate(created.key)).toEqual({ orgId: 'acme', keyId: created.id });
    expect(await service.authenticate(`bearer ${created.key}`)).toEqual({ orgId: 'acme', keyId: created.id });
  });

  it('rejects missing, unknown and revoked keys with 401', async () => {
    expect(await rejection(service.authenticate(undefined))).toEqual({
      code: 'authentication',
      status: 401,
      message: "Missing API key: send it as 'Authorization: Bearer <key>'",
      param: null,
    });
    expect((await rejection(service.authenticate('Bearer svc_nope'))).message).toBe('Invalid API key');
    const created = await service.createApiKey('acme');
    // Its id, pasted as the key: said from the shape, so an unknown id reads the same.
    for (const id of [created.id, 'key_0123456789ab']) {
      expect(await rejection(service.authenticate(`Bearer ${id}`))).toMatchObject({
        code: 'authentication',
        message: expect.stringMatching(/^This looks like a key id \(key_…\), not the API key: .* shown once/),
      });
    }
    await service.revokeApiKey(created.id);
    expect((await rejection(service.authenticate(created.key))).message).toBe('This API key has been revoked');
    expect((await rejection(service.revokeApiKey('key_000000000000'))).message).toBe("The API key 'key_000000000000' does not exist");
  });

  it('validates organization names and refuses duplicates', async () => {
    expect((await rejection(service.createOrganization('Acme Inc'))).message).toBe(
      "Organization names are 1-63 lowercase letters, digits and dashes, starting with a letter or digit; got 'Acme Inc'",
    );
    expect(await rejection(service.createOrganization('acme'))).toEqual({
      code: 'conflict',
      status: 409,
      message: "The organization 'acme' already exists",
      param: 'name',
    });
    expect((await rejection(service.createApiKey('ghost'))).message).toBe("The organization 'ghost' does not exist");
  });

  it('authorizes the proxy only for the owner of a project with a grant', async () => {
    const project = await service.createProject('acme', 'chatbot');
    expect(project.id).toMatch(/^proj_[0-9a-f]{12}$/);
    expect((await rejection(service.authorizeProxy(acme, project.id))).message).toBe(
      "The organization 'acme' has no proxy access; request access from the operator",
    );
    await service.setProxyAccess('acme', true);
    expect(await service.authorizeProxy(acme, project.id)).toEqual(project);
    expect((await service.listModels(acme)).data).toEqual([
      { id: 'provider-a:gpt-4o-mini', object: 'model', created_at: 0, owned_by: 'provider-a' },
    ]);
    await service.createOrganization('globex');
    const globex = await service.authenticate((await service.createApiKey('globex')).key);
    expect(await rejection(service.authorizeProxy(globex, project.id))).toEqual({
      code: 'not_found',
      status: 404,
      message: `The project '${project.id}' does not exist`,
      param: 'project_id',
    });
    expect((await rejection(service.authorizeProxy(acme, 'proj_000000000000'))).status).toBe(404);
  });
});

describe('training jobs', () => {
  it('trains, then predicts with the org that owns the model only', async () => {
    const created = await service.train(acme, request);
    expect(created).toEqual({
      id: created.id,
      object: 'model',
      created_at: created.created_at,
      status: 'training',
      owned_by: 'acme',
      task_type: 'binary-classification',
      label_text: 'positive',
      version: 1,
      live_version: 1,
      context_window: 256,
    });
    expect(created.id).toMatch(/^svc-small-[0-9a-f]{12}$/);
    await service.idle();
    expect((await service.getModel(acme, created.id)).status).toBe('trained');
    const result = (await service.predict(acme, {
      model: created.id,
      inputs: [examples[0].text, examples[19].text],
    })) as BinaryPredictResponse;
    expect(result.label_text).toBe('positive');
    expect(result.predictions.map((p) => p.label)).toEqual([true, false]);

    await service.createOrganization('globex');
    const globex = await service.authenticate((await service.createApiKey('globex')).key);
    const hidden = {
      code: 'not_found',
      status: 404,
      param: 'model',
      message: `The model '${created.id}' does not exist or is not visible to this API key`,
    };
    expect(await rejection(service.getModel(globex, created.id))).toEqual(hidden);
    expect(await rejection(service.predict(globex, { model: created.id, inputs: ['x'] }))).toEqual(hidden);
    expect((await service.listModels(globex)).data).toEqual([]);
  });

  it('checks the training request before storing anything', async () => {
    const cases: [object, string, string][] = [
      [{ ...request, model: 'gpt' }, "model must be one of svc-small (got 'gpt')", 'model'],
      [
        { ...request, task_type: 'multi' },
        `task_type must be one of 'binary-classification', 'multi-class-classification', 'multi-label-classification' (got "multi")`,
        'task_type',
      ],
      [
        { ...request, examples: examples.slice(0, 19) },
        'at least 20 examples are required (got 19); to label texts from fewer without training a model, classify needs only 2 ' +
          'examples per label (POST /v2/classify, svc classify, or classify() in the library)',
        'examples',
      ],
      [
        { ...request, examples: examples.map((e) => ({ ...e, label: true })) },
        'examples need at least one true and one false label',
        'examples',
      ],
      [
        { ...request, examples: examples.map((e, i) => (i === 3 ? { ...e, text: '' } : e)) },
        'examples[3].text must not be empty',
        'examples[3].text',
      ],
      [
        { ...request, examples: examples.map((e, i) => (i === 5 ? { ...e, label_text: 'negative' } : e)) },
        'all examples must share one label_text',
        'examples',
      ],
    ];
    for (const [body, message, param] of cases) {
      expect(await rejection(service.train(acme, body as typeof request))).toEqual({
        code: 'invalid_request',
        status: 400,
        message,
        param,
      });
    }
    expect(await service.store.listModels('acme')).toEqual([]);
  });

  it('answers 409 while training and marks a failed job failed with its reason', async () => {
    let open!: () => void;
    runtime.gate = new Promise((resolve) => (open = resolve));
    const training = await service.train(acme, request);
    expect(await rejection(service.predict(acme, { model: training.id, inputs: ['x'] }))).toEqual({
      code: 'conflict',
      status: 409,
      param: 'model',
      message: `The model '${training.id}' is still training; retry when its status is 'trained'`,
    });
    // Listed with its status while it trains: a model just sent to training has not vanished.
    expect((await service.listModels(acme)).data).toEqual([training]);
    const failing = await service.train(acme, { ...request, examples: [{ ...examples[0], text: 'please fail' }, ...examples.slice(1)] });
    open();
    await service.idle();
    expect(await service.getModel(acme, failing.id)).toEqual({
      ...failing,
      status: 'failed',
      error: 'the example asked training to fail',
    });
    expect(existsSync(runtime.modelDir('acme', failing.id))).toBe(false);
    expect((await rejection(service.predict(acme, { model: failing.id, inputs: ['x'] }))).message).toBe(
      `The model '${failing.id}' failed to train: the example asked training to fail`,
    );
    expect(runtime.trained).toEqual([training.id]);
    expect((await service.listModels(acme)).data).toEqual([
      { ...training, status: 'trained' },
      { ...failing, status: 'failed', error: 'the example asked training to fail' },
    ]);
  });

  it('runs jobs one at a time per slot, in the order they came', async () => {
    let open!: () => void;
    runtime.gate = new Promise((resolve) => (open = resolve));
    const ids = [];
    for (let i = 0; i < 3; i += 1) ids.push((await service.train(acme, request)).id);
    expect((await service.store.getJob(ids[0]))?.state).toBe('running');
    expect((await service.store.getJob(ids[1]))?.state).toBe('queued');
    open();
    await service.idle();
    expect(runtime.trained).toEqual(ids);
  });

  it('runs a job left running by a dead process again at start-up, and gives up after three starts', async () => {
    const first = await service.train(acme, { ...request });
    await service.idle();
    await service.close();
    // Simulate two models whose process died mid-training: claimed (running), never finished.
    const store = SqliteStore.open(dir);
    const now = Date.now();
    const base = {
      orgId: 'acme',
      baseModel: 'svc-small',
      taskType: 'binary-classification' as const,
      labelText: 'positive',
      status: 'training' as const,
      error: null,
      createdAt: now,
      updatedAt: now,
    };
    await store.createModelWithJob({ ...base, id: 'svc-small-00000000000a' }, examples, {});
    await store.createModelWithJob({ ...base, id: 'svc-small-00000000000b' }, examples, {});
    // 'a' was started three times already and is running a third time when the process dies.
    const dead = { maxRunningJobs: 1, holder: 'a-dead-process', leaseMs: 30_000 };
    for (let i = 0; i < 2; i += 1) {
      await store.claimNextJob(now, dead);
      // What the next start-up on the data directory does: every lease counts as ended.
      await store.requeueInterruptedJobs(Number.MAX_SAFE_INTEGER);
    }
    await store.claimNextJob(now, dead);
    await store.close();

    service = open();
    await service.start();
    await service.idle();
    expect((await service.getModel(acme, first.id)).status).toBe('trained');
    expect(await service.getModel(acme, 'svc-small-00000000000a')).toMatchObject({
      status: 'failed',
      error: 'training was interrupted 3 times (the service stopped while it ran)',
    });
    expect((await service.getModel(acme, 'svc-small-00000000000b')).status).toBe('trained');
    expect(runtime.trained).toEqual(['svc-small-00000000000b']);
  });

  it('puts a running job back in the queue on shutdown and finishes it after the next start', async () => {
    let release!: () => void;
    runtime.gate = new Promise((resolve) => (release = resolve));
    const model = await service.train(acme, request);
    const closing = service.close();
    release();
    await closing;
    const store = SqliteStore.open(dir);
    expect([(await store.getModel(model.id))?.status, (await store.getJob(model.id))?.state]).toEqual(['training', 'queued']);
    await store.close();
    service = open();
    await service.start();
    await service.idle();
    expect((await service.getModel(acme, model.id)).status).toBe('trained');
    // A clean shutdown does not count towards the crash limit.
    expect((await service.store.getJob(model.id))?.attempts).toBe(1);
  });

  it('fails a job that runs longer than the time limit', async () => {
    await service.close();
    service = open(1, 200);
    await service.start();
    runtime.gate = new Promise(() => {}); // a worker that never answers
    const stuck = await service.train(acme, request);
    await service.idle();
    expect(await service.getModel(acme, stuck.id)).toEqual({
      ...stuck,
      status: 'failed',
      error: 'training took longer than 0.2 seconds and was stopped',
    });
  });

  it('deletes a model, its job and its hub copy, also while it trains', async () => {
    const trained = await service.train(acme, request);
    await service.idle();
    expect(existsSync(join(runtime.modelDir('acme', trained.id), 'config.json'))).toBe(true);
    expect(await service.deleteModel(acme, trained.id)).toEqual({ id: trained.id, object: 'model', deleted: true });
    expect(existsSync(runtime.modelDir('acme', trained.id))).toBe(false);
    expect((await rejection(service.getModel(acme, trained.id))).status).toBe(404);

    let open!: () => void;
    runtime.gate = new Promise((resolve) => (open = resolve));
    const training = await service.train(acme, request);
    const deleting = service.deleteModel(acme, training.id);
    open();
    await deleting;
    await service.idle();
    expect(await service.store.getJob(training.id)).toBeNull();
    expect(existsSync(runtime.modelDir('acme', training.id))).toBe(false);
  });
});

describe('request-log retention', () => {
  it('prunes in the background from start(), by age and per-project count, and by hand', async () => {
    const store = SqliteStore.open(join(dir, 'retention'));
    const day = 24 * 60 * 60 * 1000;
    const row = {
      keyId: 'key_1',
      provider: 'provider-a' as const,
      model: 'provider-a:m',
      stream: false,
      status: 200,
      ttfbMs: 1,
      totalMs: 2,
      tokensIn: 1,
      tokensOut: 1,
      error: null,
      requestBody: '{}',
      responseBody: '{}',
    };
    for (const age of [9, 5, 4, 3, 2, 1]) await store.insertRequestLog({ ...row, projectId: 'proj_a', createdAt: Date.now() - age * day });
    for (const age of [8, 1]) await store.insertRequestLog({ ...row, projectId: 'proj_b', createdAt: Date.now() - age * day });
    const background = new SvcService({
      store,
      runtime: new WordCountRuntime(join(dir, 'retention-hub'), 1),
      retention: { days: 7, maxRowsPerProject: 3, intervalMs: 60_000 },
    });
    const ages = async (projectId: string) =>
      (await store.listRequestLog(projectId, { limit: 10 })).map((r) => Math.round((Date.now() - r.createdAt) / day));
    await background.start();
    // The first run starts on the next turn of the event loop; wait for it to show.
    for (let i = 0; i < 100 && (await ages('proj_a')).length > 3; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await ages('proj_a')).toEqual([1, 2, 3]);
    expect(await ages('proj_b')).toEqual([1]);
    expect(await background.pruneRequestLog({ maxRowsPerProject: 1 })).toBe(2);
    expect(await ages('proj_a')).toEqual([1]);
    await background.close();
  });
});
