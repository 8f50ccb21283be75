// Operator commands: they open the data directory's store directly (SQLite in WAL mode lets
// them run while `svc serve` is up), so the first organization and key need no server.
import { parseArgs } from 'node:util';

import { openService } from '../service/open.js';
import type { SvcService } from '../service/service.js';
import { usageLines } from './help.js';

const kDataOption = { data: { type: 'string', default: './svc-data' } } as const;

async function withService(dataDir: string, work: (service: SvcService) => Promise<void>): Promise<void> {
  const service = openService(dataDir);
  try {
    await work(service);
  } finally {
    await service.close();
  }
}

/** `svc orgs create <name>` / `svc orgs list`. */
export async function orgsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: kDataOption, allowPositionals: true });
  const [action, name] = positionals;
  if (action === 'create' && name !== undefined && positionals.length === 2) {
    await withService(values.data, async (service) => {
      await service.createOrganization(name);
      console.log(name);
    });
    return 0;
  }
  if (action === 'list' && positionals.length === 1) {
    await withService(values.data, async (service) => {
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
    await withService(values.data, async (service) => {
      const created = await service.createApiKey(values.org!);
      console.log(created.key);
      console.error(`key id ${created.id} for ${created.orgId}; the key is shown only this once`);
    });
    return 0;
  }
  if (action === 'revoke' && keyId !== undefined && positionals.length === 2) {
    await withService(values.data, async (service) => {
      await service.revokeApiKey(keyId);
      console.log(`revoked ${keyId}`);
    });
    return 0;
  }
  if (action === 'list' && values.org !== undefined) {
    await withService(values.data, async (service) => {
      for (const key of await service.store.listApiKeys(values.org!)) {
        console.log(`${key.id}\t${key.prefix}…\t${key.revokedAt === null ? 'active' : 'revoked'}`);
      }
    });
    return 0;
  }
  console.error(usageLines('keys'));
  return 2;
}

/** `svc projects create --org <org> --name <name>` (prints the project id). */
export async function projectsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...kDataOption, org: { type: 'string' }, name: { type: 'string' } },
    allowPositionals: true,
  });
  if (positionals[0] === 'create' && positionals.length === 1 && values.org !== undefined && values.name !== undefined) {
    await withService(values.data, async (service) => {
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
    await withService(values.data, async (service) => {
      await service.setProxyAccess(values.org!, action === 'grant');
      console.log(`proxy access ${action === 'grant' ? 'granted to' : 'revoked from'} ${values.org}`);
    });
    return 0;
  }
  console.error(usageLines('proxy'));
  return 2;
}
