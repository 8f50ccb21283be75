// Runs the real `svc` command (the TypeScript sources through tsx) as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const kRepoRoot = fileURLToPath(new URL('../..', import.meta.url));
const kArgs = ['--import', 'tsx', 'src/cli/main.ts'];

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
  return runNode([...kArgs, ...args], env);
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

/** Starts `svc serve --port 0 ...` and resolves once it logged its address. */
export function serve(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return startNode([...kArgs, 'serve', '--port', '0', ...args], /svc listening on (http:\/\/\S+)/, { env });
}

/**
 * Starts `node <nodeArgs>` (from the repository root unless `cwd` says otherwise) and resolves once
 * its stdout or stderr matches `ready`, whose first group is the address it listens on.
 */
export function startNode(
  nodeArgs: string[],
  ready: RegExp,
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs, {
      cwd: options.cwd ?? kRepoRoot,
      env: { ...process.env, ...options.env },
    });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) resolve({ child, url: match[1], output: () => output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${nodeArgs.join(' ')} exited with ${code} before listening:\n${output}`)));
  });
}

/** Waits for a child process to exit; resolves to its exit code or signal. */
export function exited(child: ChildProcess): Promise<number | string | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
}
