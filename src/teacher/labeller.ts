// Labelling texts with a teacher: the texts cut into calls of a few each, a bounded number of calls in flight, each
// call retried with backoff while the provider is overloaded or failing (429, 5xx, no answer), and every answer
// handed to the caller the moment it arrives so that it can keep what was bought. The way out of a call is a
// transport (the proxy's forwarding code in the service, a direct HTTPS call in the library); this module never
// knows which.
import { readTeacherReply, teacherDialectOf, teacherRequestBody, type TeacherLabel, type TeacherTask } from './protocol.js';

export type TeacherProvider = 'provider-a' | 'provider-b' | 'provider-c';

/** What one call came back with, as the transport saw it. */
export interface TeacherCallReply {
  /** The status answered (the provider's, or the proxy's own refusal); 0 when nothing came back. */
  status: number;
  /** The body answered (or why nothing came back). */
  body: string;
  tokensIn: number | null;
  tokensOut: number | null;
  /** Milliseconds the call took. */
  ms: number;
  /** The provider's `retry-after`, in ms, when it gave one. */
  retryAfterMs: number | null;
  /**
   * Set when no later call can succeed either, so labelling stops with what it has: the project's budget is spent,
   * or its organization lost proxy access.
   */
  stop?: string;
}

/** Sends one call's JSON body (the model without its provider prefix) and reports what came back; never rejects. */
export type TeacherTransport = (body: Record<string, unknown>, signal: AbortSignal) => Promise<TeacherCallReply>;

/** One text's answer: its label, or why it has none. */
export interface TeacherAnswer {
  position: number;
  text: string;
  outcome: 'labelled' | 'refused' | 'invalid';
  label: TeacherLabel | null;
  detail: string | null;
  /** The text's share of its call's tokens and milliseconds. */
  tokensIn: number;
  tokensOut: number;
  ms: number;
}

export interface LabelTextsOptions {
  /** The teacher as the proxy names it: `provider-a:gpt-4o-mini`. */
  teacher: string;
  task: TeacherTask;
  /** The texts to label, with their positions in the request. */
  texts: readonly { position: number; text: string }[];
  textsPerCall: number;
  concurrency: number;
  transport: TeacherTransport;
  /** Told each call's answers as soon as they arrive; labelling waits for it (the caller keeps them). */
  onAnswers: (answers: TeacherAnswer[]) => Promise<void>;
  signal?: AbortSignal;
  /** Tries per call while the provider answers 429, 5xx or nothing; default {@link kTeacherAttempts}. */
  attempts?: number;
  /** The first backoff, ms (doubled each try, up to {@link kMaxBackoffMs}); default 500. */
  backoffMs?: number;
}

/** What labelling did: calls made (retries included) and why it stopped early, if it did. */
export interface LabelTextsResult {
  calls: number;
  stopped: string | null;
}

/** Tries per call before labelling stops: with the backoff, about a minute and a half of a failing provider. */
export const kTeacherAttempts = 8;
/** Longest wait between two tries of one call. */
export const kMaxBackoffMs = 30_000;

const kRetryable = (status: number) => status === 0 || status === 429 || status >= 500;

/**
 * Labels `texts` with the teacher, `textsPerCall` to a call and `concurrency` calls at once. Resolves when every text
 * was answered or labelling had to stop (a budget spent, a provider failing past its tries, a 4xx that no retry can
 * fix): `stopped` says why, and the texts never answered are simply not in any `onAnswers` batch.
 *
 * @example
 * ```ts
 * const { calls, stopped } = await labelTexts({ teacher: 'provider-a:gpt-4o-mini', task: { taskType: 'binary-classification',
 *   labels: ['billing'] }, texts: [{ position: 0, text: 'Why was I charged twice?' }], textsPerCall: 10, concurrency: 4,
 *   transport, onAnswers: async (answers) => keep(answers) });
 * // { calls: 1, stopped: null }; keep() got [{ position: 0, outcome: 'labelled', label: true, … }]
 * ```
 */
export async function labelTexts(options: LabelTextsOptions): Promise<LabelTextsResult> {
  const colon = options.teacher.indexOf(':');
  const provider = options.teacher.slice(0, colon) as TeacherProvider;
  const model = options.teacher.slice(colon + 1);
  const dialect = teacherDialectOf(provider);
  const batches: { position: number; text: string }[][] = [];
  for (let i = 0; i < options.texts.length; i += options.textsPerCall) batches.push(options.texts.slice(i, i + options.textsPerCall));
  const attempts = options.attempts ?? kTeacherAttempts;
  const backoffMs = options.backoffMs ?? 500;
  const stopper = new AbortController();
  const signal = options.signal === undefined ? stopper.signal : AbortSignal.any([options.signal, stopper.signal]);
  let next = 0;
  let calls = 0;
  let stopped: string | null = null;
  const stop = (reason: string) => {
    stopped ??= reason;
    stopper.abort(new Error(reason));
  };

  const callOnce = async (batch: { position: number; text: string }[]): Promise<void> => {
    const body = teacherRequestBody(
      dialect,
      model,
      options.task,
      batch.map((t) => t.text),
    );
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return;
      calls += 1;
      const reply = await options.transport(body, signal);
      if (signal.aborted) return;
      if (reply.stop !== undefined) return stop(reply.stop);
      if (reply.status >= 200 && reply.status < 300) {
        const verdicts = readTeacherReply(dialect, reply.body, options.task, batch.length);
        const share = (n: number | null) => (n === null ? 0 : n / batch.length);
        const answers = batch.map(({ position, text }, i): TeacherAnswer => {
          const verdict = verdicts[i];
          const base = { position, text, tokensIn: share(reply.tokensIn), tokensOut: share(reply.tokensOut), ms: reply.ms / batch.length };
          return verdict.kind === 'label'
            ? { ...base, outcome: 'labelled', label: verdict.label, detail: null }
            : { ...base, outcome: verdict.kind, label: null, detail: verdict.detail };
        });
        await options.onAnswers(answers);
        return;
      }
      if (!kRetryable(reply.status)) {
        return stop(`${options.teacher} answered ${reply.status}: ${reply.body.slice(0, 300)}`);
      }
      if (attempt >= attempts) {
        const what = reply.status === 0 ? `no answer (${reply.body.slice(0, 200)})` : `${reply.status}`;
        return stop(`${options.teacher} gave ${what} ${attempts} times in a row; labelling stopped`);
      }
      const wait = Math.min(kMaxBackoffMs, Math.max(reply.retryAfterMs ?? 0, backoffMs * 2 ** (attempt - 1)));
      await sleep(wait, signal);
    }
  };

  const worker = async (): Promise<void> => {
    while (!signal.aborted && next < batches.length) await callOnce(batches[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, batches.length) }, worker));
  if (options.signal?.aborted) throw options.signal.reason ?? new Error('labelling was aborted');
  return { calls, stopped };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
