// Runs the real `svc` command (the TypeScript sources through tsx) as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const kRepoRoot = fileURLToPath(new URL('../..', import.meta.url));
const kArgs = ['--import', 'tsx', 'src/cli/main.ts'];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion. */
export function svc(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([...kArgs, ...args], env);
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

/** Starts `svc serve --port 0 ...` and resolves once it logged its address. */
export function serve(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...kArgs, 'serve', '--port', '0', ...args], {
      cwd: kRepoRoot,
      env: { ...process.env, ...env },
    });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /svc listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ child, url: match[1], output: () => output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`svc serve exited with ${code} before listening:\n${output}`)));
  });
}

/** Waits for a child process to exit; resolves to its exit code or signal. */
export function exited(child: ChildProcess): Promise<number | string | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
}
