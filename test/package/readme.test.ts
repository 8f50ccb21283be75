// Every command in the README's code blocks, run as a reader runs it, so that the README cannot drift from what the
// package does. A ```console block is a session: each `$ ` line runs in bash, in a fresh folder of its own that holds
// the clone's examples/, with `svc` defined as the README's alias defines it in the clone, and what follows it up to
// the next `$ ` line is the output the README promises. Output is held line by line, with `...` standing for any
// lines; values that differ from run to run or CPU to CPU (model ids, keys, URLs, timestamps, the data path, training
// seconds, what `svc serve` says precision auto runs) match any value of their kind, and an id, key or URL met in an
// output stands for the real one in the commands after it (the model id `svc train` printed is the one `svc predict`
// gets). Other numbers may differ by 0.05 (kernel levels round differently).
// The only changes to the commands: servers listen on a free port (`svc serve --port 0`, PORT=0 for a program),
// SVC_URL points the client commands at the address `svc serve` printed instead of its default 8080, and
// SVC_LOG_FORMAT=pretty gives `svc serve` the log format of a terminal.
// A ```sh block installs the package: the commands it shows must be ones .ci/pack-install or .ci/run runs.
// The quick start fine-tunes a model (`svc train` posts to /v2/train): this file is in the training tier.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { exited, expectFreshBundle, kRepoRoot } from '../_support/cli.js';
import { kLevelSlowdown } from '../_support/level.js';

const kReadme = readFileSync(join(kRepoRoot, 'README.md'), 'utf8');
const kBlocks = [...kReadme.matchAll(/^```(console|sh)\n([\s\S]*?)^```$/gm)].map((m) => ({ kind: m[1], body: m[2] }));

interface Step {
  command: string;
  expected: string[];
}

/** A console block's `$ ` commands, each with the lines the README shows after it. */
function sessionOf(body: string): Step[] {
  const steps: Step[] = [];
  for (const line of body.replace(/\n$/, '').split('\n')) {
    if (line.startsWith('$ ')) steps.push({ command: line.slice(2), expected: [] });
    else steps.at(-1)!.expected.push(line);
  }
  return steps;
}

// What may differ from run to run, by kind; `carry` kinds stand for the real value in later commands.
const kVariables: { pattern: string; carry?: boolean; number?: boolean }[] = [
  { pattern: 'http://127\\.0\\.0\\.1:\\d+', carry: true },
  { pattern: 'svc-small-[0-9a-f]{12}', carry: true },
  { pattern: 'svc_[0-9A-Za-z]{32}', carry: true },
  { pattern: 'key_[0-9a-f]{12}' },
  { pattern: '\\(data: [^)]*\\)' },
  { pattern: '\\b\\d{10}\\b' },
  { pattern: '(?<="train_seconds": )\\d+(?:\\.\\d+)?' },
  // What `precision auto` runs, as measured on this CPU (bf16 where it measured faster), and the kernels' rates.
  { pattern: '(?<=svc: precision auto runs )(?:fp32|bf16) \\([^)]*\\)' },
  { pattern: '-?\\d+\\.\\d+(?:e-?\\d+)?', number: true },
];
const kVariable = new RegExp(kVariables.map((v) => `(${v.pattern})`).join('|'), 'g');

/** Matches one README line against one line of output; returns the carried values (README text -> real), or null. */
function matchLine(expected: string, actual: string, carried: ReadonlyMap<string, string>): Map<string, string> | null {
  let source = '';
  let last = 0;
  const kinds: { kind: (typeof kVariables)[number]; text: string }[] = [];
  for (const m of expected.matchAll(kVariable)) {
    source += expected.slice(last, m.index).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const index = m.slice(1).findIndex((group) => group !== undefined);
    const kind = kVariables[index];
    source += `(${kind.pattern})`; // the patterns hold no groups of their own
    kinds.push({ kind, text: m[0] });
    last = m.index + m[0].length;
  }
  source += expected.slice(last).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`^${source}$`).exec(actual);
  if (match === null) return null;
  const found = new Map<string, string>();
  for (const [i, { kind, text }] of kinds.entries()) {
    const value = match[i + 1];
    if (kind.number && Math.abs(Number(value) - Number(text)) > 0.05) return null;
    if (kind.carry) {
      const known = carried.get(text) ?? found.get(text);
      if (known !== undefined && known !== value) return null;
      found.set(text, value);
    }
  }
  return found;
}

/**
 * Holds the output against the README's lines: `...` stands for any lines; without it, the first and last lines
 * must be the output's own (a server's output, still growing, has no last line).
 */
