// `npm run bench -- proxy [--json] [--requests N] [--rate R] [--concurrency C] [--rounds K] [--no-shadow]`
// Requests through the proxy (a real Fastify server, the real SQLite request log) against the same fake upstream
// called directly, side by side in one process. Latency phase: direct and proxied requests interleaved at a fixed
// rate each (default 200/s) with at most C in flight per side; added latency = proxied percentile - direct
// percentile. Throughput phase: C concurrent clients as fast as they go, proxied vs direct, as a ratio.
// Client, proxy and fake upstream run in three threads of this process (bench/_proxy-threads.ts).
// Shadow scenario (issue #42): one `svc serve` server with two projects, one of them with a shadow classifier for
// the proxied model (bench/_proxy-shadow-thread.ts); direct calls interleaved with the plain project's, then with the
// shadowed project's: what the shadow work (the classifier run after each response, and its load) adds is the
// second added latency minus the first.
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { type FakeProvider, kFakeKeys } from '../fixtures/fake-provider.js';
import { intOption } from './_common.js';
import type { ShadowThreadDone, ShadowThreadReady } from './_proxy-shadow-thread.js';
import type { ProxyThreadReady } from './_proxy-threads.js';

interface Target {
  url: URL;
  headers: http.OutgoingHttpHeaders;
  body: Buffer;
}

interface Row {
  mode: 'non-stream' | 'stream';
  directP50: number;
  directP99: number;
  proxyP50: number;
  proxyP99: number;
  addedP50: number;
  addedP99: number;
  directRps: number;
  proxyRps: number;
  throughputRatio: number;
}

interface ShadowRow {
  mode: 'non-stream' | 'stream';
  /** Proxied minus direct, for the project without a shadow and then for the one with. */
  plainAddedP50: number;
  plainAddedP99: number;
  shadowAddedP50: number;
  shadowAddedP99: number;
  /** What the shadow work adds: the second minus the first. */
  addedP50: number;
  addedP99: number;
}

const kWarmup = 600;

/** A request body of the bench's one prompt, streaming or not. */
function payload(model: string, mode: 'non-stream' | 'stream'): Buffer {
  return Buffer.from(
    JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'how much latency does the proxy add to this request' }],
      ...(mode === 'stream' ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  );
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round3 = (ms: number) => Math.round(ms * 1000) / 1000;

/** One POST, resolved with its latency in ms once the whole response (or stream) has arrived. */
function send(agent: http.Agent, target: Target): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(target.url, { method: 'POST', agent, headers: target.headers }, (response) => {
      response.on('data', () => {});
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`${target.url.pathname} answered ${response.statusCode}`));
        else resolve(performance.now() - t0);
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(target.body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Direct and proxied requests alternate on one clock, each side at `rate` per second, at most `limit` in flight each. */
async function latencyPhase(agents: [http.Agent, http.Agent], targets: [Target, Target], count: number, rate: number, limit: number) {
  const latencies: [number[], number[]] = [[], []];
  const inFlight = [0, 0];
  const pending: Promise<void>[] = [];
  const interval = 1000 / rate / 2;
  const start = performance.now();
  for (let i = 0; i < count * 2; i++) {
    const side = i % 2;
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight[side] >= limit) await new Promise((resolve) => setImmediate(resolve));
    inFlight[side]++;
    pending.push(
      send(agents[side], targets[side]).then((ms) => {
        inFlight[side]--;
        latencies[side].push(ms);
      }),
    );
  }
  await Promise.all(pending);
  return latencies.map((l) => l.sort((a, b) => a - b)) as [number[], number[]];
}

/** `concurrency` clients back to back until `count` requests are done; requests per second. */
async function throughputPhase(agent: http.Agent, target: Target, count: number, concurrency: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await send(agent, target);
    }),
  );
  return count / ((performance.now() - start) / 1000);
}

/**
 * The shadow scenario, per round: direct calls interleaved with a plain project's calls, then with a shadowed
 * project's (all on one server, the shadow queue drained between phases, so each phase carries its own background
 * work); what the shadow adds is the second phase's added latency minus the first's. Each figure is the median over
 * rounds. Resolves with the rows and how many shadow results were recorded.
 */
