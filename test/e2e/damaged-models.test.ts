// Damaged model files on a real server: a stored adapter model whose adapter is truncated, or still a valid file with
// one value changed since it was saved, is the service's fault, not the caller's: `POST /v2/predict` answers 500 with
// the generic message (no server path, no tensor name) and the detail goes to the server's log. A model saved before
// checksums existed (its manifest has no `files`) still predicts.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { encodeSafetensors, SafetensorsFile } from '../../src/model/safetensors.js';
import { startServer, type RunningServer } from '../../src/server/app.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { writeAdapterModel } from '../_support/adapter.js';
import { httpCall } from '../_support/http.js';

const kOrg = 'acme';
const [kTruncated, kAltered, kOld, kLater] = [1, 2, 3, 4].map((n) => `svc-small-${n.toString(16).padStart(12, '0')}`);
const kInternal = {
  error: { message: 'The service failed to handle the request', type: 'api_error', param: null, code: 'internal' },
};
let dataDir: string;
let server: RunningServer;
let key: string;
const logLines: string[] = [];

const hubFolder = (id: string) => join(dataDir, 'hub', kOrg, id);
const adapterFile = (id: string) => join(hubFolder(id), 'adapter_model.safetensors');

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'svc-damaged-models-'));
  // Registered as a finished training leaves them: a trained row, its job done, its folder in the hub.
  const store = SqliteStore.open(dataDir);
  try {
    await store.createOrganization(kOrg);
    const now = Date.now();
    for (const [n, id] of [kTruncated, kAltered, kOld, kLater].entries()) {
      const row = { id, orgId: kOrg, baseModel: 'svc-small', taskType: 'binary-classification' as const, labelText: 'positive' };
      await store.createModelWithJob({ ...row, status: 'trained', error: null, createdAt: now, updatedAt: now }, [], {});
      await store.setJobState(id, 'done', now);
      mkdirSync(join(dataDir, 'hub', kOrg), { recursive: true });
      await writeAdapterModel(hubFolder(id), { seed: 70 + n });
    }
  } finally {
    await store.close();
  }
  truncate(adapterFile(kTruncated));
  changeOneValue(adapterFile(kAltered));
  // fp32: the default precision's adapter path ended this machine's pool worker (SIGSEGV) on HEAD too, an engine matter.
  server = await startServer({
    dataDir,
    port: 0,
    logLevel: 'error',
    logStream: { write: (line) => void logLines.push(line) },
    proxy: false,
    pool: { workers: 1, engineThreads: 1, precision: 'fp32' },
  });
  key = (await server.service.createApiKey(kOrg)).key;
}, 120_000);

afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Cuts a file mid-tensor: the safetensors header promises more bytes than the file holds. */
function truncate(file: string): void {
  const whole = readFileSync(file);
  writeFileSync(file, whole.subarray(0, Math.floor(whole.length / 2)));
}

/** Rewrites an adapter as a valid fp16 file, every tensor as saved but one value of one. */
function changeOneValue(file: string): void {
  const stored = SafetensorsFile.open(file);
  const tensors = stored.names.map((name, i) => {
    const data = stored.float32(name);
    if (i === 5) data[2] += 0.25;
    return { name, shape: stored.info(name).shape, data, dtype: 'F16' as const };
  });
  writeFileSync(file, encodeSafetensors(tensors, { format: 'pt' }));
}

const predict = (model: string) => httpCall(server.url, 'POST', '/v2/predict', key, { model, inputs: ['A wonderful, moving film.'] });

/** The server log's internal errors, as pino writes them (the error's message and its cause's). */
function loggedErrors(): string {
  return logLines.filter((line) => line.includes('internal error')).join('\n');
}

describe('a stored model with damaged files', () => {
  it('answers 500 with the generic message when its adapter is truncated, the detail in the log only', async () => {
    const answer = await predict(kTruncated);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([500, kInternal]);
    expect(answer.text).not.toContain(dataDir);
    expect(loggedErrors()).toContain(`the stored model '${kOrg}/${kTruncated}' failed to load: ${adapterFile(kTruncated)}`);
  });

  it('answers 500 with the generic message when its adapter has one value changed, the file named in the log', async () => {
    const answer = await predict(kAltered);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([500, kInternal]);
    expect(answer.text).not.toContain(dataDir);
    expect(loggedErrors()).toContain(
      `the stored model '${kOrg}/${kAltered}' failed to load: ${adapterFile(kAltered)} is not the file the model was saved with: ` +
        'its SHA-256 differs from the one in manifest.json (the file was damaged or changed since)',
    );
  });

  it('answers 500 with the generic message when its adapter is damaged after it was loaded (read again)', async () => {
    expect((await predict(kLater)).status).toBe(200);
    // The worker sees a new file (its size, its time) and reads it again: the read fails, naming the file.
    truncate(adapterFile(kLater));
    const answer = await predict(kLater);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([500, kInternal]);
    expect(answer.text).not.toContain(dataDir);
    expect(loggedErrors()).toContain(`the stored model '${kOrg}/${kLater}' failed: ${adapterFile(kLater)}`);
  });

  it('predicts a model whose manifest has no checksums (saved before they existed)', async () => {
    // The same manifest as saved now, without `files`.
    const manifestFile = join(hubFolder(kOld), 'manifest.json');
    const { files, ...old } = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(files as object).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'head.json']);
    writeFileSync(manifestFile, JSON.stringify(old, null, 2));
    const answer = await predict(kOld);
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { model: string; predictions: { label: boolean; probability: number }[] };
    expect(body.model).toBe(kOld);
    expect(body.predictions).toHaveLength(1);
    expect(body.predictions[0]!.probability).toBeGreaterThan(0);
    expect(body.predictions[0]!.probability).toBeLessThan(1);
  });
});
