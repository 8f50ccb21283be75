// The HTTP side of `npm run bench -- many-models`: the same adapter models registered in a real service (SQLite store,
// the hub folder, `startServer` listening on 127.0.0.1 in this process, so that its pool is the one configured here),
// predicted through `POST /v2/predict` with an API key, as a client would.
//
// Registering: each model is a row of the store (status trained, its job done) and a folder of the hub whose files
// are hard links to one of the bench's model directories, with its own manifest. `count` may exceed the directories
// given (10,000 registered over 1,000 adapter files): each folder is still its own path, read and cached as its own
// adapter by the workers.
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { kManifestFile } from '../src/contract/manifest.js';
import { closePool, type PoolOptions } from '../src/pool/pool.js';
import { startServer } from '../src/server/app.js';
import { SqliteStore } from '../src/store/sqlite.js';

const kOrg = 'bench-many';

export interface HttpService {
  url: string;
  key: string;
  /** Model ids, in registration order. */
  ids: string[];
  close(): Promise<void>;
}

function modelId(n: number): string {
  return `svc-small-${n.toString(16).padStart(12, '0')}`;
}

/** Registers `count` models (model n from `dirs[n % dirs.length]`) in a new data directory and starts a server on it. */
export async function startHttpService(dirs: readonly string[], count: number, pool: PoolOptions): Promise<HttpService> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-many-http-'));
  const store = SqliteStore.open(dataDir);
  const ids: string[] = [];
  try {
    await store.createOrganization(kOrg);
    // No request limit in the way of the measurement.
    await store.setOrgLimits(kOrg, { requestsPerMinute: 10_000_000, orgRequestsPerMinute: 10_000_000 });
    const now = Date.now();
    for (let n = 0; n < count; n++) {
      const id = modelId(n);
      await store.createModelWithJob(
        {
          id,
          orgId: kOrg,
          baseModel: 'svc-small',
          taskType: 'binary-classification',
          labelText: 'positive review',
          status: 'trained',
          error: null,
          createdAt: now,
          updatedAt: now,
        },
        [],
        {},
      );
      await store.setJobState(id, 'done', now);
      const source = dirs[n % dirs.length]!;
      const folder = join(dataDir, 'hub', kOrg, id);
      mkdirSync(folder, { recursive: true });
      for (const file of readdirSync(source, { recursive: true, withFileTypes: true })) {
        if (!file.isFile() || file.name === kManifestFile) continue;
        const relative = join(file.parentPath, file.name).slice(source.length + 1);
        mkdirSync(join(folder, relative, '..'), { recursive: true });
        linkSync(join(source, relative), join(folder, relative));
      }
      const manifest = JSON.parse(readFileSync(join(source, kManifestFile), 'utf8')) as Record<string, unknown>;
      writeFileSync(join(folder, kManifestFile), JSON.stringify({ ...manifest, id }));
      ids.push(id);
    }
  } finally {
    await store.close();
  }
  await closePool(); // the server configures the pool it runs on
  const server = await startServer({
    dataDir,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'silent',
    proxy: false,
    pool,
    // The bench measures latency: a service on a loaded machine would shed the concurrency-16 rows' calls (503).
    predictQueue: { deadlineMs: 600_000 },
  });
  const { key } = await server.service.createApiKey(kOrg);
  return {
    url: server.url,
    key,
    ids,
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One `POST /v2/predict`; its latency in ms. Anything but a 200 with one prediction per text throws. */
export async function predictOverHttp(service: HttpService, model: string, texts: string[]): Promise<number> {
  const t0 = performance.now();
  const response = await fetch(`${service.url}/v2/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${service.key}` },
    body: JSON.stringify({ model, inputs: texts }),
  });
  const body = (await response.json()) as { predictions?: unknown[] };
  const elapsed = performance.now() - t0;
  if (response.status !== 200 || body.predictions?.length !== texts.length) {
    throw new Error(`/v2/predict for ${model} answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  }
  return elapsed;
}
