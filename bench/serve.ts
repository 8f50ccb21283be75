// `npm run bench -- serve [--json] [--seconds S] [--warmup S] [--finetune]`
// /v2/predict on a running `svc serve` (its own process, the micro-batcher and the worker pool as
// shipped): first with no `--precision` (the default, `auto`, which runs the kernel its measurement
// picked on this CPU; the server's own line saying what it runs is printed), then with
// `--precision fp32`, `int8` and `bf16` (bf16 runs fp32 where the CPU has no bf16 products), against
// the server a Node user would otherwise write: Fastify plus a transformers.js text-classification
// pipeline (fp32 and q8) on the same model, exported by svc-classify. One load generator (autocannon,
// in this process) sends requests of 8 UCI sentences at concurrency 1, 8 and 64, one server at a time,
// in one run. Prints requests/s, p50 and p99 per server and the ratios of like with like (the default
// and fp32 and bf16 with transformers.js fp32, int8 with q8), how many texts the micro-batcher put in
// each engine batch (read from the server's NODE_DEBUG=svc lines), and how far the default's, int8's
// and bf16's probabilities are from fp32's on the bench's texts.
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';

import autocannon from 'autocannon';

import { uciSentences } from '../fixtures/corpora.js';
import { split } from '../fixtures/draw.js';
import { exited, kRepoRoot, kSvcArgs, serve, startNode } from '../fixtures/serve-process.js';
import { readModelDir } from '../src/model/directory.js';
import type { LogisticHead } from '../src/model/directory.js';
import { writeTransformersJsModelDir } from '../src/model/onnx/index.js';
import { cpuInfo } from '../src/native/index.js';
import { intOption } from './_common.js';

const kTextsPerRequest = 8;
const kConcurrency = [1, 8, 64] as const;
const kRequestBodies = 64;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  bodies: string[];
  /** Called before and after each measured phase: the engine batches the server sent in between. */
  batchSizes?: () => number[];
}

interface Row {
  server: string;
  concurrency: number;
  requestsPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Mean texts per engine batch (svc only). */
  meanBatch?: number;
  maxBatch?: number;
}

function svcCommand(args: string[]): string {
  const result = spawnSync(process.execPath, [...kSvcArgs, ...args], { cwd: kRepoRoot, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`svc ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout.trim();
}

async function json(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const response = await fetch(url, init);
  const body = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${JSON.stringify(body)}`);
  return body;
}

/** Each body's probabilities, one request at a time (before the load, so nothing else is batched with them). */
async function predictAll(url: string, headers: Record<string, string>, bodies: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const body of bodies) {
    const answer = await json(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    for (const p of answer.predictions as { probability: number }[]) out.push(p.probability);
  }
  return out;
}

async function load(target: Target, connections: number, seconds: number): Promise<autocannon.Result> {
  let next = 0;
  return autocannon({
    url: target.url,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...target.headers },
        // Each request carries the next of the prepared bodies, so the server sees varied texts.
        setupRequest: (request) => ({ ...request, body: target.bodies[next++ % target.bodies.length] }),
      },
    ],
  });
}

