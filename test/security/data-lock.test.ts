// The data-directory lock and the schema migration, with real processes on real directories.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, afterEach, expect, it } from 'vitest';

import { startServer } from '../../src/server/app.js';
import { kLockFile, lockDataDir } from '../../src/service/data-lock.js';
import { kMigrations } from '../../src/store/migrations.js';
import { kRepoRoot } from '../_support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'svc-lock-'));
let count = 0;
const children: ChildProcess[] = [];
const fresh = () => join(root, `dir-${count++}`);

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function child(args: string[]): { process: ChildProcess; output: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/_support/data-dir-child.ts', ...args], { cwd: kRepoRoot });
  children.push(proc);
  // A process that tried and lost has exited by the time the test ends the stdins: its closed pipe is no error.
  proc.stdin!.on('error', () => {});
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const output = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { process: proc, output };
}

/** Starts a process that holds the lock on `dir`; resolves once it does. */
async function holder(dir: string): Promise<ChildProcess> {
  const { process: proc } = child(['lock', dir]);
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve());
    proc.on('close', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return proc;
}

it.each([
  ['pid 1 (a container restarted)', '1\n'],
  ['our own pid', `${process.pid}\n`],
  ['an empty file', ''],
  ['garbage', 'not a pid'],
])('starts over a serve.pid naming %s', (_name, content) => {
  const dir = fresh();
  mkdirSync(dir);
  writeFileSync(join(dir, kLockFile), content);
  const release = lockDataDir(dir);
  expect(readFileSync(join(dir, kLockFile), 'utf8')).toBe(`${process.pid}\n`);
  release();
  expect(existsSync(join(dir, kLockFile))).toBe(false);
});

it('refuses a second lock in the same process, and gives it once released', () => {
  const dir = fresh();
  const release = lockDataDir(dir);
  expect(() => lockDataDir(dir)).toThrow(`another svc serve (pid ${process.pid}) is using the data directory ${dir}`);
  release();
  lockDataDir(dir)();
});

it('refuses while a live process holds it, and takes it over the moment that process is killed', async () => {
  const dir = fresh();
  const proc = await holder(dir);
  expect(() => lockDataDir(dir)).toThrow(`another svc serve (pid ${proc.pid}) is using the data directory ${dir}`);
  proc.kill('SIGKILL');
  await new Promise((resolve) => proc.once('close', resolve));
  // The dead holder's serve.pid is still there; the kernel dropped its lock.
  expect(readFileSync(join(dir, kLockFile), 'utf8')).toBe(`${proc.pid}\n`);
  lockDataDir(dir)();
});

it('takes the lock before touching the store: a held directory gets no database', async () => {
  const dir = fresh();
  const proc = await holder(dir);
  await expect(startServer({ dataDir: dir, port: 0, proxy: false })).rejects.toMatchObject({
    code: 'conflict',
    message: `another svc serve (pid ${proc.pid}) is using the data directory ${dir}`,
  });
  expect(existsSync(join(dir, 'svc.sqlite'))).toBe(false);
});

it('gives the lock to exactly one of six processes trying at the same instant, a stale serve.pid notwithstanding', async () => {
  const dir = fresh();
  mkdirSync(dir);
  writeFileSync(join(dir, kLockFile), '999999\n');
  const at = String(Date.now() + 4_000);
  const tries = Array.from({ length: 6 }, () => child(['try-lock', dir, at]));
  // Each prints one line once it has tried; only then may the winner let go.
  await Promise.all(
    tries.map(
      ({ process: proc }) =>
        new Promise((resolve) => {
          let line = '';
          proc.stdout!.on('data', (chunk: Buffer) => (line += chunk.toString()).includes('\n') && resolve(line));
          proc.on('close', resolve);
        }),
    ),
  );
  for (const { process: proc } of tries) if (proc.exitCode === null) proc.stdin!.end();
  const results = await Promise.all(tries.map(({ output }) => output));
  expect(results.map((r) => [r.code, r.stderr])).toEqual(Array(6).fill([0, '']));
  expect(results.map((r) => r.stdout.trim()).sort()).toEqual(['conflict', 'conflict', 'conflict', 'conflict', 'conflict', 'locked']);
});

it('migrates a fresh directory opened by four processes at once while another is mid-migration: all succeed, one schema version', async () => {
  // The state a first opener leaves between creating the version table and finishing migration 1, frozen by a
  // write transaction we hold while four processes open the directory at the same instant.
  const dir = fresh();
  mkdirSync(dir);
  const first = new Database(join(dir, 'svc.sqlite'));
  first.pragma('journal_mode = WAL');
  first.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (0)');
  first.exec('BEGIN IMMEDIATE');
  const at = Date.now() + 4_000;
  const outputs = Array.from({ length: 4 }, () => child(['open', dir, String(at)]).output);
  await new Promise((resolve) => setTimeout(resolve, at + 1_000 - Date.now()));
  first.exec('ROLLBACK');
  first.close();
  const results = await Promise.all(outputs);
  expect(results.map((r) => [r.code, r.stderr])).toEqual(Array(4).fill([0, '']));
  expect(results.map((r) => r.stdout.trim())).toEqual(Array(4).fill(JSON.stringify([{ version: kMigrations.length }])));
});
