// `npm run bench -- fairness [--scenario training|big-call|explain|explain-size|classify-fit|all] [--seconds 20] [--rate 20]
//   [--iterations 20] [--json]`
// Predictions of one organization while another loads the service, end to end: a real `svc serve`
// (its own process, default pool) on 127.0.0.1. Org A sends `/v2/predict` calls of 8 texts at a
// fixed rate (open loop: a call leaves on schedule whether or not the previous one came back) to a
// trained model, first with nothing else running (idle), then in each scenario:
// - training: org B keeps 2 fine-tuning jobs in training (a finished one is replaced at once); prints
//   how far B's training got too, so that the share training kept is visible;
// - big-call: org B floods `/v2/predict` with calls of 2,048 texts from two clients, each sending one
//   every 2 s and giving up on it after 2 s, as the client in the review that found the hole did: one
//   sends texts of about 1 kB (2.4 MB a call), the other 2,048 sentences (~160 kB), which the measured
//   speed may let in. Prints what became of B's calls.
// - explain, explain-size, classify-fit: B's cheap requests that were costly to answer (_fairness-attacks.ts).
// Prints p50/p99 of A's calls in each phase and their ratio to idle.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { openService } from '../src/service/open.js';
import { exited, serve } from '../test/_support/cli.js';
import { uciSentences } from '../fixtures/corpora.js';
import { intOption } from './_common.js';
import { type AttackRig, kAttackScenarios, runAttack, type AttackScenario } from './_fairness-attacks.js';

