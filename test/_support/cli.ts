// Runs the real `svc` command (the TypeScript sources through tsx) as a child process.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import { exited, kRepoRoot, kSvcArgs, serve } from '../../fixtures/serve-process.js';

export { exited, kRepoRoot, serve, startNode } from '../../fixtures/serve-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Throws unless dist/ is at least as new as every file in src/: tests of the built package (bin/svc.js,
 * the examples importing `svc-classify`) would otherwise test yesterday's code.
 */
export function expectFreshBundle(): void {
  const bundle = join(kRepoRoot, 'dist', 'cli.js');
  let built: number;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    throw new Error(`${bundle} is missing: run 'npx tsup' first`);
  }
  const newer = readdirSync(join(kRepoRoot, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && statSync(join(entry.parentPath, entry.name)).mtimeMs > built)
    .map((entry) => entry.name);
  if (newer.length > 0) throw new Error(`dist/cli.js is older than src/ (${newer.join(', ')}): run 'npx tsup' first`);
}

/** Runs `svc <args>` to completion. */
export function svc(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([...kSvcArgs, ...args], env);
}

/** Runs `bin/svc.js <args>`, the command as npm installs it: over dist/, so after `npx tsup`. */
export function svcBin(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([join(kRepoRoot, 'bin', 'svc.js'), ...args], env);
}

/** Runs `node <nodeArgs>` from the repository root to completion. */
export function runNode(nodeArgs: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs, { cwd: kRepoRoot, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** What useServedOrg gives a test file: the temporary folder, and SVC_URL and SVC_KEY once the server is up. */
export interface ServedOrg {
  dir: string;
  env: Record<string, string>;
}

/**
 * A `svc serve` child over a fresh data directory in a temporary folder (`prefix`), with the organization `acme` and a
 * key of it, for the calling file's tests: started before them, stopped and removed after. `env` is filled in place,
 * so a file may take it apart at once.
 */
export function useServedOrg(prefix: string): ServedOrg {
  const served: ServedOrg = { dir: mkdtempSync(join(tmpdir(), prefix)), env: {} };
  const data = join(served.dir, 'data');
  let server: Awaited<ReturnType<typeof serve>> | undefined;
  beforeAll(async () => {
    await svc(['orgs', 'create', 'acme', '--data', data]);
    const key = (await svc(['keys', 'create', '--org', 'acme', '--data', data])).stdout.trim();
    server = await serve(['--data', data]);
    Object.assign(served.env, { SVC_URL: server.url, SVC_KEY: key });
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    if (server) await exited(server.child);
    rmSync(served.dir, { recursive: true, force: true });
  });
  return served;
}
