// The shadow scenario's proxy thread for bench/proxy.ts: a whole `svc serve` server (library runtime, pool, SQLite)
// whose organization owns two projects, one with a shadow classifier for the bench's proxied model and one without,
// so that the two sides of the latency phase differ in the shadow work alone. The classifier is trained from 20
// UCI IMDB sentences (finetune: false); the fake's echo replies carry no label word, so every shadowed call runs
// the classifier and records agreed null: the full cost, without a comparison to report.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

import { uciSentences } from '../fixtures/corpora.js';
import { type FakeProvider, kFakeKeys } from '../fixtures/fake-provider.js';
import { startServer } from '../src/server/app.js';

export interface ShadowThreadReady {
  plainBase: string;
  shadowBase: string;
  key: string;
}

/** What the thread reports when asked to finish: the shadowed project's results once no more arrive. */
export interface ShadowThreadDone {
  results: number;
  classifierP50Ms: number | null;
}

const port = parentPort!;
const { fakeUrls, model } = workerData as { fakeUrls: FakeProvider['urls']; model: string };
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-shadow-'));
const server = await startServer({
  dataDir: dir,
  port: 0,
  logLevel: 'silent',
  pool: { workers: 1, engineThreads: 1 },
  providers: { 'provider-a': { url: fakeUrls.a, key: kFakeKeys.a } },
  proxyOptions: { pingIntervalMs: 60_000, upstreamTimeoutMs: 60_000 },
});
const service = server.service;
await service.createOrganization('acme');
await service.setProxyAccess('acme', true);
// A rate no run reaches: every request is still counted (that cost is measured), none is turned away.
await service.store.setOrgLimits('acme', { requestsPerMinute: Number.MAX_SAFE_INTEGER });
const { key } = await service.createApiKey('acme');
const principal = await service.authenticate(key);
const plain = await service.createProject('acme', 'plain');
const shadowed = await service.createProject('acme', 'shadowed');
const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive',
}));
const classifier = await service.train(principal, { model: 'svc-small', task_type: 'binary-classification', finetune: false, examples });
await service.idle();
const put = await fetch(`${server.url}/v2/${shadowed.id}/shadow`, {
  method: 'PUT',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model, classifier: classifier.id, label: { words: { true: ['yes'], false: ['no'] } } }),
});
if (!put.ok) throw new Error(`PUT shadow answered ${put.status}: ${await put.text()}`);
port.postMessage({
  plainBase: `${server.url}/v2/${plain.id}/`,
  shadowBase: `${server.url}/v2/${shadowed.id}/`,
  key,
} satisfies ShadowThreadReady);

/** The shadow queue drains after the last response: waits until the results stop coming (two quiet polls). */
async function settled() {
  const count = async () => (await service.store.shadows.stats(shadowed.id, { since: 0, bucketMs: 86_400_000 })).calls;
  let last = await count();
  for (let quiet = 0; quiet < 2;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await count();
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
}

// 'drain' between phases; 'done' at the end, answered with the results.
port.on('message', async (message: 'drain' | 'done') => {
  await settled();
  if (message === 'drain') {
    port.postMessage('drained');
    return;
  }
  const stats = await service.store.shadows.stats(shadowed.id, { since: 0, bucketMs: 86_400_000 });
  await server.close();
  rmSync(dir, { recursive: true, force: true });
  port.postMessage({ results: stats.calls, classifierP50Ms: stats.classifierP50Ms } satisfies ShadowThreadDone);
});
