// Training from the request log: `POST /v2/train` with `from_log` turns a project's logged chat calls into an ordinary
// train body. Each successful call in the range gives one example: the text it classified and the label the chat
// model's reply gives under the request's rule (teacher/logged-calls.ts). A call whose text or label cannot be read
// is counted and sampled, never guessed; identical texts keep the latest answer; a seeded, stratified share of the
// labelled examples is held back as `validation`, so the model's evaluation report is its agreement with the chat
// model. The result also carries the model object's `training_data` (what was read, skipped and what it cost).
import { SvcError } from '../errors.js';
import { parseRequest } from '../parse.js';
import { kDefaultSeed, seededRandom } from '../random.js';
import { kMaxExamples, kMaxTextLength, kMinExamplesPerClass, validateTrainRequest } from '../contract/train-request.js';
import { logTask, logTrainRequestSchema, type LogTrainRequest } from '../contract/log-source.js';
import { kDefaultHoldout } from '../contract/teacher-request.js';
import { kSkippedSamples, type TrainingData } from '../contract/training-data.js';
import { pointerTokens } from '../teacher/json-pointer.js';
import { callText, labelReader, replyText } from '../teacher/logged-calls.js';
import type { TeacherLabel, TeacherTask } from '../teacher/protocol.js';
import type { Project, RequestLogRow, Store } from '../store/types.js';

/** Rows read from the store at a time: a batch's bodies (64 KiB each at most) stay a few tens of MB. */
export const kLogReadBatch = 500;
/** Characters of a reply a skipped call's reason quotes. */
const kQuoteChars = 80;

/** What log training needs of the service: the store, and the caller's project (404 when it is not theirs). */
export interface LogTrainingDeps {
  store: Store;
  ownProject: (projectId: string) => Promise<Project>;
}

/** An ordinary train body and the `training_data` its job stores. */
export interface LogTrainingBody {
  body: Record<string, unknown>;
  trainingData: TrainingData;
}

interface Labelled {
  text: string;
  label: TeacherLabel;
}

interface Read {
  rows: number;
  /** Latest answer per distinct text, in first-seen order. */
  labelled: Map<string, Labelled>;
  skipped: { request_id: number; reason: string }[];
  reasons: Map<string, number>;
  calls: number;
  tokensIn: number;
  tokensOut: number;
  totalMs: number;
  models: Set<string>;
  /** Set when the range holds more calls than one request reads. */
  stopped?: string;
}

const quote = (text: string) => JSON.stringify(text.length > kQuoteChars ? `${text.slice(0, kQuoteChars)}…` : text);

/** Why a call gives no example, in words a user acts on, with the reply it quotes. */
interface Skip {
  reason: string;
  reply?: string;
}

/** The example a logged call gives, or why it gives none. */
function rowExample(row: RequestLogRow, request: LogTrainRequest, read: (reply: string) => TeacherLabel | null): Labelled | Skip {
  if (row.error !== null) return { reason: `the call ended with an error: ${row.error}` };
  const pointer = request.from_log.text_pointer;
  const text = callText(row.requestBody, pointer);
  if (text === null) {
    return {
      reason: pointer === undefined ? 'the request has no user message text' : `the request has no string at text_pointer '${pointer}'`,
    };
  }
  if (text.trim() === '') return { reason: 'the text is empty' };
  if (text.length > kMaxTextLength) return { reason: `the text is longer than ${kMaxTextLength} characters` };
  const reply = replyText(row.provider, row.responseBody);
  if (reply === null) return { reason: 'the response body is not a readable reply (cut, or not JSON nor an event stream)' };
  const label = read(reply);
  if (label !== null) return { text, label };
  const rule = request.from_log.label;
  if ('pointer' in rule) return { reason: `no label of the task at label.pointer '${rule.pointer}'`, reply };
  if ('regex' in rule) return { reason: 'label.regex gives no label of the task', reply };
  return { reason: 'no label word of the task', reply };
}

