// `svc --help`, `svc help <command>`, every command's `--help`, `--version`, and the messages for a
// wrong command line, from the real `bin/svc.js` as npm installs it (so over dist/: `npx tsup` first).
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { kCommandNames } from '../../src/cli/help.js';
import { expectFreshBundle, kRepoRoot, svcBin } from '../_support/cli.js';

const kVersion = (JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as { version: string }).version;

/** A loopback port nothing listens on: one the system just handed out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(expectFreshBundle);

describe('svc help', () => {
  it('--help, -h and `svc help` list every command; --version prints the package version', async () => {
    const overview = await svcBin(['--help']);
    expect([overview.code, overview.stderr]).toEqual([0, '']);
    expect(overview.stdout.split('\n')[0]).toBe(`svc ${kVersion}: train few-shot text classifiers, serve them, proxy chat models`);
    const listed = [...overview.stdout.matchAll(/^ {2}([a-z]+) {2,}\S/gm)].map((m) => m[1]);
    expect(listed).toEqual([
      'serve',
      'orgs',
      'keys',
      'projects',
      'proxy',
      'logs',
      'train',
      'predict',
      'classify',
      'models',
      'shadow',
      'pull',
      'info',
      'help',
    ]);
    expect(await svcBin(['-h'])).toEqual(overview);
    expect(await svcBin(['help'])).toEqual(overview);

    expect(await svcBin(['--version'])).toEqual({ code: 0, stdout: `${kVersion}\n`, stderr: '' });
    expect(await svcBin(['-v'])).toEqual({ code: 0, stdout: `${kVersion}\n`, stderr: '' });
    // No command: the same list, on stderr, as a wrong call.
    expect(await svcBin([])).toEqual({ code: 2, stdout: '', stderr: overview.stdout });
  });

  it.each(kCommandNames)('svc %s --help prints its usage, options and examples, and does nothing else', async (command) => {
    // SVC_URL points nowhere: a client command that ran anyway would fail, not print help.
    const env = { SVC_KEY: 'svc_nope', SVC_URL: 'http://127.0.0.1:9' };
    const help = await svcBin([command, '--help'], env);
    expect([help.code, help.stderr]).toEqual([0, '']);
    const sections = help.stdout.split('\n\n');
    expect(sections[0]).toMatch(new RegExp(`^svc ${command}: \\S`));
    expect(sections[1]).toMatch(new RegExp(`^usage: svc ${command}\\b`));
    expect(sections.at(-1)).toMatch(new RegExp(`^examples:\\n( {2}.*svc ${command}\\b.*\\n)+$`));
    expect(await svcBin([command, '-h'], env)).toEqual(help);
    expect(await svcBin(['help', command], env)).toEqual(help);
    if (command !== 'help' && command !== 'info') {
      expect(help.stdout).toMatch(/^options:\n(.*\n)* {2}-h, --help {2,}show this help\n/m);
      // Help anywhere among the other options wins over running the command.
      expect(await svcBin([command, 'create', '--org', 'acme', '--help'], env)).toEqual(help);
    }
  });

  it('train --help names every examples-file format; serve --help lists every serve option', async () => {
    const train = (await svcBin(['train', '--help'])).stdout;
    for (const word of ['JSONL', 'CSV', 'TSV', 'semicolon', 'tab', 'JSON array', '{"examples": [...]}', '--label-text', '--wait']) {
      expect(train).toContain(word);
    }
    const serve = (await svcBin(['serve', '--help'])).stdout;
    for (const flag of [
      '--port',
      '--host',
      '--data',
      '--database',
      '--redis',
      '--artifacts',
      '--workers',
      '--engine-threads',
      '--precision',
      '--predict-queue',
      '--predict-queue-per-org',
      '--predict-deadline-ms',
      '--proxy-models',
      '--provider-a-url',
      '--provider-a-key',
    ]) {
      expect(serve).toContain(`  ${flag} `);
    }
    for (const command of ['orgs', 'keys', 'projects', 'proxy', 'logs']) {
      expect((await svcBin([command, '--help'])).stdout).toContain('  --database <url> ');
    }
  });
});

describe('a wrong command line', () => {
  it('says what is wrong and where the help is, with exit code 2', async () => {
    expect(await svcBin(['trian'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: unknown command 'trian' (did you mean 'train'?)\nRun 'svc --help' for the list of commands.\n",
    });
    expect(await svcBin(['frobnicate'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: unknown command 'frobnicate'\nRun 'svc --help' for the list of commands.\n",
    });
    expect(await svcBin(['help', 'frobnicate'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: unknown command 'frobnicate'\nRun 'svc --help' for the list of commands.\n",
    });
    expect(await svcBin(['--verbose'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: unknown option '--verbose'\nRun 'svc --help' for the commands and options.\n",
    });
    expect(await svcBin(['train', '--example', 'x.jsonl'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc train: unknown option '--example' (did you mean '--examples'?)\nRun 'svc train --help' for its options and examples.\n",
    });
    expect(await svcBin(['predict', '--model'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc predict: option '--model <value>' argument missing\nRun 'svc predict --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', 'now'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc serve: unexpected argument 'now'\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', '--port', 'http'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc serve: --port must be an integer from 0 to 65535, got 'http'\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', '--log-level', 'loud'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "svc serve: --log-level must be one of fatal, error, warn, info, debug, trace, silent; got 'loud'\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', '--predict-queue', 'many'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc serve: --predict-queue must be a positive integer, got 'many'\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', '--predict-queue-per-org', 'half'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "svc serve: --predict-queue-per-org must be a positive integer, got 'half'\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['serve', '--predict-deadline-ms', '0'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc serve: --predict-deadline-ms must be a positive integer\nRun 'svc serve --help' for its options and examples.\n",
    });
    expect(await svcBin(['info', 'now'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc info: unexpected argument 'now'\nRun 'svc info --help' for its options and examples.\n",
    });
    expect(await svcBin(['logs', 'purge'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "usage: svc logs prune [--days <n>] [--max-rows <n>] [--data <dir>]\nRun 'svc logs --help' for its options and examples.\n",
    });
    expect(await svcBin(['orgs', 'rename', 'acme'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "usage: svc orgs create <name> [--data <dir>]\n       svc orgs list [--data <dir>]\n       svc orgs limits <name> [--running <n>] [--queued <n>] [--rpm <n>] [--org-rpm <n>] [--models <n>] [--versions <n>] [--storage-mb <n>] [--data <dir>]\nRun 'svc orgs --help' for its options and examples.\n",
    });
  });

  it('a client command names the address it could not reach and why', async () => {
    const port = await closedPort();
    const env = { SVC_KEY: 'svc_nope', SVC_URL: `http://127.0.0.1:${port}` };
    expect(await svcBin(['predict', '--model', 'm', 'hello'], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc predict: cannot reach the service at http://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}); is 'svc serve' running there? (--url or SVC_URL)\n`,
    });
    // After --, -h is a text to classify, not a request for help.
    expect((await svcBin(['predict', '--model', 'm', '--', '-h'], env)).stderr).toMatch(/^svc predict: cannot reach the service at /);
    expect(await svcBin(['predict', '--model', 'm', 'hello', '--url', 'localhost:8080'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "svc predict: cannot call 'localhost:8080/v2/predict': the service URL (--url or SVC_URL) must look like http://host:port\n" +
        "Run 'svc predict --help' for its options and examples.\n",
    });
  });
});
