// Operator commands: they open the store directly (the data directory's SQLite file in WAL mode, or the
// PostgreSQL database of `--database` / SVC_DATABASE_URL), also while `svc serve` is up, so the first
// organization and key need no server.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { SvcError } from '../errors.js';
import { kOrgLimitFlags, type ResolvedOrgLimits } from '../service/limits.js';
import type { RetentionOptions } from '../service/retention.js';
import { connectService, databaseUrlFromEnv } from '../service/open.js';
import type { SvcService } from '../service/service.js';
import type { OrgLimits } from '../store/types.js';
import { usageLines } from './help.js';

const kDataOption = { data: { type: 'string', default: './svc-data' }, database: { type: 'string' } } as const;

/**
 * Runs `work` on the service at `--data` / `--database`. A data directory that does not exist is refused (a mistyped
 * `--data` must not leave an empty store behind), unless the command creates things (`create`): then it is made, and
 * said on stderr.
 */
async function withService(
  where: { data: string; database?: string },
  work: (service: SvcService) => Promise<void>,
  { create = false }: { create?: boolean } = {},
): Promise<void> {
  const database = where.database ?? databaseUrlFromEnv();
  const fresh = database === undefined && !existsSync(where.data);
  if (fresh && !create) {
    throw new SvcError(
      'not_found',
      `no data directory at ${resolve(where.data)}: check --data (svc orgs create <name> or svc serve makes a new one)`,
      { param: 'data' },
    );
  }
  const service = await connectService({ dataDir: where.data, database });
  if (fresh) console.error(`svc: created the data directory ${resolve(where.data)}`);
  try {
    await work(service);
  } finally {
    await service.close();
  }
}

/** A count as the operator types it: a positive integer, else a message naming the flag and what it accepts. */
export function countValue(flag: string, text: string, alternative = ''): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new SvcError('invalid_request', `--${flag} must be a positive integer${alternative}; got '${text}'`, { param: flag });
  }
  return n;
}

/** A limit as the operator types it: a positive integer, or `default` to clear the organization's own. */
function limitValue(flag: string, text: string): number | null {
  return text === 'default' ? null : countValue(flag, text, " or 'default'");
}

function printLimits(orgId: string, limits: ResolvedOrgLimits, own: OrgLimits): void {
  for (const name of Object.keys(kOrgLimitFlags) as (keyof OrgLimits)[]) {
    console.log(`${orgId}\t${kOrgLimitFlags[name]}=${limits[name]}${own[name] === null ? ' (default)' : ''}`);
  }
}

/**
 * `svc orgs create <name>` / `svc orgs list` /
 * `svc orgs limits <name> [--running n] [--queued n] [--rpm n] [--org-rpm n] [--models n] [--versions n] [--storage-mb n]`.
 */
export async function orgsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...kDataOption,
      running: { type: 'string' },
      queued: { type: 'string' },
      rpm: { type: 'string' },
      'org-rpm': { type: 'string' },
      models: { type: 'string' },
      versions: { type: 'string' },
      'storage-mb': { type: 'string' },
    },
    allowPositionals: true,
  });
  const [action, name] = positionals;
  if (action === 'limits' && name !== undefined && positionals.length === 2) {
    const change: Partial<OrgLimits> = {};
    for (const field of Object.keys(kOrgLimitFlags) as (keyof OrgLimits)[]) {
      const text = values[kOrgLimitFlags[field] as 'running' | 'queued' | 'rpm' | 'org-rpm' | 'models' | 'versions' | 'storage-mb'];
      if (text !== undefined) change[field] = limitValue(kOrgLimitFlags[field], text);
    }
    await withService(values, async (service) => {
      const limits = await service.setOrgLimits(name, change);
      printLimits(name, limits, await service.store.getOrgLimits(name));
    });
    return 0;
  }
  if (action === 'create' && name !== undefined && positionals.length === 2) {
    await withService(
      values,
      async (service) => {
        await service.createOrganization(name);
        console.log(name);
      },
      { create: true },
    );
    return 0;
  }
  if (action === 'list' && positionals.length === 1) {
    await withService(values, async (service) => {
      for (const org of await service.store.listOrganizations()) {
        console.log(`${org.id}\tproxy=${org.proxyAccess ? 'granted' : 'no'}`);
      }
    });
    return 0;
  }
  console.error(usageLines('orgs'));
  return 2;
}