async function readLog(deps: LogTrainingDeps, request: LogTrainRequest, task: TeacherTask): Promise<Read> {
  const source = request.from_log;
  const read = labelReader(source.label, task, 'from_log.label');
  const out: Read = {
    rows: 0,
    labelled: new Map(),
    skipped: [],
    reasons: new Map(),
    calls: 0,
    tokensIn: 0,
    tokensOut: 0,
    totalMs: 0,
    models: new Set(),
  };
  // A fixed end: calls logged while the request reads are not half in it.
  const range = { since: source.since, until: source.until ?? Date.now(), model: source.model };
  let afterId = 0;
  for (;;) {
    const limit = Math.min(kLogReadBatch, kMaxExamples - out.rows);
    const rows = await deps.store.readRequestLogRange(source.project_id, { ...range, afterId, limit });
    for (const row of rows) {
      const result = rowExample(row, request, read);
      if ('reason' in result) {
        out.reasons.set(result.reason, (out.reasons.get(result.reason) ?? 0) + 1);
        const reason = result.reply === undefined ? result.reason : `${result.reason} in the reply ${quote(result.reply)}`;
        if (out.skipped.length < kSkippedSamples) out.skipped.push({ request_id: row.id, reason });
        continue;
      }
      // The latest answer for a text wins; it keeps its first place so the order stays the log's.
      out.labelled.set(result.text, result);
      out.calls++;
      out.tokensIn += row.tokensIn ?? 0;
      out.tokensOut += row.tokensOut ?? 0;
      out.totalMs += row.totalMs;
      out.models.add(row.model);
    }
    out.rows += rows.length;
    if (rows.length < limit) return out;
    afterId = rows[rows.length - 1].id;
    if (out.rows >= kMaxExamples) {
      const more = await deps.store.readRequestLogRange(source.project_id, { ...range, afterId, limit: 1 });
      if (more.length > 0)
        out.stopped = `read the first ${kMaxExamples} calls of the range (the most one request reads); later calls were not read`;
      return out;
    }
  }
}

