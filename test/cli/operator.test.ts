// The operator commands, run as the real `svc` command against a temporary data directory.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { cpuInfo } from '../../src/native/index.js';
import { hashApiKey } from '../../src/service/keys.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { kRepoRoot, svc } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('svc operator commands', () => {
  it('create organizations, keys (shown once), projects and proxy grants, and revoke them', async () => {
    expect(await svc(['orgs', 'create', 'acme', '--data', dir])).toEqual({ code: 0, stdout: 'acme\n', stderr: '' });
    expect(await svc(['orgs', 'create', 'acme', '--data', dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc orgs: The organization 'acme' already exists\n",
    });

    const created = await svc(['keys', 'create', '--org', 'acme', '--data', dir]);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^svc_[0-9A-Za-z]{32}$/);
    const keyId = /^key id (key_[0-9a-f]{12}) for acme; the key is shown only this once\n$/.exec(created.stderr)?.[1];
    expect(keyId).toBeDefined();

    const project = await svc(['projects', 'create', '--org', 'acme', '--name', 'support bot', '--data', dir]);
    expect(project.code).toBe(0);
    const projectId = project.stdout.trim();
    expect(projectId).toMatch(/^proj_[0-9a-f]{12}$/);

    expect((await svc(['proxy', 'grant', '--org', 'acme', '--data', dir])).stdout).toBe('proxy access granted to acme\n');
    expect((await svc(['orgs', 'list', '--data', dir])).stdout).toBe('acme\tproxy=granted\n');
    expect((await svc(['proxy', 'revoke', '--org', 'acme', '--data', dir])).stdout).toBe('proxy access revoked from acme\n');

    expect(await svc(['keys', 'revoke', keyId!, '--data', dir])).toEqual({ code: 0, stdout: `revoked ${keyId}\n`, stderr: '' });
    expect((await svc(['keys', 'list', '--org', 'acme', '--data', dir])).stdout).toBe(`${keyId}\t${key.slice(0, 8)}…\trevoked\n`);

    const store = SqliteStore.open(dir);
    const [record] = await store.listApiKeys('acme');
    expect(record.hash).toBe(hashApiKey(key));
    expect(await store.getProject(projectId)).toMatchObject({ orgId: 'acme', name: 'support bot' });
    expect((await store.getOrganization('acme'))?.proxyAccess).toBe(false);
    await store.close();
  });

  it("show and set an organization's limits and a project's token budget", async () => {
    await svc(['orgs', 'create', 'limited', '--data', dir]);
    expect(await svc(['orgs', 'limits', 'limited', '--data', dir])).toEqual({
      code: 0,
      stdout:
        'limited\trunning=1 (default)\nlimited\tqueued=10 (default)\nlimited\trpm=600 (default)\nlimited\torg-rpm=600 (default)\n' +
        'limited\tmodels=1000 (default)\nlimited\tversions=100 (default)\nlimited\tstorage-mb=5120 (default)\n',
      stderr: '',
    });
    expect((await svc(['orgs', 'limits', 'limited', '--running', '2', '--rpm', '60', '--data', dir])).stdout).toBe(
      'limited\trunning=2\nlimited\tqueued=10 (default)\nlimited\trpm=60\nlimited\torg-rpm=60 (default)\n' +
        'limited\tmodels=1000 (default)\nlimited\tversions=100 (default)\nlimited\tstorage-mb=5120 (default)\n',
    );
    expect((await svc(['orgs', 'limits', 'limited', '--rpm', 'default', '--data', dir])).stdout).toBe(
      'limited\trunning=2\nlimited\tqueued=10 (default)\nlimited\trpm=600 (default)\nlimited\torg-rpm=600 (default)\n' +
        'limited\tmodels=1000 (default)\nlimited\tversions=100 (default)\nlimited\tstorage-mb=5120 (default)\n',
    );
    expect((await svc(['orgs', 'limits', 'limited', '--org-rpm', '1800', '--data', dir])).stdout).toBe(
      'limited\trunning=2\nlimited\tqueued=10 (default)\nlimited\trpm=600 (default)\nlimited\torg-rpm=1800\n' +
        'limited\tmodels=1000 (default)\nlimited\tversions=100 (default)\nlimited\tstorage-mb=5120 (default)\n',
    );
    // Storage quotas: models, versions per model and MiB in all, set and given back like the others.
    expect(
      (await svc(['orgs', 'limits', 'limited', '--models', '5', '--versions', '3', '--storage-mb', '20480', '--data', dir])).stdout,
    ).toBe(
      'limited\trunning=2\nlimited\tqueued=10 (default)\nlimited\trpm=600 (default)\nlimited\torg-rpm=1800\n' +
        'limited\tmodels=5\nlimited\tversions=3\nlimited\tstorage-mb=20480\n',
    );
    const quotas = SqliteStore.open(dir);
    expect(await quotas.getOrgLimits('limited')).toMatchObject({ maxModels: 5, maxVersionsPerModel: 3, maxStorageMb: 20480 });
    await quotas.close();
    expect((await svc(['orgs', 'limits', 'limited', '--storage-mb', 'default', '--data', dir])).stdout).toBe(
      'limited\trunning=2\nlimited\tqueued=10 (default)\nlimited\trpm=600 (default)\nlimited\torg-rpm=1800\n' +
        'limited\tmodels=5\nlimited\tversions=3\nlimited\tstorage-mb=5120 (default)\n',
    );
    expect(await svc(['orgs', 'limits', 'limited', '--storage-mb', '1.5', '--data', dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc orgs: --storage-mb must be a positive integer or 'default'; got '1.5'\n",
    });
    expect(await svc(['orgs', 'limits', 'limited', '--queued', '0', '--data', dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc orgs: --queued must be a positive integer or 'default'; got '0'\n",
    });
    expect(await svc(['orgs', 'limits', 'ghost', '--data', dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc orgs: The organization 'ghost' does not exist\n",
    });

    const projectId = (await svc(['projects', 'create', '--org', 'limited', '--name', 'bot', '--data', dir])).stdout.trim();
    expect(await svc(['projects', 'budget', projectId, '--tokens', '2000000', '--data', dir])).toEqual({
      code: 0,
      stdout: `${projectId}\tmonthly_tokens=2000000\n`,
      stderr: '',
    });
    expect((await svc(['projects', 'budget', projectId, '--tokens', 'none', '--data', dir])).stdout).toBe(
      `${projectId}\tmonthly_tokens=none\n`,
    );
    expect(await svc(['projects', 'budget', projectId, '--tokens', 'lots', '--data', dir])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc projects: --tokens must be a whole number of tokens or 'none'; got 'lots'\n",
    });
  });

  it('prune the request log by hand: rows past the age or the per-project count go, and the count is printed', async () => {
    const logs = join(dir, 'logs');
    const store = SqliteStore.open(logs);
    const day = 24 * 60 * 60 * 1000;
    const row = {
      projectId: 'proj_1',
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
    // Six rows 40, 20, 10, 3, 2 and 1 days old.
    for (const age of [40, 20, 10, 3, 2, 1]) await store.insertRequestLog({ ...row, createdAt: Date.now() - age * day });
    await store.close();
    // Default 30 days: the 40-day-old row.
    expect(await svc(['logs', 'prune', '--data', logs])).toEqual({ code: 0, stdout: 'pruned 1 request-log row\n', stderr: '' });
    expect(await svc(['logs', 'prune', '--days', '15', '--max-rows', '2', '--data', logs])).toEqual({
      code: 0,
      stdout: 'pruned 3 request-log rows\n',
      stderr: '',
    });
    const after = SqliteStore.open(logs);
    const ages = (await after.listRequestLog('proj_1', { limit: 10 })).map((r) => Math.round((Date.now() - r.createdAt) / day));
    await after.close();
    expect(ages).toEqual([1, 2]);
    expect(await svc(['logs', 'prune', '--days', '0', '--data', logs])).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc logs: --days must be a positive integer; got '0'\n",
    });
  });

  it('explains wrong usage with exit code 2', async () => {
    expect(await svc(['keys', 'create', '--data', dir])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'usage: svc keys create --org <org> [--data <dir>]\n' +
        '       svc keys list --org <org> [--data <dir>]\n' +
        '       svc keys revoke <key-id> [--data <dir>]\n' +
        "Run 'svc keys --help' for its options and examples.\n",
    });
    expect(await svc(['orgs', 'create', 'x', '--colour', 'red'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc orgs: unknown option '--colour'\nRun 'svc orgs --help' for its options and examples.\n",
    });
    const nope = await svc(['frobnicate']);
    expect([nope.code, nope.stderr.split('\n')[0]]).toEqual([2, "svc: unknown command 'frobnicate'"]);
    const info = JSON.parse((await svc(['info', '--json'])).stdout) as { version: string; cpu: object };
    expect([info.version, Object.keys(info.cpu)]).toEqual([
      (JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as { version: string }).version,
      Object.keys(cpuInfo()),
    ]);
  });
});
