// Adapter models on a real server while they change under it: through `POST /v2/predict`, one model is deleted
// (`DELETE /v2/models/:id`) and another's folder replaced by a new adapter while clients predict all of them. No
// call may fail but the deleted model's own after its deletion (404, never a 500 or a server path), and the replaced
// model predicts through its new adapter (with the head its loaded classifier read: the service publishes a new model
// under a new id, so an in-place replacement is the hub's, not a training's).
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startServer, type RunningServer } from '../../src/server/app.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { writeAdapterModel } from '../_support/adapter.js';
import { httpCall } from '../_support/http.js';

const kOrg = 'acme';
const kIds = [0, 1, 2, 3].map((n) => `svc-small-${n.toString(16).padStart(12, '0')}`);
const kTexts = ['A wonderful, moving film.', 'The battery died after a week.'];
let dataDir: string;
let server: RunningServer;
let key: string;

function hubFolder(id: string): string {
  return join(dataDir, 'hub', kOrg, id);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'svc-adapter-churn-'));
  // Registered as a finished training leaves them: a trained row, its job done, its folder in the hub.
  const store = SqliteStore.open(dataDir);
  try {
    await store.createOrganization(kOrg);
    const now = Date.now();
    for (const [n, id] of kIds.entries()) {
      await store.createModelWithJob(
        {
          id,
          orgId: kOrg,
          baseModel: 'svc-small',
          taskType: 'binary-classification',
          labelText: 'positive',
          status: 'trained',
          error: null,
          createdAt: now,
          updatedAt: now,
        },
        [],
        {},
      );
      await store.setJobState(id, 'done', now);
      mkdirSync(join(dataDir, 'hub', kOrg), { recursive: true });
      await writeAdapterModel(hubFolder(id), { seed: 60 + n, rank: 8 });
    }
  } finally {
    await store.close();
  }
  // Room for two adapters per worker: the four models keep evicting and reading each other's.
  server = await startServer({
    dataDir,
    port: 0,
    logLevel: 'silent',
    proxy: false,
    pool: { workers: 2, engineThreads: 1, adapterCacheBytes: 1_400_000 },
  });
  key = (await server.service.createApiKey(kOrg)).key;
}, 120_000);

afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function probabilities(id: string): Promise<number[]> {
  const answer = await httpCall(server.url, 'POST', '/v2/predict', key, { model: id, inputs: kTexts });
  expect(answer.status).toBe(200);
  return (JSON.parse(answer.text) as { predictions: { probability: number }[] }).predictions.map((p) => p.probability);
}

describe('adapter models deleted and replaced while clients predict', () => {
  it("fails no predict but the deleted model's own, and predicts the replaced one through its new adapter", async () => {
    const before = await Promise.all(kIds.map(probabilities));
    const [deleted, replaced] = [kIds[0]!, kIds[1]!];
    const unexpected: string[] = [];
    let deletedGone = 0;
    let calls = 0;
    let running = true;
    const lane = async (lane: number): Promise<void> => {
      for (let call = 0; running; call++) {
        const id = kIds[(lane + call) % kIds.length]!;
        const answer = await httpCall(server.url, 'POST', '/v2/predict', key, { model: id, inputs: kTexts });
        calls++;
        if (answer.status === 200) continue;
        // The deleted model answers 404 once its row is gone; a loaded machine may shed a call (503): both are the
        // service's answers, not failures of the models' files.
        if (id === deleted && answer.status === 404) deletedGone++;
        else if (answer.status !== 503) unexpected.push(`${id}: ${answer.status} ${answer.text}`);
      }
    };
    const lanes = [0, 1, 2].map(lane);
    const afterCalls = async (more: number): Promise<void> => {
      const target = calls + more;
      while (calls < target) await new Promise((r) => setTimeout(r, 20));
    };
    await afterCalls(6);
    expect((await httpCall(server.url, 'DELETE', `/v2/models/${deleted}`, key)).status).toBe(200);
    await afterCalls(6);
    // Replaced as a publish does: the new folder written beside, then renamed into place.
    const staging = join(dataDir, 'hub', kOrg, `.staging-${replaced}`);
    await writeAdapterModel(staging, { seed: 99, rank: 8 });
    rmSync(hubFolder(replaced), { recursive: true, force: true });
    renameSync(staging, hubFolder(replaced));
    await afterCalls(6);
    running = false;
    await Promise.all(lanes);
    expect(unexpected).toEqual([]);
    expect(deletedGone).toBeGreaterThan(0);
    // The replaced model's service reloads it only once its loaded classifier goes; the adapter the workers read
    // is the new file's as soon as it is in place (by inode, size and modification time).
    const after = await probabilities(replaced);
    expect(Math.max(...after.map((p, i) => Math.abs(p - before[1]![i]!)))).toBeGreaterThan(1e-4);
    // The untouched models answer as before.
    for (const n of [2, 3]) expect(await probabilities(kIds[n]!)).toEqual(before[n]);
  }, 300_000);
});
