// `svc pull` (a real child process) against a hostile hub that lists file names reaching outside --dir, and the
// hub's own listing, which never offers such a name.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { DirectoryHub, isModelFileName } from '../../src/model/hub.js';
import { svc } from '../_support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'svc-pull-'));
let hostile: Server;
let url: string;
let listed: string[] = [];
const served: string[] = [];

beforeAll(async () => {
  // Answers the model-info call with `listed`, and any file with a few bytes.
  hostile = createServer((request, response) => {
    if (request.url!.startsWith('/hub/api/models/')) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ id: 'acme/m', siblings: listed.map((rfilename) => ({ rfilename })) }));
      return;
    }
    served.push(request.url!);
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    response.end('owned');
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => hostile.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

it.each([
  ['../escaped.txt'],
  ['../../escaped.txt'],
  ['onnx/../../escaped.txt'],
  ['/tmp/escaped.txt'],
  ['..\\escaped.txt'],
  ['./config.json'],
  [''],
])('refuses the listed name %j and writes nothing', async (name) => {
  const work = join(root, `case-${readdirSync(root).length}`);
  const target = join(work, 'out', 'model');
  mkdirSync(target, { recursive: true });
  listed = ['config.json', name];
  served.length = 0;
  const result = await svc(['pull', 'acme/m', '--dir', target, '--url', url, '--key', 'svc_x']);
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toBe(
    `svc pull: the hub listed the file name ${JSON.stringify(name)}, which is not a plain path inside ${target}; nothing was written`,
  );
  expect(served).toEqual([]);
  expect(readdirSync(target)).toEqual([]);
  expect(existsSync(join(work, 'out', 'escaped.txt'))).toBe(false);
  expect(existsSync(join(work, 'escaped.txt'))).toBe(false);
});

it('pulls plain names, nested ones included', async () => {
  const target = join(root, 'plain');
  listed = ['config.json', 'onnx/model.onnx'];
  const result = await svc(['pull', 'acme/m', '--dir', target, '--url', url, '--key', 'svc_x']);
  expect([result.code, result.stdout.trim()]).toEqual([0, target]);
  expect(readdirSync(target).sort()).toEqual(['config.json', 'onnx']);
});

it('lists and serves only plain names from the hub', async () => {
  const hub = new DirectoryHub(join(root, 'hub'));
  await hub.publish('acme/m', async (dir) => {
    writeFileSync(join(dir, 'config.json'), '{}');
    writeFileSync(join(dir, '.env'), 'KEY=1');
    writeFileSync(join(dir, 'bad name.txt'), 'x');
  });
  expect((await hub.list('acme/m')).map((f) => f.name)).toEqual(['config.json']);
  for (const name of ['.env', '../m/config.json', 'a//b', 'a/./b', 'C:\\x', 'x\u0000y']) {
    expect(isModelFileName(name)).toBe(false);
    await expect(hub.file('acme/m', name)).rejects.toMatchObject({ code: 'not_found' });
  }
});
