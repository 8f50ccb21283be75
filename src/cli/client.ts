// Client commands: they talk to a running service over HTTP (--url / SVC_URL, --key / SVC_KEY).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';

import { environment } from '../environment.js';
import { SvcError } from '../errors.js';
import { isModelFileName } from '../model/hub.js';
import type { ModelList, ModelObject, PredictResponse, ProgressObject } from '../contract/schemas.js';
import { parseModelName, type VersionList, type VersionObject } from '../contract/versions.js';
import type { EvaluationObject } from '../contract/evaluation.js';
import { kFinetuneMethods, kTaskTypes } from '../contract/train-request.js';
import type { FinetuneMethod, TaskType } from '../contract/train-request.js';
import { readTrainFile, type TrainFile } from './examples-file.js';
import { teacherTrainBody } from './teacher-train.js';
import { logTrainBody } from './log-train.js';
import { modelsTable } from './models-table.js';
import { fetchService } from './fetch-error.js';

const kDefaultUrl = 'http://127.0.0.1:8080';
// Twice a second: a progress line moves often enough, and `svc serve`'s request log is not flooded.
const kPollMs = 500;
export const kConnection = { url: { type: 'string' }, key: { type: 'string' } } as const;

export interface Connection {
  url: string;
  key: string;
}

export function connection(values: { url?: string; key?: string }): Connection {
  const env = environment();
  const key = values.key ?? env.apiKey;
  if (key === undefined || key.length === 0) throw new SvcError('authentication', 'no API key: pass --key or set SVC_KEY');
  return { url: (values.url ?? env.serviceUrl ?? kDefaultUrl).replace(/\/+$/, ''), key };
}

