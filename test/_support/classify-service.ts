// The stand-alone service on 127.0.0.1 over a temporary data directory, with the organization `acme` and a key of it,
// for a file of /v2/classify tests: started before them, closed and removed after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import { type RunningServer, startServer } from '../../src/server/app.js';

/** The running service and acme's key, filled in before the file's tests run. */
export interface AcmeService {
  server: RunningServer;
  key: string;
}

/** Starts the service for the calling file (`prefix` names its temporary folder). */
export function useAcmeService(prefix: string): AcmeService {
  const acme = {} as AcmeService;
  let dir: string | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    // About the answers, not the queue's deadline: on a machine loaded by other test files, an uncached call (examples
    // and inputs, some read in chunks) could be refused 503 by the default 10 s.
    acme.server = await startServer({ dataDir: dir, port: 0, predictQueue: { deadlineMs: 120_000 } });
    await acme.server.service.createOrganization('acme');
    acme.key = (await acme.server.service.createApiKey('acme')).key;
  });
  afterAll(async () => {
    await acme.server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return acme;
}
