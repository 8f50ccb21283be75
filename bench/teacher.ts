// `npm run bench -- teacher [--json] [--tasks imdb,yelp,sites,email] [--draws 1,2] [--texts 500] [--pool 1000]
//   [--budget 100] [--parts baseline,teacher,select,select-head] [--finetune]`
// A chat model as teacher, end to end over HTTP: a real `svc serve` (its own process) on 127.0.0.1 whose
// provider A is the loopback fake provider in teacher mode, answering every labelling call with the task's
// true label except for a seeded 10% of the texts (the fake's `errorRate: 0.1`), and a project with proxy
// access whose calls the service makes through the proxy's forwarding code. Per task of the accuracy bench
// (bench/_accuracy-tasks.ts) and draw, the draw's held-out rows are split once (seeded) into the pool of
// unlabelled texts (up to `--pool`, always leaving kMinTest rows) and the test rows every model is scored on
// against the true labels:
// - baseline: the draw's human-labelled examples (10 + 10 binary, 8 per class multi-class), `POST /v2/train`;
// - teacher: the first `--texts` texts of the pool, no human labels, `teacher` labels them (`holdout: 0.2` of its
//   labels kept back: the model's evaluation report is its agreement with the teacher); calls and tokens
//   from the model's `training_data.teacher`;
// - select: the whole pool, `select: { budget: --budget, strategy }`, `uncertain` against `random`;
// - select-head: the same comparison at the head, without the server (bench/_teacher-select-head.ts): the cached
//   base-encoder embeddings, the fake's noisy texts, selectByUncertainty's rounds against a random sample.
// Prints markdown tables: held-out accuracy (mean ± sample std over the draws), agreement, calls, tokens.
// Frozen encoder unless `--finetune` (both sides then fine-tune): the quick setting fits 2 cores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { type FakeProvider, kFakeKeys, startFakeProvider } from '../fixtures/fake-provider.js';
import { exited, serve } from '../fixtures/serve-process.js';
import { seededRandom } from '../src/random.js';
import { openService } from '../src/service/open.js';
import type { TeacherLabel } from '../src/teacher/protocol.js';
import { closePool } from '../src/index.js';
import { kTasks } from './_accuracy-tasks.js';
import { kDefaultFirstRound, kDefaultRoundSize } from '../src/train/uncertainty.js';
import { type HeadSelection, selectOnHead } from './_teacher-select-head.js';
import type { Draw, Task } from './_accuracy-tasks.js';
import { drawsOption, listOption } from './accuracy.js';
import { intOption } from './_common.js';

/** The teacher's model as the proxy names it. */
const kTeacherModel = 'provider-a:gpt-4o-mini';
/** The fake teacher's share of wrong labels (by a seeded hash of the text). */
const kErrorRate = 0.1;
/** Test rows a draw keeps whatever the pool asks for. */
const kMinTest = 300;
/** Texts a predict call: SpamAssassin bodies are long, and a call must end inside the predict deadline. */
const kPredictChunk = 16;
const kRetries = 60;
const kParts = ['baseline', 'teacher', 'select', 'select-head'] as const;
type Part = (typeof kParts)[number];

/** What each task's teacher is told the labels mean. */
const kInstructions: Record<string, string> = {
  imdb: 'A sentence from a film review. true: the sentence speaks well of the film; false: it does not.',
  yelp: 'A sentence from a restaurant review. true: the sentence speaks well of the restaurant; false: it does not.',
  sites: 'A sentence from an online review: name the site it was written for (amazon: a product, imdb: a film, yelp: a restaurant).',
  email: 'An email body: easy ham (ordinary legitimate mail), hard ham (legitimate mail that looks like spam) or spam.',
};

interface Scored {
  accuracy: number;
  seconds: number;
}
interface TeacherScored extends Scored {
  agreement: number;
  labelled: number;
  heldOut: number;
  skipped: number;
  calls: number;
  tokensIn: number;
  tokensOut: number;
}
interface DrawResult {
  seed: number;
  pool: number;
  test: number;
  examples: number;
  baseline?: Scored;
  teacher?: TeacherScored;
  uncertain?: TeacherScored;
  random?: TeacherScored;
  head?: HeadSelection;
}