/** One call; a non-2xx answer throws with the service's error message. */
export async function call<T>(conn: Connection, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetchService(conn.url + path, {
    method,
    headers: { authorization: `Bearer ${conn.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw serviceError(response.status, text);
  return JSON.parse(text) as T;
}

/** The service's error body as an SvcError with the same code and param (`500: ...` when the body is not ours). */
function serviceError(status: number, text: string): SvcError {
  try {
    const { error } = JSON.parse(text) as { error: { message: string; code: string | null; param: string | null } };
    const code = (error.code ?? 'internal') as ConstructorParameters<typeof SvcError>[0];
    return new SvcError(code, `${status}: ${error.message}`, error.param === null ? {} : { param: error.param });
  } catch {
    return new SvcError('internal', `${status}: ${text}`);
  }
}

/** A progress line: the stage, and while a teacher labels, the tokens its calls spent so far. */
type Progress = Pick<ProgressObject, 'status' | 'stage' | 'done' | 'total' | 'loss'> & { tokens?: number };

/** `[##########----------] finetune 25/50 loss 0.1234`, redrawn in place on a terminal, a line per new step elsewhere. */
function progressReporter(stream: NodeJS.WriteStream): (p: Progress) => void {
  let lastStep: string | null = null;
  return (p) => {
    if (p.stage === null) return;
    const fraction = p.total > 0 ? p.done / p.total : 0;
    const filled = Math.round(fraction * 20);
    const loss = typeof p.loss === 'number' ? ` loss ${p.loss.toFixed(4)}` : p.tokens === undefined ? '' : ` ${p.tokens} tokens`;
    const line = `[${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${p.stage} ${p.done}/${p.total}${loss}`;
    if (stream.isTTY) stream.write(`\r${line}`);
    else if (`${p.stage} ${p.done}` !== lastStep) stream.write(`${line}\n`);
    lastStep = `${p.stage} ${p.done}`;
  };
}

export const kTrainUsage =
  'usage: svc train --examples file.jsonl|csv|json [--label-text "..."] [--task-type <type>] [--balanced] [--model svc-small] [--frozen | --finetune adapter|full [--rank N]] [--num-iterations N] [--truncate <mode>] [--wait]';

/** The train command's flags that may override a body file's fields; absent ones are undefined. */
export interface TrainFlags {
  model?: string;
  balanced?: boolean;
  frozen?: boolean;
  finetune?: string;
  rank?: string;
  'num-iterations'?: string;
  truncate?: string;
}

/** A wrong command line: exit 2 with this reason and the usage line (see `usageProblem` in commands.ts). */
function usage(reason: string): RangeError {
  return new RangeError(`${reason}\n${kTrainUsage}`);
}

/** Checks the flags that need no file; the reason names the flag. */
function checkTrainFlags(values: TrainFlags & { examples?: string; 'task-type'?: string }): void {
  if (values.examples === undefined) throw usage('--examples <file> is required');
  const taskType = values['task-type'];
  if (taskType !== undefined && !kTaskTypes.includes(taskType as TaskType)) {
    throw usage(`--task-type must be one of ${kTaskTypes.join(', ')}; got '${taskType}'`);
  }
  const iterations = values['num-iterations'];
  if (iterations !== undefined && !/^[1-9]\d*$/.test(iterations))
    throw usage(`--num-iterations must be a positive integer; got '${iterations}'`);
  if (values.finetune !== undefined && !kFinetuneMethods.includes(values.finetune as FinetuneMethod)) {
    throw usage(`--finetune must be ${kFinetuneMethods.join(' or ')}; got '${values.finetune}'`);
  }
  if (values.finetune !== undefined && values.frozen) throw usage('--frozen and --finetune contradict each other: pick one');
  if (values.rank !== undefined && values.finetune !== 'adapter') throw usage("--rank is the adapter's rank: it needs --finetune adapter");
  if (values.rank !== undefined && !/^[1-9]\d*$/.test(values.rank)) throw usage(`--rank must be a positive integer; got '${values.rank}'`);
}

/**
 * The `POST /v2/train` body: the file's fields (a body file keeps its model, finetune, num_iterations, class_weight
 * and validation), each overridden by the flag that sets it.
 *
 * @example
 * ```ts
 * trainBody({ taskType: 'binary-classification', examples, fields: { finetune: false, num_iterations: 5 } }, { 'num-iterations': '8' });
 * // { model: 'svc-small', task_type: 'binary-classification', examples, finetune: false, num_iterations: 8 }
 * ```
 */
export function trainBody(file: TrainFile, flags: TrainFlags): Record<string, unknown> {
  if (flags.balanced && file.taskType === 'binary-classification') {
    throw usage('--balanced weighs classes of a multi-class or multi-label model; this one is binary-classification');
  }
  const finetune =
    flags.finetune !== undefined
      ? { method: flags.finetune, ...(flags.rank === undefined ? {} : { rank: Number(flags.rank) }) }
      : flags.frozen
        ? false
        : file.fields.finetune;
  const body: Record<string, unknown> = {
    ...file.fields,
    model: flags.model ?? file.fields.model ?? 'svc-small',
    task_type: file.taskType,
    examples: file.examples,
    ...(file.validation === undefined ? {} : { validation: file.validation }),
    finetune,
    class_weight: flags.balanced ? 'balanced' : file.fields.class_weight,
    num_iterations: flags['num-iterations'] === undefined ? file.fields.num_iterations : Number(flags['num-iterations']),
    truncate: flags.truncate ?? file.fields.truncate,
  };
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

/**
 * `svc train --examples file.jsonl|csv|json [--label-text "..."] [--task-type <type>] [--balanced]
 * [--model svc-small] [--frozen | --finetune adapter|full [--rank N]] [--num-iterations N] [--truncate <mode>] [--wait]`: prints the
 * model object. `--truncate` says how examples past 256 tokens are read (end, start, none, chunks).
 * `--task-type` is binary-classification (default), multi-class-classification or
 * multi-label-classification; `--balanced` sends class_weight 'balanced' (not for binary);
 * `--frozen` skips fine-tuning the encoder; `--finetune adapter` trains a LoRA adapter (`--rank`, default 8)
 * instead of the whole encoder, `--finetune full` the whole encoder; `--num-iterations` sets its pair rounds per
 * example (default 20). A `POST /v2/train` body file sends its own fields too (task_type, finetune, validation...);
 * each flag overrides the field it sets.
 */
export async function trainCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      ...kConnection,
      examples: { type: 'string' },
      'label-text': { type: 'string' },
      model: { type: 'string' },
      frozen: { type: 'boolean' },
      finetune: { type: 'string' },
      rank: { type: 'string' },
      'num-iterations': { type: 'string' },
      'task-type': { type: 'string' },
      balanced: { type: 'boolean' },
      truncate: { type: 'string' },
      'version-of': { type: 'string' },
      wait: { type: 'boolean', default: false },
      // A teacher labels the texts instead (cli/teacher-train.ts).
      teacher: { type: 'string' },
      project: { type: 'string' },
      texts: { type: 'string' },
      labels: { type: 'string' },
      instructions: { type: 'string' },
      'texts-per-call': { type: 'string' },
      budget: { type: 'string' },
      // The project's logged calls are the examples instead (cli/log-train.ts).
      'from-log': { type: 'boolean', default: false },
      since: { type: 'string' },
      until: { type: 'string' },
      'log-model': { type: 'string' },
      'text-pointer': { type: 'string' },
      'label-pointer': { type: 'string' },
      'label-regex': { type: 'string' },
      'label-flags': { type: 'string' },
      'label-words': { type: 'string' },
      holdout: { type: 'string' },
    },
  });
  const conn = connection(values);
  let body: Record<string, unknown>;
  if (values['from-log']) body = logTrainBody(values);
  else if (values.teacher !== undefined) body = await teacherTrainBody(values);
  else {
    checkTrainFlags(values);
    const file = await readTrainFile(values.examples as string, values['label-text'], values['task-type'] as TaskType | undefined);
    // --version-of: the body's model_id, the next version of that classifier (not live until `svc models promote`),
    // printed as the model object `<id>@<n>`.
    const versionOf = values['version-of'];
    body = { ...trainBody(file, values), ...(versionOf === undefined ? {} : { model_id: versionOf }) };
  }
  let model = await call<ModelObject>(conn, 'POST', '/v2/train', body);
  if (values.wait) {
    const report = progressReporter(process.stderr);
    while (model.status === 'training') {
      await new Promise((r) => setTimeout(r, kPollMs));
      const progress = await call<ProgressObject>(conn, 'GET', `/v2/models/${model.id}/progress`);
      // While a teacher labels, the tokens spent so far are on the model object.
      const spent =
        progress.stage === 'labelling'
          ? (await call<ModelObject>(conn, 'GET', `/v2/models/${model.id}`)).training_data?.teacher
          : undefined;
      report(spent === undefined ? progress : { ...progress, tokens: spent.tokens_in + spent.tokens_out });
      if (progress.status !== 'training') model = await call<ModelObject>(conn, 'GET', `/v2/models/${model.id}`);
    }
    const bar = model.status === 'trained' ? '#'.repeat(20) : '-'.repeat(20);
    process.stderr.write(`${process.stderr.isTTY ? '\r' : ''}[${bar}] ${model.status}\n`);
  }
  console.log(JSON.stringify(model, null, 2));
  return model.status === 'failed' ? 1 : 0;
}

/**
 * `--threshold 0.3` (every label) or `--threshold billing=0.3,refund=0.6` (per label) as the request's `threshold`.
 * The service says what is wrong with a value that is not a number from 0 to 1.
 */
export function thresholdOption(value: string): number | Record<string, number> {
  if (!value.includes('=')) return Number(value);
  return Object.fromEntries(
    value.split(',').map((pair) => {
      const at = pair.lastIndexOf('=');
      return [pair.slice(0, at).trim(), Number(pair.slice(at + 1))];
    }),
  );
}

/** `svc predict --model <id> [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...`: prints the predict response. */
export async function predictCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...kConnection,
      model: { type: 'string' },
      threshold: { type: 'string' },
      truncate: { type: 'string' },
      explain: { type: 'string' },
    },
    allowPositionals: true,
  });
  const predictUsage = 'usage: svc predict --model <id> [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...';
  if (values.model === undefined) throw new RangeError(`--model <id> is required (the id svc train printed)\n${predictUsage}`);
  if (positionals.length === 0) throw new RangeError(`no texts to classify: give them after the flags\n${predictUsage}`);
  const body: Record<string, unknown> = { model: values.model, inputs: positionals };
  if (values.threshold !== undefined) body.threshold = thresholdOption(values.threshold);
  if (values.truncate !== undefined) body.truncate = values.truncate;
  // The service says what is wrong with a k that is not a whole number ('explain must be an integer').
  if (values.explain !== undefined) body.explain = Number(values.explain);
  const result = await call<PredictResponse>(connection(values), 'POST', '/v2/predict', body);
  console.log(JSON.stringify(result, null, 2));
  return 0;
}

