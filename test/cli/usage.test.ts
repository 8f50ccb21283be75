// Wrong command lines exit 2 and say why; failed operations exit 1 and say what to do. Real `svc` processes.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { svc } from '../_support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-usage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pointer = (command: string) => `Run 'svc ${command} --help' for its options and examples.\n`;
const client = { SVC_KEY: 'svc_x', SVC_URL: 'http://127.0.0.1:9' };

describe('svc usage errors say why', () => {
  it.each([
    [['serve', '--port', '99999'], 'serve', "--port must be an integer from 0 to 65535, got '99999'"],
    [['serve', '--port=-1'], 'serve', "--port must be an integer from 0 to 65535, got '-1'"],
    [['serve', '--precision', 'fp16'], 'serve', "--precision must be 'fp32', 'int8', 'bf16' or 'auto'"],
    [
      ['predict', 'some text'],
      'predict',
      '--model <id> is required (the id svc train printed)\nusage: svc predict --model <id> [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...',
    ],
    [
      ['predict', '--model', 'svc-small-0123456789ab'],
      'predict',
      'no texts to classify: give them after the flags\nusage: svc predict --model <id> [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...',
    ],
    [
      ['pull', 'nope'],
      'pull',
      "'nope' is not <org>/<model_id> (the hub id, e.g. acme/svc-small-5b8257b3efa7)\nusage: svc pull <org>/<model_id> [--dir <dir>]",
    ],
    [['pull'], 'pull', 'which model? name it as <org>/<model_id>\nusage: svc pull <org>/<model_id> [--dir <dir>]'],
  ])('svc %j', async (args, command, reason) => {
    expect(await svc(args, client)).toEqual({ code: 2, stdout: '', stderr: `svc ${command}: ${reason}\n${pointer(command)}` });
  });

  it.each([
    [['train', '--exmaples', 'x.jsonl'], 'train', '--exmaples', '--examples'],
    [['train', '--label-txt=spam'], 'train', '--label-txt', '--label-text'],
    [['train', '--label-flag', 'i'], 'train', '--label-flag', '--label-flags'],
    [['serve', '--prot', '8080'], 'serve', '--prot', '--port'],
    [['predict', '--modle', 'm', 'hi'], 'predict', '--modle', '--model'],
    [['keys', 'list', '--orgs', 'acme'], 'keys', '--orgs', '--org'],
  ])('svc %j suggests the closest option', async (args, command, typed, suggestion) => {
    expect(await svc(args, client)).toEqual({
      code: 2,
      stdout: '',
      stderr: `svc ${command}: unknown option '${typed}' (did you mean '${suggestion}'?)\n${pointer(command)}`,
    });
  });

  it('names an unknown option without a guess when none is close, and suggests the global ones', async () => {
    expect(await svc(['train', '--frobnicate'], client)).toEqual({
      code: 2,
      stdout: '',
      stderr: `svc train: unknown option '--frobnicate'\n${pointer('train')}`,
    });
    expect(await svc(['--verison'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: unknown option '--verison' (did you mean '--version'?)\nRun 'svc --help' for the commands and options.\n",
    });
  });

  it('refuses an SVC_ISA the engine would ignore', async () => {
    expect(await svc(['info'], { SVC_ISA: 'bogus' })).toEqual({
      code: 2,
      stdout: '',
      stderr: "svc: SVC_ISA must be one of scalar, avx2, avx2-vnni, avx512, avx512-vnni, neon (or unset); got 'bogus'\n",
    });
    const capped = await svc(['info', '--json'], { SVC_ISA: 'scalar' });
    expect([capped.code, (JSON.parse(capped.stdout) as { cpu: { level: string } }).cpu.level]).toEqual([0, 'scalar']);
  });
});

describe('operator commands and the data directory', () => {
  it('refuse a data directory that does not exist instead of creating an empty one', async () => {
    const typo = join(dir, 'svc-dta');
    expect(await svc(['keys', 'list', '--org', 'acme', '--data', typo])).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc keys: no data directory at ${typo}: check --data (svc orgs create <name> or svc serve makes a new one)\n`,
    });
    expect(existsSync(typo)).toBe(false);
  });

  it('orgs create makes a new one and says so', async () => {
    const fresh = join(dir, 'fresh');
    expect(await svc(['orgs', 'create', 'acme', '--data', fresh])).toEqual({
      code: 0,
      stdout: 'acme\n',
      stderr: `svc: created the data directory ${fresh}\n`,
    });
    expect(await svc(['orgs', 'list', '--data', fresh])).toMatchObject({ code: 0, stdout: 'acme\tproxy=no\n', stderr: '' });
  });
});
