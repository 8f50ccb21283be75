// A listening Fastify app with the proxy routes under /v2 on a given store (e.g. one PostgreSQL replica), pointed at
// a running fake provider. The store gets organization `acme` (proxy access) and an API key for it, unless `key`
// names one an earlier rig on the same database made.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeProvider } from '../../fixtures/fake-provider.js';
import { listenProxyRoutes } from '../../fixtures/proxy-harness.js';
import type { ProxyRoutesOptions } from '../../src/proxy/types.js';
import type { Store } from '../../src/store/types.js';

export interface ProxyRig {
  store: Store;
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** An API key of `acme`. */
  key: string;
  close(): Promise<void>;
}

/** `logLines`, when given, receives the app's log lines (warnings and above). */
export async function startProxyRig(
  store: Store,
  fake: FakeProvider,
  key?: string,
  overrides: Partial<ProxyRoutesOptions> = {},
  logLines?: string[],
): Promise<ProxyRig> {
  if (key === undefined) {
    await store.createOrganization('acme');
    await store.setProxyAccess('acme', true);
    key = `svc_${randomBytes(18).toString('hex')}`;
    await store.insertApiKey({
      id: `key_${randomBytes(6).toString('hex')}`,
      orgId: 'acme',
      hash: createHash('sha256').update(key).digest('hex'),
      prefix: key.slice(0, 8),
      createdAt: Date.now(),
      revokedAt: null,
    });
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-proxy-rig-'));
  const logger = logLines === undefined ? undefined : { level: 'warn', stream: { write: (line: string) => void logLines.push(line) } };
  const { app, base } = await listenProxyRoutes(store, fake, dataDir, { upstreamTimeoutMs: 2_000, overrides, logger });
  return {
    store,
    base,
    key,
    async close() {
      await app.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