const kClassifyUsage =
  'usage: svc classify (--examples <file> | --labels <a,b,...> | --label-text <text>) [--task-type <type>] [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...';

/**
 * `svc classify --examples <file> "text" ...`: prints `/v2/classify`'s answer, the texts labelled by the file's
 * examples with no model trained; with `--labels` (multi-class, or `--task-type multi-label-classification`) or
 * `--label-text` (binary) and no file, zero-shot from the names.
 */
export async function classifyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...kConnection,
      examples: { type: 'string' },
      labels: { type: 'string' },
      'label-text': { type: 'string' },
      'task-type': { type: 'string' },
      model: { type: 'string' },
      threshold: { type: 'string' },
      truncate: { type: 'string' },
      explain: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length === 0) throw new RangeError(`no texts to classify: give them after the flags\n${kClassifyUsage}`);
  const taskType = values['task-type'] as TaskType | undefined;
  let body: Record<string, unknown>;
  if (values.examples !== undefined) {
    const file = await readTrainFile(values.examples, values['label-text'], taskType);
    body = { task_type: file.taskType, examples: file.examples };
  } else if (values.labels !== undefined) {
    body = {
      task_type: taskType ?? 'multi-class-classification',
      examples: [],
      labels: values.labels.split(',').map((label) => label.trim()),
    };
  } else if (values['label-text'] !== undefined) {
    body = { task_type: taskType ?? 'binary-classification', examples: [], label_text: values['label-text'] };
  } else {
    throw new RangeError(`--examples <file>, --labels or --label-text is required\n${kClassifyUsage}`);
  }
  body = { model: values.model ?? 'svc-small', ...body, inputs: positionals };
  if (values.threshold !== undefined) body.threshold = thresholdOption(values.threshold);
  if (values.truncate !== undefined) body.truncate = values.truncate;
  // The service says what is wrong with a k that is not a whole number ('explain must be an integer').
  if (values.explain !== undefined) body.explain = Number(values.explain);
  console.log(JSON.stringify(await call<unknown>(connection(values), 'POST', '/v2/classify', body), null, 2));
  return 0;
}