async function shadowScenario(
  boot: (file: URL, data: unknown) => Worker,
  fakeUrls: FakeProvider['urls'],
  count: number,
  rate: number,
  concurrency: number,
  rounds: number,
) {
  const thread = boot(new URL('./_proxy-shadow-thread.ts', import.meta.url), { fakeUrls, model: 'provider-a:bench' });
  const [ready] = (await once(thread, 'message')) as [ShadowThreadReady];
  const drained = async () => {
    thread.postMessage('drain');
    await once(thread, 'message');
  };
  const agents: [http.Agent, http.Agent] = [
    new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 }),
    new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 }),
  ];
  const rows: ShadowRow[] = [];
  let done: ShadowThreadDone;
  try {
    for (const mode of ['non-stream', 'stream'] as const) {
      const direct: Target = {
        url: new URL(`${fakeUrls.a}/chat/completions`),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${kFakeKeys.a}` },
        body: payload('bench', mode),
      };
      const proxied = (base: string): Target => ({
        url: new URL(`${base}chat/completions`),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ready.key}` },
        body: payload('provider-a:bench', mode),
      });
      const plain = proxied(ready.plainBase);
      const shadowed = proxied(ready.shadowBase);
      await latencyPhase(agents, [direct, plain], kWarmup, rate * 2, concurrency);
      await latencyPhase(agents, [direct, shadowed], kWarmup, rate * 2, concurrency);
      await drained();
      const samples: ShadowRow[] = [];
      for (let r = 0; r < rounds; r++) {
        const [d1, p] = await latencyPhase(agents, [direct, plain], count, rate, concurrency);
        await drained();
        const [d2, s] = await latencyPhase(agents, [direct, shadowed], count, rate, concurrency);
        await drained();
        const added = (side: number[], base: number[], at: number) => percentile(side, at) - percentile(base, at);
        samples.push({
          mode,
          plainAddedP50: added(p, d1, 50),
          plainAddedP99: added(p, d1, 99),
          shadowAddedP50: added(s, d2, 50),
          shadowAddedP99: added(s, d2, 99),
          addedP50: added(s, d2, 50) - added(p, d1, 50),
          addedP99: added(s, d2, 99) - added(p, d1, 99),
        });
      }
      const pick = (key: Exclude<keyof ShadowRow, 'mode'>) => round3(median(samples.map((sample) => sample[key])));
      rows.push({
        mode,
        plainAddedP50: pick('plainAddedP50'),
        plainAddedP99: pick('plainAddedP99'),
        shadowAddedP50: pick('shadowAddedP50'),
        shadowAddedP99: pick('shadowAddedP99'),
        addedP50: pick('addedP50'),
        addedP99: pick('addedP99'),
      });
    }
  } finally {
    for (const agent of agents) agent.destroy();
    thread.postMessage('done');
    [done] = (await once(thread, 'message')) as [ShadowThreadDone];
    await thread.terminate();
  }
  // Shadowed calls: both warm-ups' second half and every round's second phase, both modes.
  return { rows, shadowed: rows.length * (kWarmup + rounds * count), ...done };
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  const count = intOption(args, 'requests', 1000);
  const rate = intOption(args, 'rate', 200);
  const concurrency = intOption(args, 'concurrency', 8);
  const rounds = intOption(args, 'rounds', 3);
  const threadFile = new URL('./_proxy-threads.ts', import.meta.url);
  // Workers do not inherit tsx's loader from `npm run bench`: each registers it before loading the thread file.
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(threadFile.href)}); })`;
  const fakeThread = new Worker(boot, { eval: true, workerData: { role: 'fake' } });
  const bootFile = (file: URL, data: unknown) =>
    new Worker(`import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`, {
      eval: true,
      workerData: data,
    });
  const [fakeUrls] = (await once(fakeThread, 'message')) as [FakeProvider['urls']];
  const proxyThread = new Worker(boot, { eval: true, workerData: { role: 'proxy', fakeUrls } });
  const [h] = (await once(proxyThread, 'message')) as [ProxyThreadReady];
  let logged: number;
  const agents: [http.Agent, http.Agent] = [
    new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 }),
    new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 }),
  ];
  const rows: Row[] = [];
  try {
    for (const mode of ['non-stream', 'stream'] as const) {
      const direct: Target = {
        url: new URL(`${fakeUrls.a}/chat/completions`),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${kFakeKeys.a}` },
        body: payload('bench', mode),
      };
      const proxied: Target = {
        url: new URL(`${h.sdkBase}chat/completions`),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${h.acmeKey}` },
        body: payload('provider-a:bench', mode),
      };
      // Warm up connections, JIT and SQLite pages on both paths (the threads have only just compiled their code).
      await latencyPhase(agents, [direct, proxied], kWarmup, rate * 2, concurrency);
      // Several rounds, each statistic the median over rounds: one burst of load from elsewhere on the machine
      // then moves one round, not the figure.
      const samples: Row[] = [];
      for (let r = 0; r < rounds; r++) {
        const [d, p] = await latencyPhase(agents, [direct, proxied], count, rate, concurrency);
        const directRps = await throughputPhase(agents[0], direct, count, concurrency);
        const proxyRps = await throughputPhase(agents[1], proxied, count, concurrency);
        samples.push({
          mode,
          directP50: percentile(d, 50),
          directP99: percentile(d, 99),
          proxyP50: percentile(p, 50),
          proxyP99: percentile(p, 99),
          addedP50: percentile(p, 50) - percentile(d, 50),
          addedP99: percentile(p, 99) - percentile(d, 99),
          directRps,
          proxyRps,
          throughputRatio: proxyRps / directRps,
        });
      }
      const median = (key: Exclude<keyof Row, 'mode'>) => samples.map((s) => s[key]).sort((a, b) => a - b)[Math.floor(rounds / 2)];
      const ms = (key: Exclude<keyof Row, 'mode'>) => Math.round(median(key) * 1000) / 1000;
      rows.push({
        mode,
        directP50: ms('directP50'),
        directP99: ms('directP99'),
        proxyP50: ms('proxyP50'),
        proxyP99: ms('proxyP99'),
        addedP50: ms('addedP50'),
        addedP99: ms('addedP99'),
        directRps: Math.round(median('directRps')),
        proxyRps: Math.round(median('proxyRps')),
        throughputRatio: Math.round(median('throughputRatio') * 100) / 100,
      });
    }
  } finally {
    for (const agent of agents) agent.destroy();
    // Every proxied request left its log row: warm-up, latency and throughput phases, both modes.
    proxyThread.postMessage(rows.length * (kWarmup + rounds * count * 2));
    [logged] = (await once(proxyThread, 'message')) as [number];
    await proxyThread.terminate();
  }
  let shadow: Awaited<ReturnType<typeof shadowScenario>> | null = null;
  try {
    if (!args.includes('--no-shadow')) shadow = await shadowScenario(bootFile, fakeUrls, count, rate, concurrency, rounds);
  } finally {
    fakeThread.postMessage('close');
    await once(fakeThread, 'message');
    await fakeThread.terminate();
  }

  if (json) {
    console.log(JSON.stringify({ requests: count, rate, concurrency, rounds, logged, rows, shadow }, null, 2));
    return;
  }
  console.log(
    `proxy vs direct: ${count} requests per side at ${rate}/s each, at most ${concurrency} in flight; ` +
      `throughput with ${concurrency} clients; median of ${rounds} rounds; ${logged} request-log rows written`,
  );
  console.log(
    '| mode | direct p50 / p99 ms | proxied p50 / p99 ms | added p50 / p99 ms | direct req/s | proxied req/s | throughput ratio |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.mode} | ${r.directP50.toFixed(2)} / ${r.directP99.toFixed(2)} | ${r.proxyP50.toFixed(2)} / ${r.proxyP99.toFixed(2)} | ` +
        `${r.addedP50.toFixed(2)} / ${r.addedP99.toFixed(2)} | ${r.directRps} | ${r.proxyRps} | ${r.throughputRatio.toFixed(2)} |`,
    );
  }
  if (shadow === null) return;
  console.log(
    `\nshadow classifier: direct vs a project without a shadow, then vs one with (one server), ${count} requests per side at ${rate}/s each; ` +
      `median of ${rounds} rounds; ${shadow.results} of ${shadow.shadowed} shadowed calls recorded, classifier p50 ${shadow.classifierP50Ms?.toFixed(2) ?? '-'} ms`,
  );
  console.log('| mode | proxy adds, no shadow: p50 / p99 ms | proxy adds, shadowed: p50 / p99 ms | shadow adds p50 / p99 ms |');
  console.log('|---|---|---|---|');
  for (const r of shadow.rows) {
    console.log(
      `| ${r.mode} | ${r.plainAddedP50.toFixed(2)} / ${r.plainAddedP99.toFixed(2)} | ${r.shadowAddedP50.toFixed(2)} / ${r.shadowAddedP99.toFixed(2)} | ` +
        `**${r.addedP50.toFixed(2)} / ${r.addedP99.toFixed(2)}** |`,
    );
  }
}
