// Bounded load against real servers for the fault tests: a few clients call in a loop for a fixed time and every
// call's outcome is kept, so a test can say how many were tried, answered (by status) and lost (no answer at all).

/** One call's outcome; `status` 0 means no HTTP answer came (refused, reset, or timed out): a lost request. */
export interface Answer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
  /** When the call was sent and when its answer (or failure) came, `Date.now()` ms. */
  sentAt: number;
  endedAt: number;
}

export interface Tally {
  tried: number;
  answered: number;
  lost: number;
  byStatus: Record<string, number>;
}

/** A call: base URL, method, path and optional JSON body. */
export type Call = readonly [base: string, method: string, path: string, body?: unknown];

/** Longest a single call may take before it counts as lost (a hung request is a failure, not a slow answer). */
const kCallTimeoutMs = 20_000;

export async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const sentAt = Date.now();
  try {
    const response = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(kCallTimeoutMs),
    });
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: parsed, sentAt, endedAt: Date.now() };
  } catch (error) {
    return { status: 0, retryAfter: null, body: { error: String(error) }, sentAt, endedAt: Date.now() };
  }
}

/** `concurrency` clients go round `calls` until `durationMs` has passed; every outcome, in order of completion. */
export async function loadFor(
  calls: readonly Call[],
  key: string,
  options: { concurrency: number; durationMs: number },
): Promise<Answer[]> {
  const answers: Answer[] = [];
  const end = Date.now() + options.durationMs;
  const client = async (offset: number) => {
    for (let i = offset; Date.now() < end; i += 1) {
      const [base, method, path, body] = calls[i % calls.length];
      answers.push(await call(base, key, method, path, body));
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, i) => client(i)));
  return answers;
}

export function tallyOf(answers: readonly Answer[]): Tally {
  const byStatus: Record<string, number> = {};
  for (const { status } of answers) if (status !== 0) byStatus[status] = (byStatus[status] ?? 0) + 1;
  const lost = answers.filter((a) => a.status === 0).length;
  return { tried: answers.length, answered: answers.length - lost, lost, byStatus };
}

/** Repeats a call until it answers 200 or `timeoutMs` passes; the last answer. */
export async function untilOk(base: string, key: string, method: string, path: string, body: unknown, timeoutMs: number): Promise<Answer> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call(base, key, method, path, body);
    if (answer.status === 200 || Date.now() > end) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Polls a model until it leaves `training`; its final status. */
export async function finalStatus(base: string, key: string, id: string, timeoutMs: number): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call(base, key, 'GET', `/v2/models/${id}`);
    const status = answer.body.status;
    if (answer.status === 200 && status !== 'training') return String(status);
    if (Date.now() > end) return `still ${String(status ?? answer.status)} after ${timeoutMs} ms`;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