function matchOutput(expected: string[], output: string, carried: Map<string, string>, open: boolean): boolean {
  const actual = output.replace(/\n$/, '').split('\n');
  const found = new Map<string, string>();
  let at = 0;
  let gap = false;
  for (let e = 0; e < expected.length; e++) {
    if (expected[e] === '...') {
      gap = true;
      continue;
    }
    const known = new Map([...carried, ...found]);
    let hit: Map<string, string> | null = null;
    for (; at < actual.length && hit === null; at++) {
      hit = matchLine(expected[e], actual[at], known);
      if (hit === null && !gap) return false;
    }
    if (hit === null) return false;
    for (const [k, v] of hit) found.set(k, v);
    gap = false;
  }
  if (!open && !gap && at !== actual.length) return false;
  for (const [k, v] of found) carried.set(k, v);
  return true;
}

let bin: string;
const folders: string[] = [];
beforeAll(() => {
  expectFreshBundle();
  // The README's `alias svc="..."` (run in the clone), as a command on the PATH: bash -c does not read aliases.
  const alias = /`alias svc="([^"`]+)"`/.exec(kReadme)?.[1];
  expect(alias).toBeDefined();
  bin = mkdtempSync(join(tmpdir(), 'svc-readme-bin-'));
  folders.push(bin);
  writeFileSync(join(bin, 'svc'), `#!/bin/sh\nexec ${alias!.replaceAll('$PWD', kRepoRoot)} "$@"\n`);
  chmodSync(join(bin, 'svc'), 0o755);
});
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

// The reader's environment, not the test runner's (vitest.config.ts silences the service's log); the log format a
// terminal gets, since bash -c has none.
const { SVC_LOG_LEVEL: _silenced, ...kReaderEnv } = process.env;

