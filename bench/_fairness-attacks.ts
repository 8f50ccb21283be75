// The fairness bench's scenarios in which org B sends requests that are cheap to send and were costly to
// answer (#41's high items), each from two clients that send the next as soon as the last is answered:
// - explain: `explain: 20` on B's model of 10,000 examples, with the most inputs a call may explain of
//   about 1,200 characters each (and a call of 96 inputs, which the comparison bound refuses);
// - explain-size: `explain: 20` for 96 inputs on a model whose 20 examples are 100,000 characters each: the
//   size of B's answers and the server's resident memory say whether an answer can grow without bound;
// - classify-fit: multi-class `/v2/classify` calls whose head is as large as a call may fit (600 examples over
//   100 classes), each with examples of its own so no fitted head is reused, and one of 1,200 x 100 (refused).
// Each prints what became of B's calls beside A's latencies (measured by fairness.ts).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { kMaxExplainComparisons } from '../src/contract/long-texts.js';
import { uciSentences } from '../fixtures/corpora.js';

export const kAttackScenarios = ['explain', 'explain-size', 'classify-fit'] as const;
export type AttackScenario = (typeof kAttackScenarios)[number];

/** What fairness.ts lends a scenario: calls as an organization, and its measurement of A's predictions. */
export interface AttackRig<Phase> {
  call(
    org: string,
    method: string,
    path: string,
    body?: unknown,
    timeoutMs?: number,
  ): Promise<{ status: number; bytes: number; body: Record<string, unknown> }>;
  trained(org: string, body: Record<string, unknown>): Promise<string>;
  measure(phase: string): Promise<Phase>;
  /** The server process, for its resident memory. */
  pid: number;
}

export interface AttackResult<Phase> {
  loaded: Phase;
  lines: string[];
  details: Record<string, unknown>;
}

const imdb = uciSentences('imdb');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** About `chars` characters of review sentences, starting at sentence `from`. */
function reviewText(from: number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = from; length < chars; i++) {
    const text = imdb[i % imdb.length].text;
    parts.push(text);
    length += text.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

/** Peak resident memory of a process so far, in MB (Linux). */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return Math.round(kb / 1024);
}

