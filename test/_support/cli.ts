// Runs the real `svc` command (the TypeScript sources through tsx) as a child process.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { kRepoRoot, kSvcArgs } from '../../fixtures/serve-process.js';

export { exited, kRepoRoot, serve } from '../../fixtures/serve-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion. */
export function svc(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([...kSvcArgs, ...args], env);
}

/** Runs `bin/svc.js <args>`, the command as npm installs it: over dist/, so after `npx tsup`. */
export function svcBin(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([join(kRepoRoot, 'bin', 'svc.js'), ...args], env);
}

function runNode(nodeArgs: string[], env: Record<string, string>): Promise<CliResult> {
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

