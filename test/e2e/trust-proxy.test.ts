// `svc serve --trust-proxy` (and `SVC_TRUST_PROXY`, and `startServer`'s `trustProxy`) behind a proxy: the client
// address that the failed-authentication limit counts is the one the trusted proxy forwarded for, so that clients
// behind one proxy do not share one tally; without the setting the header is not believed (a client could name any
// address). The "proxy" here is the test itself on 127.0.0.1, naming other loopback addresses as its clients.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { startServer } from '../../src/server/app.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { exited, serve, svc } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-trust-proxy-'));
let dirs = 0;
const kLimit = 2;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A data directory with the organization `acme` and one key. */
async function dataDir(): Promise<{ data: string; key: string }> {
  dirs += 1;
  const data = join(dir, String(dirs));
  const service = new SvcService({ store: SqliteStore.open(data), runtime: new WordCountRuntime(join(data, 'hub')) });
  try {
    await service.createOrganization('acme');
    return { data, key: (await service.createApiKey('acme')).key };
  } finally {
    await service.close();
  }
}

/** `GET /v2/models` with a key, sent through "the proxy" for `forwardedFor` (an X-Forwarded-For value). */
function models(url: string, key: string, forwardedFor: string): Promise<number> {
  return fetch(`${url}/v2/models`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor } }).then((r) => r.status);
}

/** `kLimit` bad keys for `client`, then one more: the statuses. */
async function failures(url: string, client: string): Promise<number[]> {
  const statuses = [];
  for (let i = 0; i <= kLimit; i += 1) statuses.push(await models(url, `svc_wrong_${i}`, client));
  return statuses;
}

/** Runs `svc serve` on a fresh data directory with `args` and `env`, hands `use` its URL and key, then stops it. */
async function withServe(args: string[], env: Record<string, string>, use: (url: string, key: string) => Promise<void>): Promise<void> {
  const { data, key } = await dataDir();
  const { child, url } = await serve(['--data', data, '--failed-auth-limit', String(kLimit), ...args], env);
  try {
    await use(url, key);
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
}

describe('svc serve --trust-proxy', () => {
  it("with the proxy's address: each forwarded client has its own tally, and a valid key is never refused", async () => {
    await withServe(['--trust-proxy', '127.0.0.1'], {}, async (url, key) => {
      expect(await failures(url, '127.0.0.2')).toEqual([401, 401, 429]);
      expect(await models(url, key, '127.0.0.2')).toBe(200);
      // Another client behind the same proxy.
      expect(await failures(url, '127.0.0.3')).toEqual([401, 401, 429]);
    });
  });

  it('off by default: X-Forwarded-For is not believed, and every client of the proxy is the proxy', async () => {
    await withServe([], { SVC_TRUST_PROXY: '' }, async (url, key) => {
      expect(await failures(url, '127.0.0.2')).toEqual([401, 401, 429]);
      expect(await models(url, 'svc_wrong', '127.0.0.3')).toBe(429);
      expect(await models(url, key, '127.0.0.3')).toBe(200);
    });
  });

  it('SVC_TRUST_PROXY when the flag is not given (loopback: any 127.0.0.0/8 proxy)', async () => {
    await withServe([], { SVC_TRUST_PROXY: 'loopback' }, async (url) => {
      expect(await failures(url, '127.0.0.2')).toEqual([401, 401, 429]);
      expect(await models(url, 'svc_wrong', '127.0.0.3')).toBe(401);
    });
  });

  it('refuses an address it cannot read, as a usage error', async () => {
    const { data } = await dataDir();
    expect(await svc(['serve', '--port', '0', '--data', data, '--trust-proxy', '10.0.0/8'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "svc serve: --trust-proxy: '10.0.0/8' is not an address, a CIDR range or loopback, linklocal, uniquelocal\n" +
        "Run 'svc serve --help' for its options and examples.\n",
    });
  });
});

describe("startServer's trustProxy", () => {
  it('a hop count trusts that many proxies nearest the server, not what a client wrote before them', async () => {
    const { data, key } = await dataDir();
    const server = await startServer({
      dataDir: data,
      port: 0,
      logLevel: 'silent',
      proxy: false,
      trustProxy: 1,
      rateLimit: { failedAuthPerWindow: kLimit },
    });
    try {
      // One proxy: the client is the last address it forwarded for, whatever the client put in front of it.
      expect(await models(server.url, 'svc_wrong_1', '127.0.0.9, 127.0.0.4')).toBe(401);
      expect(await models(server.url, 'svc_wrong_2', '127.0.0.8, 127.0.0.4')).toBe(401);
      expect(await models(server.url, 'svc_wrong_3', '127.0.0.4')).toBe(429);
      expect(await models(server.url, key, '127.0.0.4')).toBe(200);
      expect(await models(server.url, 'svc_wrong_4', '127.0.0.9, 127.0.0.5')).toBe(401);
    } finally {
      await server.close();
    }
  });

  it('checks what it is given', async () => {
    const { data } = await dataDir();
    for (const [trustProxy, message] of [
      [-1, 'options.trustProxy must be true, false, a hop count (an integer >= 0) or addresses; got -1'],
      [['10.0.0.0/33'], "options.trustProxy: '10.0.0.0/33' is not an address, a CIDR range or loopback, linklocal, uniquelocal"],
      [[], 'options.trustProxy names no address'],
    ] as const) {
      await expect(startServer({ dataDir: data, port: 0, logLevel: 'silent', trustProxy })).rejects.toThrow(new RangeError(message));
    }
  });
});