/** Two clients sending `next()`'s call back to back until `stop`; outcomes counted by status, bytes summed. */
async function flood<Phase>(rig: AttackRig<Phase>, next: (client: number, round: number) => { path: string; body: unknown }) {
  const outcomes: Record<string, number> = {};
  let stop = false;
  let maxBytes = 0;
  let maxMs = 0;
  const client = async (c: number) => {
    for (let round = 0; !stop; round++) {
      const { path, body } = next(c, round);
      const sent = performance.now();
      const outcome = await rig.call('b', 'POST', path, body, 120_000).then(
        (reply) => {
          maxBytes = Math.max(maxBytes, reply.bytes);
          return String(reply.status);
        },
        () => 'failed',
      );
      maxMs = Math.max(maxMs, performance.now() - sent);
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
  };
  const clients = [client(0), client(1)];
  await sleep(500); // B's first calls are in before A's are timed
  return {
    outcomes,
    stopAndWait: async () => {
      stop = true;
      await Promise.all(clients);
      return { maxBytes, maxMs };
    },
  };
}

const summary = (outcomes: Record<string, number>) =>
  Object.entries(outcomes)
    .map(([what, n]) => `${n} ${what}`)
    .join(', ');

async function explainAttack<Phase>(rig: AttackRig<Phase>): Promise<AttackResult<Phase>> {
  const examples = Array.from({ length: 10_000 }, (_, i) => ({
    text: `${imdb[i % imdb.length].text} (${i})`,
    label: imdb[i % imdb.length].label,
    label_text: 'positive review',
  }));
  const model = await rig.trained('b', { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false });
  const most = Math.floor(kMaxExplainComparisons / examples.length);
  const inputs = Array.from({ length: most }, (_, i) => reviewText(i * 20, 1200));
  const over = Array.from({ length: 96 }, (_, i) => reviewText(i * 20, 1200));
  const attack = await flood(rig, (client, round) => ({
    path: '/v2/predict',
    body: { model, inputs: client === 1 && round % 4 === 3 ? over : inputs, explain: 20 },
  }));
  const loaded = await rig.measure('explain');
  const { maxBytes, maxMs } = await attack.stopAndWait();
  return {
    loaded,
    lines: [
      `explain   (org B: explain 20 on a 10,000-example model, ${most} inputs of 1,200 characters a call, from 2 clients back to back)`,
      `B's explain calls: ${summary(attack.outcomes)}; largest answer ${(maxBytes / 1e6).toFixed(2)} MB, slowest ${Math.round(maxMs)} ms`,
    ],
    details: { outcomes: attack.outcomes, maxBytes, maxMs },
  };
}

async function explainSizeAttack<Phase>(rig: AttackRig<Phase>): Promise<AttackResult<Phase>> {
  const examples = Array.from({ length: 20 }, (_, i) => ({
    text: reviewText(i * 500, 100_000),
    label: i % 2 === 0,
    label_text: 'positive review',
  }));
  const model = await rig.trained('b', { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false });
  const inputs = Array.from({ length: 96 }, (_, i) => imdb[i].text);
  const before = peakRssMb(rig.pid);
  const attack = await flood(rig, () => ({ path: '/v2/predict', body: { model, inputs, explain: 20 } }));
  const loaded = await rig.measure('explain-size');
  const { maxBytes, maxMs } = await attack.stopAndWait();
  const after = peakRssMb(rig.pid);
  return {
    loaded,
    lines: [
      `explain-size (org B: explain 20 for 96 inputs on a model of 20 examples of 100,000 characters, from 2 clients back to back)`,
      `B's calls: ${summary(attack.outcomes)}; largest answer ${(maxBytes / 1e6).toFixed(2)} MB, slowest ${Math.round(maxMs)} ms; ` +
        `server peak RSS ${before} -> ${after} MB`,
    ],
    details: { outcomes: attack.outcomes, maxBytes, maxMs, peakRssMb: { before, after } },
  };
}

async function classifyFitAttack<Phase>(rig: AttackRig<Phase>): Promise<AttackResult<Phase>> {
  const classes = 100;
  const body = (perClass: number, salt: string) => ({
    model: 'svc-small',
    task_type: 'multi-class-classification',
    inputs: ['Where is my parcel?'],
    examples: Array.from({ length: classes * perClass }, (_, i) => ({
      text: `${imdb[(i * 7) % imdb.length].text} ${salt} ${i}`,
      label: `class ${i % classes}`,
    })),
  });
  const attack = await flood(rig, (client, round) => ({
    path: '/v2/classify',
    // Fresh examples every call: each one is a new fit. Every fourth call of one client asks for twice the bound.
    body: client === 1 && round % 4 === 3 ? body(12, `r${round}`) : body(6, `c${client}r${round}`),
  }));
  const loaded = await rig.measure('classify-fit');
  const { maxMs } = await attack.stopAndWait();
  return {
    loaded,
    lines: [
      `classify-fit (org B: multi-class classify of 600 examples over 100 classes, a new fit each call, from 2 clients back to back)`,
      `B's classify calls: ${summary(attack.outcomes)}; slowest ${Math.round(maxMs)} ms`,
    ],
    details: { outcomes: attack.outcomes, maxMs },
  };
}

/** Runs one attack scenario against the rig. */
export function runAttack<Phase>(scenario: AttackScenario, rig: AttackRig<Phase>): Promise<AttackResult<Phase>> {
  if (scenario === 'explain') return explainAttack(rig);
  if (scenario === 'explain-size') return explainSizeAttack(rig);
  return classifyFitAttack(rig);
}
