// Worker side of bench/proxy.ts: the fake provider and the proxy each get a thread of their own, so the client
// (the main thread), the proxy and the upstream do not queue behind each other's work on one event loop.
import { parentPort, workerData } from 'node:worker_threads';
import type { FakeProvider } from '../fixtures/fake-provider.js';
import { startFakeProvider } from '../fixtures/fake-provider.js';
import { startProxyHarness } from '../fixtures/proxy-harness.js';

export interface ProxyThreadReady {
  sdkBase: string;
  acmeKey: string;
}

const port = parentPort!;
const role = (workerData as { role: 'fake' | 'proxy'; fakeUrls?: FakeProvider['urls'] }).role;

if (role === 'fake') {
  const fake = await startFakeProvider();
  port.postMessage(fake.urls);
  port.once('message', async () => {
    await fake.close();
    port.postMessage('closed');
  });
} else {
  const urls = (workerData as { fakeUrls: FakeProvider['urls'] }).fakeUrls;
  // Only the URLs of the fake are used by the harness when it is given one.
  const remoteFake = { urls, requests: [], closed: () => Promise.reject(new Error('remote')), close: async () => {} } as FakeProvider;
  const h = await startProxyHarness({ pingIntervalMs: 60_000, upstreamTimeoutMs: 60_000 }, remoteFake);
  // A rate no run reaches: every request is still counted (that cost is measured), none is turned away.
  await h.store.setOrgLimits('acme', { requestsPerMinute: Number.MAX_SAFE_INTEGER });
  port.postMessage({ sdkBase: h.sdkBase, acmeKey: h.acmeKey } satisfies ProxyThreadReady);
  port.once('message', async (expectedRows: number) => {
    const rows = await h.logRows(expectedRows);
    await h.close();
    port.postMessage(rows.length);
  });
}