/** The refusal when no call gave an example: how many matched, and why they were skipped. */
function nothingUsable(request: LogTrainRequest, read: Read): SvcError {
  const source = request.from_log;
  const where = [
    `project '${source.project_id}'`,
    source.since === undefined ? null : `since ${new Date(source.since).toISOString()}`,
    source.until === undefined ? null : `until ${new Date(source.until).toISOString()}`,
    source.model === undefined ? null : `model '${source.model}'`,
  ].filter(Boolean);
  if (read.rows === 0) {
    return new SvcError('invalid_request', `No successful call in the request log matched (${where.join(', ')})`, { param: 'from_log' });
  }
  const reasons = [...read.reasons].sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${n}: ${reason}`);
  const message = `None of the ${read.rows} calls that matched in the request log (${where.join(', ')}) gave a labelled example; skipped ${reasons.join('; ')}`;
  return new SvcError('invalid_request', message, { param: 'from_log' });
}

/** The stratum a label falls in: the same key for the same label (multi-label: the same set). */
const stratum = (label: TeacherLabel) => (Array.isArray(label) ? JSON.stringify([...label].sort()) : String(label));

/**
 * Splits the labelled examples into training and held-out ones: `holdout` of each label's examples (rounded), seeded,
 * always leaving a label enough examples to train on (multi-class: {@link kMinExamplesPerClass}; else one).
 */
function holdOut(examples: readonly Labelled[], holdout: number, task: TeacherTask): { train: Labelled[]; held: Labelled[] } {
  const random = seededRandom(kDefaultSeed);
  const keep = task.taskType === 'multi-class-classification' ? kMinExamplesPerClass : 1;
  const strata = new Map<string, number[]>();
  examples.forEach((example, i) => {
    const key = stratum(example.label);
    const indices = strata.get(key);
    if (indices === undefined) strata.set(key, [i]);
    else indices.push(i);
  });
  const held = new Set<number>();
  for (const indices of strata.values()) {
    // Fisher-Yates with the seeded draw, then the first `count` are held out.
    for (let i = indices.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [indices[i], indices[j]] = [indices[j], indices[i]];
    }
    const count = Math.min(Math.round(indices.length * holdout), Math.max(0, indices.length - keep));
    for (const i of indices.slice(0, count)) held.add(i);
  }
  return { train: examples.filter((_, i) => !held.has(i)), held: examples.filter((_, i) => held.has(i)) };
}

/** One example in the train request's shape for the task. */
function trainExample(example: Labelled, request: LogTrainRequest): Record<string, unknown> {
  if (request.task_type === 'binary-classification') return { text: example.text, label: example.label, label_text: request.label_text };
  if (request.task_type === 'multi-class-classification') return { text: example.text, label: example.label };
  return { text: example.text, labels: example.label };
}

/**
 * Reads the calls `body.from_log` names and returns the ordinary train body they make, with its `training_data`.
 * Throws `SvcError`: 400 for a bad request (the rule checked before any row is read), 404 when the project is not the
 * caller's, 400 when no call gave a labelled example (saying how many matched and why they were skipped) or the
 * examples do not make a valid train request (prefixed with what the log gave).
 *
 * @example
 * ```ts
 * const { body, trainingData } = await trainBodyFromLog({ store, ownProject: (id) => service.ownProject(principal, id) }, {
 *   model: 'svc-small', task_type: 'binary-classification', label_text: 'billing question', finetune: false,
 *   from_log: { project_id: 'proj_0123456789ab', model: 'provider-a:gpt-4o-mini', label: { regex: '^(yes|no)\\b', flags: 'i' } },
 * });
 * trainingData; // { source: 'request_log', texts: 120, labelled: 100, held_out: 20, skipped: 15, skipped_samples: [...], teacher: {...} }
 * (body.examples as unknown[]).length; // 80
 * ```
 */
export async function trainBodyFromLog(deps: LogTrainingDeps, body: unknown): Promise<LogTrainingBody> {
  const request = parseRequest(logTrainRequestSchema, body);
  const task: TeacherTask = logTask(request);
  // The rule and the text pointer are checked before the project is looked up or a row read.
  labelReader(request.from_log.label, task, 'from_log.label');
  if (request.from_log.text_pointer !== undefined) pointerTokens(request.from_log.text_pointer, 'from_log.text_pointer');
  await deps.ownProject(request.from_log.project_id);
  const read = await readLog(deps, request, task);
  if (read.labelled.size === 0) throw nothingUsable(request, read);
  const { train, held } = holdOut([...read.labelled.values()], request.holdout ?? kDefaultHoldout, task);
  const trainBody: Record<string, unknown> = {
    model: request.model,
    ...(request.model_id === undefined ? {} : { model_id: request.model_id }),
    task_type: request.task_type,
    examples: train.map((example) => trainExample(example, request)),
    ...(held.length === 0 ? {} : { validation: held.map((example) => trainExample(example, request)) }),
    ...(request.finetune === undefined ? {} : { finetune: request.finetune }),
    ...(request.truncate === undefined ? {} : { truncate: request.truncate }),
    ...(request.num_iterations === undefined ? {} : { num_iterations: request.num_iterations }),
  };
  const skipped = read.rows - read.calls;
  try {
    validateTrainRequest(trainBody);
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    const from = `From the request log: ${read.labelled.size} labelled texts of ${read.rows} calls (${skipped} skipped), ${train.length} to train on`;
    throw new SvcError('invalid_request', `${from}: ${error.message}`, { param: 'from_log' });
  }
  const trainingData: TrainingData = {
    source: 'request_log',
    texts: read.rows,
    labelled: read.labelled.size,
    held_out: held.length,
    skipped,
    ...(read.skipped.length === 0 ? {} : { skipped_samples: read.skipped }),
    teacher: {
      model: request.from_log.model ?? [...read.models].sort().join(', '),
      project_id: request.from_log.project_id,
      calls: read.calls,
      tokens_in: read.tokensIn,
      tokens_out: read.tokensOut,
      ms_per_text: read.calls === 0 ? null : Math.round((read.totalMs / read.calls) * 1000) / 1000,
      ...(read.stopped === undefined ? {} : { stopped: read.stopped }),
    },
  };
  return { body: trainBody, trainingData };
}
