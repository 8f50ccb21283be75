// The operator commands against a PostgreSQL database (`--database`, SVC_DATABASE_URL), as the real `svc` command.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hashApiKey } from '../../src/service/keys.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { svc } from '../_support/cli.js';
import { usePostgres } from '../_support/postgres.js';

const server = usePostgres();
const dir = mkdtempSync(join(tmpdir(), 'svc-cli-db-'));
let url: string;
beforeAll(async () => {
  url = await server.cluster.createDatabase();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('svc operator commands on a database', () => {
  it('work on the database named by --database or SVC_DATABASE_URL, and leave the data directory empty', async () => {
    const data = join(dir, 'cache');
    expect(await svc(['orgs', 'create', 'acme', '--database', url, '--data', data])).toEqual({ code: 0, stdout: 'acme\n', stderr: '' });
    const created = await svc(['keys', 'create', '--org', 'acme', '--data', data], { SVC_DATABASE_URL: url });
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect((await svc(['proxy', 'grant', '--org', 'acme', '--database', url])).stdout).toBe('proxy access granted to acme\n');
    expect((await svc(['orgs', 'limits', 'acme', '--running', '2'], { SVC_DATABASE_URL: url })).stdout).toBe(
      'acme\trunning=2\nacme\tqueued=10 (default)\nacme\trpm=600 (default)\nacme\torg-rpm=600 (default)\n' +
        'acme\tmodels=1000 (default)\nacme\tversions=100 (default)\nacme\tstorage-mb=5120 (default)\n',
    );
    const project = await svc(['projects', 'create', '--org', 'acme', '--name', 'bot', '--database', url]);
    expect(project.stdout).toMatch(/^proj_[0-9a-f]{12}\n$/);
    expect((await svc(['logs', 'prune', '--database', url])).stdout).toBe('pruned 0 request-log rows\n');
    expect((await svc(['orgs', 'list'], { SVC_DATABASE_URL: url })).stdout).toBe('acme\tproxy=granted\n');

    const store = await PostgresStore.open(url);
    const [stored] = await store.listApiKeys('acme');
    expect(stored.hash).toBe(hashApiKey(key));
    expect(await store.getOrgLimits('acme')).toEqual({
      maxRunningJobs: 2,
      maxQueuedJobs: null,
      requestsPerMinute: null,
      orgRequestsPerMinute: null,
      maxModels: null,
      maxVersionsPerModel: null,
      maxStorageMb: null,
    });
    expect((await store.getProject(project.stdout.trim()))?.name).toBe('bot');
    await store.close();
    // Nothing went to SQLite: the data directory holds no database file.
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a database that is not a postgres:// URL, without printing its password', async () => {
    expect(await svc(['orgs', 'list', '--database', 'mysql://svc:s3cret@db/svc'])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc orgs: --database must be a postgres:// URL; got 'mysql://svc:***@db/svc'\n",
    });
  });
});
