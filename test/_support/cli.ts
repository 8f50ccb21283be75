// Runs the real `svc` command (the TypeScript sources through tsx) as a child process.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { kRepoRoot, kSvcArgs } from '../../fixtures/serve-process.js';

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