const kModelsOptions = { ...kConnection, json: { type: 'boolean' } } as const;
const kModelsUsage =
  'usage: svc models list | svc models show <id>[@<n>] | svc models versions <id> | svc models promote <id> <n> | svc models evaluation <id>[@<n>] | svc models delete <id>[@<n>]';

/**
 * `svc models list` prints a table of the models (id, status, task, label_text or labels; `--json`: the service's
 * answer as it is); `svc models show <id>` one model object, with its
 * labels and metrics (cross-validated accuracy and macro-F1 with the encoder they were measured on,
 * validation figures when sent), `<id>@<n>` one version's; `svc models versions <id>` the versions of a
 * classifier; `svc models promote <id> <n>` makes version n live (an older one rolls back);
 * `svc models evaluation <id>[@<n>]` prints the live version's (or version n's) evaluation report;
 * `svc models delete <id>` deletes a model with every version and hub copy, `<id>@<n>` only version n.
 */
export async function modelsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: kModelsOptions, allowPositionals: true });
  const [action, id, version] = positionals;
  const arity: Record<string, number> = { list: 1, show: 2, versions: 2, promote: 3, evaluation: 2, delete: 2 };
  const named = action === undefined ? undefined : parseModelName(id ?? '');
  if (action === undefined || arity[action] !== positionals.length || (id !== undefined && named === null)) {
    console.error(kModelsUsage);
    return 2;
  }
  const conn = connection(values);
  const path = `/v2/models/${encodeURIComponent(named?.id ?? '')}`;
  let answer: unknown;
  if (action === 'list' && values.json !== true) {
    process.stdout.write(modelsTable(await call<ModelList>(conn, 'GET', '/v2/models')));
    return 0;
  }
  if (action === 'list') answer = await call<ModelList>(conn, 'GET', '/v2/models');
  else if (action === 'show') answer = await call<ModelObject>(conn, 'GET', `/v2/models/${encodeURIComponent(id)}`);
  else if (action === 'versions') answer = await call<VersionList>(conn, 'GET', `${path}/versions`);
  else if (action === 'promote') answer = await call<VersionObject>(conn, 'POST', `${path}/promote`, { version: Number(version) });
  else if (action === 'evaluation') {
    answer = await call<EvaluationObject>(conn, 'GET', `${path}/evaluation${named?.version == null ? '' : `?version=${named.version}`}`);
  } else answer = await deleteModel(conn, path, named!);
  console.log(JSON.stringify(answer, null, 2));
  return 0;
}