async function measure(target: Target, connections: number, seconds: number, warmup: number): Promise<Row> {
  await load(target, connections, warmup);
  target.batchSizes?.();
  const result = await load(target, connections, seconds);
  const row: Row = {
    server: target.name,
    concurrency: connections,
    // Answered requests only: an error answer is quick and must not count as throughput.
    requestsPerSec: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
  const sizes = target.batchSizes?.();
  if (sizes && sizes.length > 0) {
    row.meanBatch = sizes.reduce((a, b) => a + b, 0) / sizes.length;
    row.maxBatch = Math.max(...sizes);
  }
  return row;
}

/**
 * The server's "svc: precision auto runs ..." line: it prints it once a worker has answered, which a
 * predict has made sure of; a short wait covers the line's way through the pipe.
 */
async function precisionLine(server: { output: () => string }): Promise<string | undefined> {
  for (let waited = 0; waited < 5000; waited += 100) {
    // Up to the line's end, or to the quote closing the msg of the JSON record a piped `svc serve` writes.
    const match = /svc: (precision auto runs [^\n"]*)/.exec(server.output());
    if (match) return match[1];
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

export async function run(args: string[]): Promise<void> {
  const asJson = args.includes('--json');
  const seconds = intOption(args, 'seconds', 10);
  const warmup = intOption(args, 'warmup', 3);
  const finetune = args.includes('--finetune');
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-serve-'));
  const data = join(root, 'data');
  const children: ChildProcess[] = [];
  try {
    svcCommand(['orgs', 'create', 'bench', '--data', data]);
    // The load generator is one key far above the default 600 requests per minute: lift its limit.
    svcCommand(['orgs', 'limits', 'bench', '--rpm', '100000000', '--data', data]);
    const key = svcCommand(['keys', 'create', '--org', 'bench', '--data', data]);
    let server = await serve(['--data', data], { NODE_DEBUG: 'svc' });
    children.push(server.child);
    const auth = { authorization: `Bearer ${key}` };

    const { trainSet } = split(uciSentences('imdb'), 1);
    const examples = trainSet.map((row) => ({ text: row.text, label: row.label, label_text: 'positive review' }));
    const started = await json(`${server.url}/v2/train`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ model: 'svc-small', task_type: 'binary-classification', examples, finetune }),
    });
    const modelId = started.id as string;
    for (;;) {
      const model = await json(`${server.url}/v2/models/${modelId}`, { headers: auth });
      if (model.status === 'trained') break;
      if (model.status === 'failed') throw new Error(`training failed: ${String(model.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    // The same model for the peer: the trained head on the base encoder (or the fine-tuned one's
    // own ONNX export, which the hub already holds), in fp32 and q8.
    const hubDir = join(data, 'hub', 'bench', modelId);
    const { head } = await readModelDir(hubDir);
    const peerDir = join(root, 'peer', modelId);
    if (!finetune) {
      await writeTransformersJsModelDir(peerDir, {
        baseModel: 'svc-small',
        task: 'text-classification',
        labelText: 'positive review',
        head: { weights: Float32Array.from(head.weights), bias: (head as LogisticHead).bias },
        precision: 'int8',
      });
    }

    const texts = uciSentences('yelp').map((row) => row.text);
    const inputs = Array.from({ length: kRequestBodies }, (_, i) =>
      Array.from({ length: kTextsPerRequest }, (_, j) => texts[(i * kTextsPerRequest + j) % texts.length]),
    );
    const svcBodies = inputs.map((batch) => JSON.stringify({ model: modelId, inputs: batch }));
    const peerBodies = inputs.map((batch) => JSON.stringify({ inputs: batch }));

    const rows: Row[] = [];
    const probabilities: Record<string, number[]> = {};
    // One server at a time, so each has the machine's cores to itself while it is measured. The data
    // directory takes one server at a time: the next one starts when the previous one has stopped.
    // The first server (which trained the model) runs the default precision; its line says what
    // `auto` picked on this CPU, so the rows' names can say it too.
    let autoRuns: string | undefined;
    for (const precision of ['auto', 'fp32', 'int8', 'bf16'] as const) {
      if (precision !== 'auto') {
        server.child.kill('SIGTERM');
        await exited(server.child);
        server = await serve(['--data', data, '--precision', precision], { NODE_DEBUG: 'svc' });
        children.push(server.child);
      }
      const current = server;
      probabilities[precision] = await predictAll(`${current.url}/v2/predict`, auth, svcBodies);
      if (precision === 'auto') autoRuns = await precisionLine(current);
      let seen = current.output().length;
      const target: Target = {
        name: `svc-classify ${precision}`,
        url: `${current.url}/v2/predict`,
        headers: auth,
        bodies: svcBodies,
        batchSizes: () => {
          const lines = current.output().slice(seen);
          seen += lines.length;
          return Array.from(lines.matchAll(/predict batch: \d+ part\(s\), (\d+) text\(s\)/g), (m) => Number(m[1]));
        },
      };
      for (const connections of kConcurrency) rows.push(await measure(target, connections, seconds, warmup));
    }
    const costOf = (other: number[]) => {
      const differences = probabilities.fp32.map((p, i) => Math.abs(p - other[i]));
      return {
        texts: differences.length,
        meanDifference: differences.reduce((a, b) => a + b, 0) / differences.length,
        maxDifference: Math.max(...differences),
        labelsChanged: probabilities.fp32.filter((p, i) => p >= 0.5 !== other[i] >= 0.5).length,
      };
    };
    const precisionCost = {
      auto: costOf(probabilities.auto),
      int8: costOf(probabilities.int8),
      bf16: costOf(probabilities.bf16),
    };
    if (!finetune) {
      for (const dtype of ['fp32', 'q8'] as const) {
        const peer = await startNode(['--import', 'tsx', 'bench/_serve-peer.ts', peerDir, dtype], /peer listening on (http:\/\/\S+)/);
        children.push(peer.child);
        const target: Target = { name: `transformers.js ${dtype}`, url: `${peer.url}/predict`, headers: {}, bodies: peerBodies };
        for (const connections of kConcurrency) rows.push(await measure(target, connections, seconds, warmup));
        peer.child.kill('SIGTERM');
        await exited(peer.child);
      }
    }

    if (asJson) {
      console.log(JSON.stringify({ level: cpuInfo().level, cores: cpus().length, seconds, autoRuns, rows, precisionCost }));
      return;
    }
    console.log(
      `serve: ${kTextsPerRequest} texts a request, ${seconds} s a phase after ${warmup} s warm-up, ` +
        `${cpus().length} cores, kernel level ${cpuInfo().level}, ${finetune ? 'fine-tuned' : 'frozen'} model`,
    );
    console.log(`svc-classify auto (the default): ${autoRuns ?? 'the server did not say what it runs'}`);
    console.log('server                concurrency   req/s     p50 ms   p99 ms   errors  texts/batch (mean, max)');
    for (const r of rows) {
      const batch = r.meanBatch === undefined ? '' : `${r.meanBatch.toFixed(1)}, ${r.maxBatch}`;
      console.log(
        `${r.server.padEnd(22)}${String(r.concurrency).padStart(11)}${r.requestsPerSec.toFixed(1).padStart(8)}` +
          `${r.p50.toFixed(1).padStart(11)}${r.p99.toFixed(1).padStart(9)}${String(r.non2xx).padStart(9)}  ${batch}`,
      );
    }
    const pairs = [
      ['svc-classify auto', 'transformers.js fp32'],
      ['svc-classify fp32', 'transformers.js fp32'],
      ['svc-classify int8', 'transformers.js q8'],
      ['svc-classify bf16', 'transformers.js fp32'],
    ] as const;
    for (const connections of kConcurrency) {
      for (const [oursName, peerName] of pairs) {
        const ours = rows.find((r) => r.server === oursName && r.concurrency === connections);
        const peer = rows.find((r) => r.server === peerName && r.concurrency === connections);
        if (!ours || !peer) continue;
        if (peer.requestsPerSec === 0 || ours.requestsPerSec === 0) {
          console.log(`c=${connections}: no request finished within a phase; run longer phases (--seconds)`);
          continue;
        }
        console.log(
          `c=${connections}: ${oursName} / ${peerName}: ${(ours.requestsPerSec / peer.requestsPerSec).toFixed(2)}x req/s, ` +
            `p99 ${ours.p99.toFixed(1)} vs ${peer.p99.toFixed(1)} ms`,
        );
      }
    }
    for (const [name, cost] of Object.entries(precisionCost)) {
      console.log(
        `${name} vs fp32 on the bench's ${cost.texts} texts: |probability difference| mean ${cost.meanDifference.toFixed(5)}, ` +
          `max ${cost.maxDifference.toFixed(5)}; ${cost.labelsChanged} label(s) changed`,
      );
    }
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.all(children.map((child) => exited(child)));
    await rm(root, { recursive: true, force: true });
  }
}