/** A draw's held-out rows [0, t) shuffled once by the draw's seed: the first ones the pool, the rest the test set. */
function splitPool(t: number, pool: number, seed: number): { pool: number[]; test: number[] } {
  const order = Array.from({ length: t }, (_, i) => i);
  const random = seededRandom(3000 + seed);
  for (let i = t - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const m = Math.max(0, Math.min(pool, t - kMinTest));
  return { pool: order.slice(0, m), test: order.slice(m) };
}

/** The fields that say which task a train request is, with or without a teacher. */
function taskFields(draw: Draw): Record<string, unknown> {
  if (draw.request.task_type === 'binary-classification') return { task_type: 'binary-classification', label_text: 'positive' };
  const labels = [...new Set(draw.expected.map(String))].sort();
  return { task_type: 'multi-class-classification', labels };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const average = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const std = (xs: readonly number[]) => {
  const mean = average(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, xs.length - 1));
};

export async function run(args: string[]): Promise<void> {
  const json = args.includes('--json');
  // The quick setting: one binary task, one draw.
  const tasks = (args.includes('--tasks') ? listOption(args, 'tasks', Object.keys(kTasks)) : ['imdb']).map((name) => kTasks[name]!());
  const draws = args.includes('--draws') || args.includes('--seeds') ? drawsOption(args) : [1];
  const parts = listOption(args, 'parts', kParts) as readonly Part[];
  const textCount = intOption(args, 'texts', 500);
  const poolCount = intOption(args, 'pool', 1000);
  const budget = intOption(args, 'budget', 100);
  const finetune = args.includes('--finetune');

  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-teacher-'));
  const setup = openService(dir);
  await setup.createOrganization('bench');
  const key = (await setup.createApiKey('bench')).key;
  const project = (await setup.createProject('bench', 'teacher bench')).id;
  await setup.setProxyAccess('bench', true);
  // Predict calls of the test sets and the teacher's calls: this bench measures labels, not the rate limits.
  await setup.setOrgLimits('bench', { requestsPerMinute: 1_000_000 });
  await setup.close();

  // The true label of each text of the task being run (texts repeat across tasks: sites holds imdb's sentences).
  let truth = new Map<string, TeacherLabel>();
  let misses = 0;
  const fake: FakeProvider = await startFakeProvider({
    teacher: {
      labelOf: (text: string) => {
        const label = truth.get(text);
        if (label !== undefined) return label;
        misses += 1;
        return false;
      },
      errorRate: kErrorRate,
    },
  });
  const server = await serve(['--data', dir, '--proxy-models', kTeacherModel], {
    SVC_PROVIDER_A_URL: fake.urls.a,
    SVC_PROVIDER_A_KEY: kFakeKeys.a,
  });
  const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const reply = (await response.json()) as Record<string, unknown>;
      if (response.ok) return reply;
      // A predict call the pool would answer past its deadline on a loaded machine (long emails): as a client would, wait and retry.
      if (response.status === 503 && attempt < kRetries) {
        await sleep(1000 * Number(response.headers.get('retry-after') ?? 2));
        continue;
      }
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(reply)}`);
    }
  };
  /** Trains, waits, and scores the model on the test texts against the true labels. */
  const trainAndScore = async (request: Record<string, unknown>, testTexts: string[], expected: (boolean | string)[]) => {
    const started = performance.now();
    const id = (await call('POST', '/v2/train', { model: 'svc-small', finetune, ...request })).id as string;
    let model: Record<string, unknown>;
    for (;;) {
      model = await call('GET', `/v2/models/${id}`);
      if (model.status !== 'training') break;
      await sleep(250);
    }
    if (model.status !== 'trained') throw new Error(`${id} ${String(model.status)}: ${String(model.error)}`);
    const seconds = (performance.now() - started) / 1000;
    let correct = 0;
    for (let s = 0; s < testTexts.length; s += kPredictChunk) {
      const inputs = testTexts.slice(s, s + kPredictChunk);
      const { predictions } = (await call('POST', '/v2/predict', { model: id, inputs })) as { predictions: { label: boolean | string }[] };
      predictions.forEach((p, i) => (correct += p.label === expected[s + i] ? 1 : 0));
    }
    return { id, model, accuracy: correct / testTexts.length, seconds };
  };
  const withTeacher = async (request: Record<string, unknown>, testTexts: string[], expected: (boolean | string)[]) => {
    const scored = await trainAndScore(request, testTexts, expected);
    const data = scored.model.training_data as {
      labelled: number;
      held_out: number;
      skipped: number;
      teacher: { calls: number; tokens_in: number; tokens_out: number };
    };
    const evaluation = await call('GET', `/v2/models/${scored.id}/evaluation`);
    return {
      accuracy: scored.accuracy,
      seconds: scored.seconds,
      agreement: evaluation.accuracy as number,
      labelled: data.labelled,
      heldOut: data.held_out,
      skipped: data.skipped,
      calls: data.teacher.calls,
      tokensIn: data.teacher.tokens_in,
      tokensOut: data.teacher.tokens_out,
    };
  };

  const results: Record<string, DrawResult[]> = {};
  try {
    for (const task of tasks) {
      results[task.name] = [];
      for (const seed of draws) {
        const draw = task.draw(seed);
        // The UCI files hold an empty sentence or two: no request may carry one, and it has nothing to classify.
        const held = splitPool(draw.testTexts.length, poolCount, seed);
        const written = (i: number) => draw.testTexts[i]!.trim() !== '';
        const split = { pool: held.pool.filter(written), test: held.test.filter(written) };
        const testTexts = split.test.map((i) => draw.testTexts[i]!);
        const expected = split.test.map((i) => draw.expected[i]!);
        const poolTexts = split.pool.map((i) => draw.testTexts[i]!);
        truth = new Map(draw.testTexts.map((text, i) => [text, draw.expected[i]!] as const).reverse());
        const teacher = { model: kTeacherModel, project_id: project, instructions: kInstructions[task.name] };
        const outcome: DrawResult = { seed, pool: poolTexts.length, test: testTexts.length, examples: draw.request.examples.length };
        if (parts.includes('baseline')) {
          const { accuracy, seconds } = await trainAndScore({ ...draw.request }, testTexts, expected);
          outcome.baseline = { accuracy, seconds };
        }
        if (parts.includes('teacher')) {
          const texts = poolTexts.slice(0, textCount);
          outcome.teacher = await withTeacher({ ...taskFields(draw), texts, teacher, holdout: 0.2 }, testTexts, expected);
        }
        if (parts.includes('select')) {
          for (const strategy of ['uncertain', 'random'] as const) {
            const request = { ...taskFields(draw), texts: poolTexts, teacher, select: { budget, strategy }, holdout: 0.2 };
            outcome[strategy] = await withTeacher(request, testTexts, expected);
          }
        }
        if (parts.includes('select-head')) {
          const cacheDir = join(tmpdir(), 'svc-accuracy-cache');
          outcome.head = await selectOnHead(task, seed, { ...split, budget, errorRate: kErrorRate, cacheDir });
        }
        results[task.name]!.push(outcome);
        if (!json) console.error(`${task.name} draw ${seed}: ${JSON.stringify(outcome)}`);
      }
    }
  } finally {
    server.child.kill('SIGTERM');
    await exited(server.child);
    await fake.close();
    await closePool();
    rmSync(dir, { recursive: true, force: true });
  }
  if (misses > 0) throw new Error(`the fake teacher was asked ${misses} texts the bench did not send`);
  if (json) {
    console.log(JSON.stringify({ draws, textCount, poolCount, budget, finetune, errorRate: kErrorRate, results }, null, 2));
    return;
  }
  printTables(tasks, results, { draws, textCount, budget, finetune });
}

function printTables(
  tasks: readonly Task[],
  results: Record<string, DrawResult[]>,
  settings: { draws: readonly number[]; textCount: number; budget: number; finetune: boolean },
): void {
  const pct = (xs: number[]) => `${(100 * average(xs)).toFixed(1)} ± ${(100 * std(xs)).toFixed(1)}`;
  const mean = (xs: number[]) => Math.round(average(xs)).toLocaleString('en-US');
  const body = settings.finetune ? 'adapter (fine-tuned)' : 'frozen encoder';
  console.log(
    `\n${settings.draws.length} draws (${settings.draws.join(', ')}); ${body}; teacher ${kTeacherModel} (the fake, ${100 * kErrorRate}% wrong labels); accuracy on each draw's test rows against the true labels\n`,
  );
  const rows = tasks.map((t) => ({ task: t, draws: results[t.name]! }));
  if (rows.some((r) => r.draws[0]?.teacher || r.draws[0]?.baseline)) {
    console.log(
      `| task | test rows | human examples: accuracy % | teacher-labelled texts (up to ${settings.textCount}): accuracy % | agreement with the teacher % (held out) | labelled / held out / skipped | teacher calls | tokens in / out | training s (human / teacher) |`,
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const { task, draws } of rows) {
      const b = draws.flatMap((d) => (d.baseline ? [d.baseline] : []));
      const t = draws.flatMap((d) => (d.teacher ? [d.teacher] : []));
      const cell = <T>(xs: T[], f: (xs: T[]) => string) => (xs.length ? f(xs) : '-');
      console.log(
        `| ${task.name} | ${draws[0]!.test} | ${cell(b, (xs) => `${pct(xs.map((x) => x.accuracy))} (${draws[0]!.examples} examples)`)} | ${cell(t, (xs) => `${pct(xs.map((x) => x.accuracy))} (${Math.min(settings.textCount, draws[0]!.pool)} texts)`)} | ${cell(t, (xs) => pct(xs.map((x) => x.agreement)))} | ${cell(t, (xs) => `${mean(xs.map((x) => x.labelled))} / ${mean(xs.map((x) => x.heldOut))} / ${mean(xs.map((x) => x.skipped))}`)} | ${cell(t, (xs) => mean(xs.map((x) => x.calls)))} | ${cell(t, (xs) => `${mean(xs.map((x) => x.tokensIn))} / ${mean(xs.map((x) => x.tokensOut))}`)} | ${cell(b, (xs) => average(xs.map((x) => x.seconds)).toFixed(1))} / ${cell(t, (xs) => average(xs.map((x) => x.seconds)).toFixed(1))} |`,
      );
    }
  }
  if (rows.some((r) => r.draws[0]?.uncertain)) {
    console.log(
      `\n| task | pool | budget | uncertain: accuracy % | random: accuracy % | uncertain - random, points (worst draw) | teacher calls (uncertain / random) | tokens in (uncertain / random) |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const { task, draws } of rows) {
      const u = draws.map((d) => d.uncertain!);
      const r = draws.map((d) => d.random!);
      const deltas = draws.map((d) => 100 * (d.uncertain!.accuracy - d.random!.accuracy));
      console.log(
        `| ${task.name} | ${draws[0]!.pool} | ${settings.budget} | ${pct(u.map((x) => x.accuracy))} | ${pct(r.map((x) => x.accuracy))} | ${average(deltas) >= 0 ? '+' : ''}${average(deltas).toFixed(1)} (${Math.min(...deltas).toFixed(1)}) | ${mean(u.map((x) => x.calls))} / ${mean(r.map((x) => x.calls))} | ${mean(u.map((x) => x.tokensIn))} / ${mean(r.map((x) => x.tokensIn))} |`,
      );
    }
  }
  if (rows.some((r) => r.draws[0]?.head)) {
    console.log(
      `\nAt the head (select-head: cached base-encoder embeddings, the fake's noisy texts; uncertain: a random round of ${kDefaultFirstRound}, then rounds of ${kDefaultRoundSize}):\n\n| task | pool | budget | uncertain: accuracy % | random: accuracy % | uncertain - random, points (worst draw) | the whole pool labelled: accuracy % |`,
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const { task, draws } of rows) {
      const h = draws.map((d) => d.head!);
      const deltas = h.map((x) => 100 * (x.uncertain - x.random));
      console.log(
        `| ${task.name} | ${draws[0]!.pool} | ${settings.budget} | ${pct(h.map((x) => x.uncertain))} | ${pct(h.map((x) => x.random))} | ${average(deltas) >= 0 ? '+' : ''}${average(deltas).toFixed(1)} (${Math.min(...deltas).toFixed(1)}) | ${pct(h.map((x) => x.all))} |`,
      );
    }
  }
}