/** `svc models delete <id>[@<n>]`; version 1 is the model itself, so its refusal names the command that deletes that. */
async function deleteModel(conn: Connection, path: string, named: { id: string; version: number | null }): Promise<unknown> {
  if (named.version === null) return call<unknown>(conn, 'DELETE', path);
  try {
    return await call<unknown>(conn, 'DELETE', `${path}/versions/${named.version}`);
  } catch (error) {
    if (!(error instanceof SvcError && error.code === 'conflict' && named.version === 1)) throw error;
    throw new SvcError(
      'conflict',
      `409: version 1 holds the model '${named.id}' itself; delete the model with 'svc models delete ${named.id}', which removes all its versions`,
      { param: 'version', cause: error },
    );
  }
}

/** `svc pull <org>/<model_id> [--dir <dir>]`: downloads a model directory from the service's hub. */
export async function pullCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...kConnection, dir: { type: 'string' } },
    allowPositionals: true,
  });
  const [hubId] = positionals;
  const pullUsage = 'usage: svc pull <org>/<model_id> [--dir <dir>]';
  if (hubId === undefined) throw new RangeError(`which model? name it as <org>/<model_id>\n${pullUsage}`);
  if (positionals.length !== 1) throw new RangeError(`one model at a time; got ${positionals.length}\n${pullUsage}`);
  if (!/^[^/]+\/[^/]+$/.test(hubId)) {
    throw new RangeError(`'${hubId}' is not <org>/<model_id> (the hub id, e.g. acme/svc-small-5b8257b3efa7)\n${pullUsage}`);
  }
  const conn = connection(values);
  const dir = resolve(values.dir ?? hubId.split('/')[1]);
  const info = await call<{ siblings: { rfilename: string }[] }>(conn, 'GET', `/hub/api/models/${hubId}`);
  // Check every name before writing any: a hostile hub must not place a file outside --dir.
  const names = pulledFileNames(info, dir);
  for (const rfilename of names) {
    const response = await fetch(`${conn.url}/hub/${hubId}/resolve/main/${rfilename}`, {
      headers: { authorization: `Bearer ${conn.key}` },
    });
    if (!response.ok) throw serviceError(response.status, `could not download ${rfilename}`);
    const target = resolve(dir, ...rfilename.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, new Uint8Array(await response.arrayBuffer()));
  }
  console.log(dir);
  return 0;
}

/** The hub's file list, each name a plain relative path that stays inside `dir`; anything else throws. */
function pulledFileNames(info: unknown, dir: string): string[] {
  const siblings = (info as { siblings?: unknown })?.siblings;
  if (!Array.isArray(siblings)) throw new Error('the hub answered without a file list (siblings)');
  return siblings.map((sibling: unknown) => {
    const name = (sibling as { rfilename?: unknown })?.rfilename;
    const target = typeof name === 'string' ? resolve(dir, ...name.split('/')) : '';
    if (typeof name !== 'string' || !isModelFileName(name) || !target.startsWith(dir + sep)) {
      throw new Error(`the hub listed the file name ${JSON.stringify(name)}, which is not a plain path inside ${dir}; nothing was written`);
    }
    return name;
  });
}