// Each command opens with its own parseArgs call and ends with its usage line; the alike shapes
// are that boilerplate, kept per command so each lists its own options.
/** `svc keys create --org <org>` (prints the key, once) / `svc keys revoke <key-id>` / `svc keys list --org <org>`. */
export async function keysCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...kDataOption, org: { type: 'string' } },
    allowPositionals: true,
  });
  const [action, keyId] = positionals;
  if (action === 'create' && values.org !== undefined && positionals.length === 1) {
    await withService(values, async (service) => {
      const created = await service.createApiKey(values.org!);
      console.log(created.key);
      console.error(`key id ${created.id} for ${created.orgId}; the key is shown only this once`);
    });
    return 0;
  }
  if (action === 'revoke' && keyId !== undefined && positionals.length === 2) {
    await withService(values, async (service) => {
      await service.revokeApiKey(keyId);
      console.log(`revoked ${keyId}`);
    });
    return 0;
  }
  if (action === 'list' && values.org !== undefined) {
    await withService(values, async (service) => {
      for (const key of await service.store.listApiKeys(values.org!)) {
        console.log(`${key.id}\t${key.prefix}…\t${key.revokedAt === null ? 'active' : 'revoked'}`);
      }
    });
    return 0;
  }
  console.error(usageLines('keys'));
  return 2;
}

/**
 * `svc projects create --org <org> --name <name>` (prints the project id) /
 * `svc projects budget <project-id> --tokens <n|none>`.
 */
export async function projectsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...kDataOption, org: { type: 'string' }, name: { type: 'string' }, tokens: { type: 'string' } },
    allowPositionals: true,
  });
  if (positionals[0] === 'budget' && positionals.length === 2 && values.tokens !== undefined) {
    const text = values.tokens;
    const tokens = text === 'none' ? null : /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
    if (tokens !== null && !Number.isSafeInteger(tokens)) {
      throw new SvcError('invalid_request', `--tokens must be a whole number of tokens or 'none'; got '${text}'`, { param: 'tokens' });
    }
    await withService(values, async (service) => {
      const project = await service.setProjectBudget(positionals[1], tokens);
      console.log(`${project.id}\tmonthly_tokens=${project.monthlyTokenBudget ?? 'none'}`);
    });
    return 0;
  }
  if (positionals[0] === 'create' && positionals.length === 1 && values.org !== undefined && values.name !== undefined) {
    await withService(values, async (service) => {
      console.log((await service.createProject(values.org!, values.name!)).id);
    });
    return 0;
  }
  console.error(usageLines('projects'));
  return 2;
}

/** `svc proxy grant --org <org>` / `svc proxy revoke --org <org>`. */
export async function proxyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { ...kDataOption, org: { type: 'string' } }, allowPositionals: true });
  const [action] = positionals;
  if ((action === 'grant' || action === 'revoke') && positionals.length === 1 && values.org !== undefined) {
    await withService(values, async (service) => {
      await service.setProxyAccess(values.org!, action === 'grant');
      console.log(`proxy access ${action === 'grant' ? 'granted to' : 'revoked from'} ${values.org}`);
    });
    return 0;
  }
  console.error(usageLines('proxy'));
  return 2;
}

/** `svc logs prune [--days n] [--max-rows n]`: prunes the proxy request log now and prints how many rows went. */
export async function logsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...kDataOption, days: { type: 'string' }, 'max-rows': { type: 'string' } },
    allowPositionals: true,
  });
  if (positionals.length === 1 && positionals[0] === 'prune') {
    const retention: RetentionOptions = {};
    if (values.days !== undefined) retention.days = countValue('days', values.days);
    if (values['max-rows'] !== undefined) retention.maxRowsPerProject = countValue('max-rows', values['max-rows']);
    await withService(values, async (service) => {
      const removed = await service.pruneRequestLog(retention);
      console.log(`pruned ${removed} request-log row${removed === 1 ? '' : 's'}`);
    });
    return 0;
  }
  console.error(usageLines('logs'));
  return 2;
}