function bash(
  command: string,
  cwd: string,
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; stdout: () => string } {
  const child = spawn('bash', ['-c', command], { cwd, env: { ...kReaderEnv, SVC_LOG_FORMAT: 'pretty', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, output: () => stderr + stdout, stdout: () => stdout };
}

/** Runs one console block as a reader would, step by step; throws at the first step whose output is not the README's. */
async function runSession(steps: Step[]): Promise<void> {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-readme-'));
  folders.push(cwd);
  symlinkSync(join(kRepoRoot, 'examples'), join(cwd, 'examples'));
  const env: Record<string, string> = { PATH: `${bin}:${process.env.PATH}` };
  const carried = new Map<string, string>();
  const servers: ChildProcess[] = [];
  try {
    for (const step of steps) {
      let command = step.command;
      for (const [shown, real] of carried) command = command.split(shown).join(real);
      const url = carried.get('http://127.0.0.1:8080');
      if (url !== undefined) env.SVC_URL = url;
      const server = step.command.endsWith(' &') || step.expected.some((line) => /listening on/.test(line));
      if (server) {
        command = command.replace(/ &$/, '').replace(/^svc serve\b/, 'svc serve --port 0');
        const started = bash(command, cwd, { ...env, PORT: '0' });
        servers.push(started.child);
        const deadline = Date.now() + 120_000 * kLevelSlowdown;
        while (!matchOutput(step.expected, started.output(), carried, true)) {
          if (started.child.exitCode !== null || Date.now() > deadline) {
            throw new Error(
              `\`${step.command}\` did not print what the README shows:\n${step.expected.join('\n')}\n--- it printed:\n${started.output()}`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        continue;
      }
      const assignment = /^export (\w+)=\$\((.*)\)$/.exec(command);
      const ran = bash(assignment ? assignment[2] : command, cwd, env);
      const code = await exited(ran.child);
      // `$(...)` takes the command's stdout: the reader sees its stderr only.
      const shown = assignment ? ran.output().slice(0, ran.output().length - ran.stdout().length) : ran.output();
      if (code !== 0 || !matchOutput(step.expected, shown, carried, false)) {
        throw new Error(
          `\`${step.command}\` (exit ${code}) did not print what the README shows:\n${step.expected.join('\n')}\n--- it printed:\n${shown}`,
        );
      }
      if (assignment) env[assignment[1]] = ran.stdout().trim();
    }
  } finally {
    for (const child of servers) {
      child.kill('SIGTERM');
      await exited(child);
    }
  }
}

// The install commands cannot run here (a clone from GitHub, a second project); CI runs each of them, in these lines.
const kInstalledBy: [RegExp, string, RegExp][] = [
  [/^git clone https:\/\/github\.com\/svc-classify\/svc-classify\.git$/, '.ci/run', /^# CI: from a clean clone/m],
  [/^cd svc-classify$/, '.ci/run', /^cd "\$\(dirname "\$0"\)\/\.\."$/m],
  [/^npm install$/, '.ci/run', /^ONNXRUNTIME_NODE_INSTALL=skip npm ci /m],
  [/^npm pack --loglevel warn$/, '.ci/pack-install', /^npm pack --loglevel warn --pack-destination /m],
  [/^mkdir -p \.\.\/my-app && cd \.\.\/my-app && npm init -y$/, '.ci/pack-install', /^npm init -y /m],
  [/^npm install \.\.\/svc-classify\/svc-classify-[\d.]+\.tgz$/, '.ci/pack-install', /npm install "\$tarball" --no-audit/],
  [
    /^npm install-scripts approve svc-classify better-sqlite3$/,
    '.ci/pack-install',
    /^ {2}npm install-scripts approve svc-classify better-sqlite3 /m,
  ],
];

describe('README.md', () => {
  it('has console sessions and install blocks to run', () => {
    expect(kBlocks.filter((b) => b.kind === 'console').length).toBeGreaterThanOrEqual(3);
    expect(kBlocks.filter((b) => b.kind === 'sh').length).toBeGreaterThanOrEqual(1);
  });

  it('shows only install commands that CI runs', () => {
    const commands = kBlocks
      .filter((b) => b.kind === 'sh')
      .flatMap((b) => b.body.split('\n'))
      .map((line) => line.replace(/#.*$/, '').trim())
      .filter((line) => line !== '');
    const unrun = commands.filter((command) => {
      const entry = kInstalledBy.find(([shown]) => shown.test(command));
      return entry === undefined || !entry[2].test(readFileSync(join(kRepoRoot, entry[1]), 'utf8'));
    });
    expect(unrun).toEqual([]);
  });

  const sessions = kBlocks.filter((b) => b.kind === 'console').map((b) => sessionOf(b.body));
  for (const steps of sessions) {
    it(
      `runs ${steps.map((s) => `\`${s.command.slice(0, 40)}\``).join(', ')} and prints what it shows`,
      async () => {
        await runSession(steps);
      },
      900_000 * kLevelSlowdown,
    ); // the quick start fine-tunes: minutes on a loaded machine
  }
});

describe('the README output matcher', () => {
  it('carries ids, allows gaps and rounding, and refuses other text', () => {
    const carried = new Map<string, string>();
    expect(
      matchOutput(
        ['...', '{', '  "id": "svc-small-508068fc8e22",', '  "p": 0.72', '}'],
        'finetune 1/2\n{\n  "id": "svc-small-aaaaaaaaaaaa",\n  "p": 0.74\n}\n',
        carried,
        false,
      ),
    ).toBe(true);
    expect(carried.get('svc-small-508068fc8e22')).toBe('svc-small-aaaaaaaaaaaa');
    expect(matchOutput(['  "id": "svc-small-508068fc8e22",'], '  "id": "svc-small-bbbbbbbbbbbb",\n', carried, false)).toBe(false);
    expect(matchOutput(['true 0.632 A text.'], 'true 0.700 A text.\n', carried, false)).toBe(false);
    expect(matchOutput(['true 0.632 A text.'], 'false 0.632 A text.\n', carried, false)).toBe(false);
    expect(matchOutput(['a'], 'a\nb\n', carried, false)).toBe(false);
    expect(matchOutput(['a'], 'a\nb\n', carried, true)).toBe(true);
    expect(
      matchOutput(
        ['on http://127.0.0.1:8080 (data: /home/me/svc-data)'],
        'on http://127.0.0.1:41234 (data: /tmp/x/svc-data)\n',
        carried,
        false,
      ),
    ).toBe(true);
    expect(carried.get('http://127.0.0.1:8080')).toBe('http://127.0.0.1:41234');
    const precision = ['svc: precision auto runs fp32 (kernel fp32, measured: fp32 88.7 GFLOP/s)'];
    const bf16 = 'svc: precision auto runs bf16 (kernel bf16-vector, from the cache: fp32 61.0 GFLOP/s, bf16-vector 120.4 GFLOP/s)\n';
    expect(matchOutput(precision, bf16, carried, false)).toBe(true);
    expect(matchOutput(precision, 'svc: precision auto runs bf16 (kernel bf16-emulated, forced)\n', carried, false)).toBe(true);
    expect(matchOutput(precision, 'svc: precision auto runs int8 (kernel fp32)\n', carried, false)).toBe(false);
    expect(matchOutput(precision, 'svc: could not read the precision auto runs: worker died\n', carried, false)).toBe(false);
  });
});