interface Phase {
  phase: string;
  calls: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const imdb = uciSentences('imdb');
const examples = [...imdb.filter((r) => r.label).slice(0, 10), ...imdb.filter((r) => !r.label).slice(0, 10)].map((r) => ({
  text: r.text,
  label: r.label,
  label_text: 'positive review',
}));
const kTextsPerCall = 8;
const kScenarios = ['training', 'big-call', ...kAttackScenarios] as const;
type Scenario = (typeof kScenarios)[number];
/** B's flooding calls: as many texts as the review's, each client giving up after as long as its did. */
const kBigCallTexts = 2048;
const kBigCallGiveUpMs = 2000;
/** About a kilobyte a text: the sentences one after the other. */
const kLongTexts = Array.from({ length: kBigCallTexts }, (_, i) =>
  Array.from({ length: 14 }, (_, k) => imdb[(i * 14 + k) % imdb.length].text).join(' '),
);
const kShortTexts = Array.from({ length: kBigCallTexts }, (_, i) => imdb[i % imdb.length].text);

function row(p: Phase): string {
  return `${p.phase.padEnd(9)} ${String(p.calls).padStart(4)} calls ${String(p.failed).padStart(3)} failed  p50 ${p.p50Ms.toFixed(1).padStart(7)} ms  p99 ${p.p99Ms.toFixed(1).padStart(7)} ms  max ${p.maxMs.toFixed(1).padStart(7)} ms`;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

export async function run(args: string[]): Promise<void> {
  const seconds = intOption(args, 'seconds', 20);
  const rate = intOption(args, 'rate', 20);
  const iterations = intOption(args, 'iterations', 20);
  const json = args.includes('--json');
  const at = args.indexOf('--scenario');
  const chosen = at < 0 ? 'all' : args[at + 1];
  if (chosen !== 'all' && !kScenarios.includes(chosen as Scenario))
    throw new RangeError(`--scenario must be one of ${kScenarios.join(', ')}, all`);
  const scenarios: readonly Scenario[] = chosen === 'all' ? kScenarios : [chosen as Scenario];
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-fairness-'));
  const keys: Record<string, string> = {};
  const setup = openService(dir);
  for (const org of ['a', 'b']) {
    await setup.createOrganization(org);
    keys[org] = (await setup.createApiKey(org)).key;
  }
  // B may run both its jobs at once: how many actually train together is the pool's rule; and its flood
  // meets the predict queue's bounds, not the requests per minute.
  await setup.setOrgLimits('b', { maxRunningJobs: 2, requestsPerMinute: 1_000_000 });
  // A sends 20 calls a second, twice the default requests per minute: this bench measures the pool, not that limit.
  await setup.setOrgLimits('a', { requestsPerMinute: 1_000_000 });
  await setup.close();

  const { child, url } = await serve(['--data', dir]);
  const call = async (org: string, method: string, path: string, body?: unknown, timeoutMs = 60_000) => {
    const response = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${keys[org]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Record<string, unknown> };
  };
  const status = async (org: string, id: string) => (await call(org, 'GET', `/v2/models/${id}`)).body.status as string;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    const model = (
      await call('a', 'POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false })
    ).body.id as string;
    while ((await status('a', model)) === 'training') await sleep(100);
    // Warm-up: the model's head and encoder are loaded in every worker before anything is timed.
    // Calls sent one at a time would all go to the first free worker, and the other worker would
    // load the model (about a second) inside the timed phase: bursts of concurrent calls reach both.
    const warm = { model, inputs: imdb.slice(0, kTextsPerCall).map((r) => r.text) };
    for (let i = 0; i < rate; i += 1) await Promise.all(Array.from({ length: 4 }, () => call('a', 'POST', '/v2/predict', warm)));

    const measure = async (phase: string): Promise<Phase> => {
      const latencies: number[] = [];
      let failed = 0;
      const calls: Promise<void>[] = [];
      const start = performance.now();
      for (let i = 0; i < seconds * rate; i += 1) {
        const due = start + (i * 1000) / rate;
        await sleep(Math.max(0, due - performance.now()));
        const offset = (i * kTextsPerCall) % (imdb.length - kTextsPerCall);
        const inputs = imdb.slice(offset, offset + kTextsPerCall).map((r) => r.text);
        const sent = performance.now();
        calls.push(
          call('a', 'POST', '/v2/predict', { model, inputs }).then(
            (reply) => (reply.status === 200 ? void latencies.push(performance.now() - sent) : void (failed += 1)),
            () => void (failed += 1),
          ),
        );
      }
      await Promise.all(calls);
      latencies.sort((x, y) => x - y);
      return {
        phase,
        calls: calls.length,
        failed,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        maxMs: latencies.at(-1) ?? Number.NaN,
      };
    };

    const underTraining = async () => {
      // B keeps two fine-tuning jobs in training for the whole phase.
      const train = async () =>
        (
          await call('b', 'POST', '/v2/train', {
            model: 'svc-small',
            task_type: 'binary-classification',
            examples,
            num_iterations: iterations,
          })
        ).body.id as string;
      const jobs = [await train(), await train()];
      let stop = false;
      let finished = 0;
      // A job that fails would be replaced at once, over and over: stop the run and say why instead.
      let failure: string | null = null;
      const keeper = (async () => {
        while (!stop && failure === null) {
          for (let i = 0; i < jobs.length; i += 1) {
            const model = (await call('b', 'GET', `/v2/models/${jobs[i]}`)).body;
            if (model.status === 'failed') failure = `org B's fine-tuning job failed: ${String(model.error)}`;
            if (model.status !== 'trained') continue;
            finished += 1;
            jobs[i] = await train();
          }
          await sleep(200);
        }
      })();
      const stepsDone = async () => {
        let done = 0;
        for (const id of jobs) done += ((await call('b', 'GET', `/v2/models/${id}/progress`)).body.done as number) ?? 0;
        return done;
      };
      while (failure === null && (await stepsDone()) === 0) await sleep(100);
      if (failure !== null) throw new Error(failure);
      const loaded = await measure('training');
      const stepsAtEnd = await stepsDone();
      stop = true;
      await keeper;
      if (failure !== null) throw new Error(failure);
      // The next scenario runs without B's training.
      for (const id of jobs) await call('b', 'DELETE', `/v2/models/${id}`);
      return { loaded, finished, stepsAtEnd };
    };

    const underBigCalls = async () => {
      const bModel = (
        await call('b', 'POST', '/v2/train', { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false })
      ).body.id as string;
      while ((await status('b', bModel)) === 'training') await sleep(100);
      const flood: Record<string, Record<string, number>> = { '~1 kB-text': {}, sentence: {} };
      let stop = false;
      const client = async (kind: string, inputs: readonly string[]) => {
        while (!stop) {
          const sent = performance.now();
          const outcome = await call('b', 'POST', '/v2/predict', { model: bModel, inputs }, kBigCallGiveUpMs).then(
            (reply) => String(reply.status),
            () => 'given up',
          );
          flood[kind][outcome] = (flood[kind][outcome] ?? 0) + 1;
          // One call every 2 s, as the reviewer's client sent them, whatever the answer.
          await sleep(Math.max(0, kBigCallGiveUpMs - (performance.now() - sent)));
        }
      };
      const clients = [client('~1 kB-text', kLongTexts), client('sentence', kShortTexts)];
      // A's calls start once B's first calls are in.
      await sleep(500);
      const loaded = await measure('big-call');
      stop = true;
      await Promise.all(clients);
      return { loaded, flood };
    };

    const idle = await measure('idle');
    const results: Record<string, unknown> = { seconds, rate, textsPerCall: kTextsPerCall, idle };
    const lines = [`fairness: org A, ${rate} predict calls/s of ${kTextsPerCall} texts for ${seconds} s per phase`, row(idle)];
    for (const scenario of scenarios) {
      if (scenario === 'training') {
        const { loaded, finished, stepsAtEnd } = await underTraining();
        Object.assign(results, { training: loaded, trainingJobsFinished: finished, stepsInProgress: stepsAtEnd });
        lines.push(
          `training  (org B keeps 2 fine-tuning jobs of ${iterations} iterations in training)`,
          row(loaded),
          `p99 under training / idle: ${(loaded.p99Ms / idle.p99Ms).toFixed(2)}x (p50 ${(loaded.p50Ms / idle.p50Ms).toFixed(2)}x)`,
          `B's training meanwhile: ${finished} job(s) finished, ${stepsAtEnd} step(s) done in the jobs still training`,
        );
      } else if (scenario !== 'big-call') {
        const rig: AttackRig<Phase> = {
          call,
          trained: async (org, body) => {
            const id = (await call(org, 'POST', '/v2/train', body, 600_000)).body.id as string;
            while ((await status(org, id)) === 'training') await sleep(200);
            if ((await status(org, id)) !== 'trained') throw new Error(`org ${org}'s model ${id} did not train`);
            return id;
          },
          measure,
          pid: child.pid!,
        };
        const { loaded, lines: more, details } = await runAttack(scenario as AttackScenario, rig);
        Object.assign(results, { [scenario]: loaded, [`${scenario}OfB`]: details });
        lines.push(
          ...more.slice(0, 1),
          row(loaded),
          `p99 under ${scenario} / idle: ${(loaded.p99Ms / idle.p99Ms).toFixed(2)}x (p50 ${(loaded.p50Ms / idle.p50Ms).toFixed(2)}x)`,
          ...more.slice(1),
        );
      } else {
        const { loaded, flood } = await underBigCalls();
        Object.assign(results, { bigCall: loaded, bigCallsOfB: flood });
        lines.push(
          `big-call  (org B floods calls of ${kBigCallTexts} texts from 2 clients, each giving up after ${kBigCallGiveUpMs} ms)`,
          row(loaded),
          `p99 under big calls / idle: ${(loaded.p99Ms / idle.p99Ms).toFixed(2)}x (p50 ${(loaded.p50Ms / idle.p50Ms).toFixed(2)}x)`,
          ...Object.entries(flood).map(
            ([kind, outcomes]) =>
              `B's ${kind} calls: ${Object.entries(outcomes)
                .map(([what, n]) => `${n} ${what}`)
                .join(', ')}`,
          ),
        );
      }
    }
    if (json) console.log(JSON.stringify(results));
    else for (const line of lines) console.log(line);
  } finally {
    child.kill('SIGTERM');
    await exited(child);
    rmSync(dir, { recursive: true, force: true });
  }
}
