// HTTP fuzz: 5,000+ seeded hostile requests over every route of a real `svc serve` (its own process) with eight
// connections at a time. No answer may be a 5xx, the server must not crash, every answer carries nosniff, and the
// server's memory after a full GC must be back within 10% of where it was after a warm-up round. The warm-up sends
// the very same requests (same seed), so every buffer that grows to its high-water mark (the pool workers' encoder
// arenas for the longest texts, the allocator's arenas) has grown before the first reading: what grows after it leaks.
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { kRepoRoot } from '../_support/cli.js';
import { type FuzzContext, type HostileRequest, HostileRequests } from '../_support/hostile-requests.js';

const kSeed = 20261123;
const kRequests = 5_000;
const kConcurrency = 8;

const dir = mkdtempSync(join(tmpdir(), 'svc-fuzz-'));
let server: ChildProcess;
let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let base: URL;
let context: FuzzContext;
const agent = new http.Agent({ keepAlive: true, maxSockets: kConcurrency });

interface Answer {
  status: number;
  nosniff: boolean;
}

/** Sends one request; resolves to its answer, or null when the request was cut on purpose or the socket dropped. */
function send(request: HostileRequest): Promise<Answer | null> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = request.body.length + (request.truncate ? 100 : 0);
    const req = http.request(
      { host: base.hostname, port: base.port, method: request.method, path: request.path, headers, agent },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, nosniff: res.headers['x-content-type-options'] === 'nosniff' }));
        res.on('error', () => resolve(null));
      },
    );
    req.on('error', () => resolve(null));
    if (request.truncate) {
      req.write(request.body!);
      setTimeout(() => req.destroy(), 20);
    } else {
      req.end(request.body);
    }
  });
}

async function json(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(new URL(path, base), {
    method,
    headers: { authorization: `Bearer ${context.key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}

function memory(): Promise<NodeJS.MemoryUsage> {
  const answer = new Promise<NodeJS.MemoryUsage>((resolve) => {
    server.once('message', (message) => resolve(message as NodeJS.MemoryUsage));
    server.send('memory');
  });
  // A crashed server answers nothing: fail with how it ended instead of waiting out the test's time limit.
  return Promise.race([answer, exit.then((how) => Promise.reject(new Error(`the server ended: ${JSON.stringify(how)}`)))]);
}

/** Runs `count` requests from the generator, `kConcurrency` at a time; tallies the answers. */
async function run(generator: HostileRequests, count: number) {
  const tally = {
    sent: 0,
    answered: 0,
    cut: 0,
    serverErrors: [] as string[],
    withoutNosniff: [] as string[],
    statuses: new Map<number, number>(),
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: kConcurrency }, async () => {
      while (next < count) {
        next++;
        const request = generator.next();
        const answer = await send(request);
        tally.sent++;
        if (answer === null) {
          tally.cut++;
          continue;
        }
        tally.answered++;
        tally.statuses.set(answer.status, (tally.statuses.get(answer.status) ?? 0) + 1);
        const line = `${answer.status} ${request.method} ${request.path.slice(0, 120)} ${request.body?.subarray(0, 120).toString('latin1') ?? ''}`;
        if (answer.status >= 500) tally.serverErrors.push(line);
        if (!answer.nosniff) tally.withoutNosniff.push(line);
      }
    }),
  );
  return tally;
}

beforeAll(async () => {
  server = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'test/_support/fuzz-server.ts', dir], {
    cwd: kRepoRoot,
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  exit = new Promise((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    server.once('exit', (code) => reject(new Error(`the fuzz server exited with ${code}`)));
  });
  const started = JSON.parse(line) as Omit<FuzzContext, 'modelId'> & { url: string };
  base = new URL(started.url);
  context = { ...started, modelId: '' };
  // One trained model (frozen encoder: quick), so that predict and the hub get past "not found".
  const examples = Array.from({ length: 20 }, (_, i) => ({
    text: `a ${i % 2 ? 'wonderful' : 'dreadful'} film, number ${i}`,
    label: i % 2 === 1,
    label_text: 'positive',
  }));
  const model = await json('POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false });
  for (let status = model.status; status === 'training'; await new Promise((resolve) => setTimeout(resolve, 200))) {
    status = (await json('GET', `/v2/models/${model.id}`)).status;
    if (status !== 'training') expect(status).toBe('trained');
  }
  context.modelId = model.id;
}, 180_000);

afterAll(async () => {
  agent.destroy();
  if (server?.connected) server.send('close');
  await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

it(`answers ${kRequests} hostile requests over every route without a 5xx, a crash or a leak`, async () => {
  const warm = await run(new HostileRequests(kSeed, context), kRequests);
  expect(warm.serverErrors).toEqual([]);
  const before = await memory();

  const t0 = performance.now();
  const tally = await run(new HostileRequests(kSeed, context), kRequests);
  const seconds = (performance.now() - t0) / 1000;
  const after = await memory();
  console.log(
    `http fuzz: ${tally.sent} requests in ${seconds.toFixed(1)} s (${tally.cut} cut), statuses ${JSON.stringify(Object.fromEntries([...tally.statuses].sort((a, b) => a[0] - b[0])))}; ` +
      `rss ${(before.rss / 2 ** 20).toFixed(1)} -> ${(after.rss / 2 ** 20).toFixed(1)} MiB, heap ${(before.heapUsed / 2 ** 20).toFixed(1)} -> ${(after.heapUsed / 2 ** 20).toFixed(1)} MiB, external ${(before.external / 2 ** 20).toFixed(1)} -> ${(after.external / 2 ** 20).toFixed(1)} MiB`,
  );

  expect(tally.serverErrors).toEqual([]);
  expect(tally.withoutNosniff).toEqual([]);
  expect(tally.sent).toBe(kRequests);
  expect(tally.answered).toBeGreaterThan(kRequests * 0.9);
  expect(server.exitCode).toBeNull();
  expect(server.signalCode).toBeNull();
  // Every route family was hit with answers other than 401 (the generator is not just knocking on the door).
  expect([...tally.statuses.keys()].sort()).toEqual(expect.arrayContaining([200, 400, 401, 404]));
  expect(after.rss).toBeLessThan(before.rss * 1.1);
  expect(after.heapUsed).toBeLessThan(before.heapUsed * 1.1);
}, 300_000);
