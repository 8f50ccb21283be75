// A throwaway PostgreSQL cluster for the tests that need one: initdb + pg_ctl in a temp dir, listening on
// 127.0.0.1 on a free port, its unix socket in the same temp dir. As root (CI) the server runs as the
// `postgres` user through runuser, since PostgreSQL refuses to run as root. Missing binaries fail the test
// file with a message that says what to install: these tests never skip.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

const run = promisify(execFile);

/** Where Debian's `postgresql` package puts the server binaries; `SVC_PG_BIN` overrides. */
function serverBinaries(): string {
  const override = process.env.SVC_PG_BIN;
  const candidates = override !== undefined ? [override] : debianBinDirs();
  for (const dir of candidates) if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  throw new Error(
    `PostgreSQL server binaries (initdb, pg_ctl) not found in ${candidates.join(', ') || '/usr/lib/postgresql/*/bin'}: ` +
      "install Debian's 'postgresql' package (apt-get install postgresql) or set SVC_PG_BIN to their folder",
  );
}

function debianBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(root, version, 'bin'));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, the maintenance database. */
  readonly url: string;
  /** Creates an empty database and returns its URL: one per test keeps tests apart. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a cluster (about 2 s); `stop()` shuts it down and removes its files. */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = serverBinaries();
  const asRoot = process.getuid?.() === 0;
  const exec = (file: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, file), ...args]) : run(join(bin, file), args);
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, 'data');
  const port = await freePort();
  // Trust on a loopback-only throwaway cluster; no fsync: the files are deleted afterwards anyway.
  await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions', '-E', 'UTF8']);
  const serverOptions = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off -c max_connections=200`;
  await exec('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(dir, 'server.log'), '-w', 'start']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let databases = 0;
  return {
    url,
    async createDatabase() {
      databases += 1;
      const name = `svc_test_${databases}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      try {
        await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** One cluster for the calling test file: started before its tests, stopped and removed after them. */
export function usePostgres(): { readonly cluster: PostgresCluster } {
  const holder: { cluster: PostgresCluster } = { cluster: undefined as unknown as PostgresCluster };
  beforeAll(async () => {
    holder.cluster = await startPostgres();
  });
  afterAll(async () => {
    await holder.cluster?.stop();
  });
  return holder;
}
