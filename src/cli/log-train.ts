// `svc train --from-log --project <id> (--label-pointer P | --label-regex R | --label-words '...')`: the train body whose
// examples are the project's logged chat calls (POST /v2/train with `from_log`; docs/http-api.md "Train from the
// request log"). The service checks the rule and the range; here only the command line's own shape is.

/** The flags of a from-log train command, as parseArgs gives them. */
export interface LogTrainFlags {
  project?: string;
  since?: string;
  until?: string;
  'log-model'?: string;
  'text-pointer'?: string;
  'label-pointer'?: string;
  'label-regex'?: string;
  'label-flags'?: string;
  'label-words'?: string;
  'label-text'?: string;
  labels?: string;
  'task-type'?: string;
  holdout?: string;
  model?: string;
  frozen?: boolean;
}

/** The usage line of `svc train --from-log`, as its refusals end. */
export const kLogTrainUsage =
  'usage: svc train --from-log --project <id> (--label-text "..." | --labels a,b,...) (--label-pointer P | --label-regex R ' +
  "[--label-flags i] | --label-words 'label=w1,w2;label2=w3') [--task-type <type>] [--since T] [--until T] [--log-model provider-a:<name>] " +
  '[--text-pointer P] [--holdout 0.2] [--frozen] [--wait]';

const usage = (reason: string) => new RangeError(`${reason}\n${kLogTrainUsage}`);

/**
 * Label words as `--label-words` spells them: `label=word,word;label=word` (binary: the labels `true` and `false`).
 *
 * @example
 * ```ts
 * parseLabelWords('true=yes,billing;false=no'); // { true: ['yes', 'billing'], false: ['no'] }
 * ```
 */
export function parseLabelWords(spec: string): Record<string, string[]> {
  const words: Record<string, string[]> = {};
  for (const part of spec.split(';').filter((p) => p.trim() !== '')) {
    const at = part.indexOf('=');
    const label = part.slice(0, at).trim();
    const list = part
      .slice(at + 1)
      .split(',')
      .map((word) => word.trim())
      .filter(Boolean);
    if (at < 0 || label === '' || list.length === 0) throw usage(`--label-words has '${part.trim()}'; write label=word,word;label=word`);
    words[label] = [...(words[label] ?? []), ...list];
  }
  if (Object.keys(words).length === 0) throw usage('--label-words names no label; write label=word,word;label=word');
  return words;
}

/** A moment as the flag gives it: digits are unix milliseconds, anything else an ISO-8601 string (the service checks it). */
const moment = (value: string | undefined) => (value === undefined ? undefined : /^\d+$/.test(value) ? Number(value) : value);

/**
 * The `POST /v2/train` body of a from-log command.
 *
 * @example
 * ```ts
 * logTrainBody({ project: 'proj_0123456789ab', 'label-text': 'billing question', 'label-regex': '^(yes|no)', 'label-flags': 'i',
 *   'log-model': 'provider-a:gpt-4o-mini', since: '2026-11-01', frozen: true });
 * // { model: 'svc-small', task_type: 'binary-classification', label_text: 'billing question', finetune: false,
 * //   from_log: { project_id: 'proj_0123456789ab', since: '2026-11-01', model: 'provider-a:gpt-4o-mini',
 * //               label: { regex: '^(yes|no)', flags: 'i' } } }
 * ```
 */
export function logTrainBody(flags: LogTrainFlags): Record<string, unknown> {
  if (flags.project === undefined) throw usage('--from-log needs --project <id>: the project whose request log holds the calls');
  const rules = (['label-pointer', 'label-regex', 'label-words'] as const).filter((flag) => flags[flag] !== undefined);
  if (rules.length !== 1) {
    const got = rules.length === 0 ? 'none' : rules.map((flag) => `--${flag}`).join(' and ');
    throw usage(`--from-log needs exactly one of --label-pointer, --label-regex, --label-words (got ${got})`);
  }
  if (flags['label-flags'] !== undefined && flags['label-regex'] === undefined)
    throw usage('--label-flags is only used with --label-regex');
  const taskType = flags['task-type'] ?? 'binary-classification';
  const names = taskType === 'binary-classification' ? flags['label-text'] : flags.labels;
  if (names === undefined) {
    throw usage(
      taskType === 'binary-classification'
        ? '--from-log needs --label-text "..." (what a true label means)'
        : `--from-log needs --labels a,b,... for ${taskType}`,
    );
  }
  let holdout: number | undefined;
  if (flags.holdout !== undefined) {
    holdout = Number(flags.holdout);
    if (flags.holdout.trim() === '' || !Number.isFinite(holdout))
      throw usage(`--holdout must be a number from 0 to 0.5; got '${flags.holdout}'`);
  }
  const label =
    flags['label-pointer'] !== undefined
      ? { pointer: flags['label-pointer'] }
      : flags['label-regex'] !== undefined
        ? { regex: flags['label-regex'], ...(flags['label-flags'] === undefined ? {} : { flags: flags['label-flags'] }) }
        : { words: parseLabelWords(flags['label-words']!) };
  const since = moment(flags.since);
  const until = moment(flags.until);
  return {
    model: flags.model ?? 'svc-small',
    task_type: taskType,
    ...(taskType === 'binary-classification' ? { label_text: names } : { labels: names.split(',').map((name) => name.trim()) }),
    ...(holdout === undefined ? {} : { holdout }),
    ...(flags.frozen ? { finetune: false } : {}),
    from_log: {
      project_id: flags.project,
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
      ...(flags['log-model'] === undefined ? {} : { model: flags['log-model'] }),
      ...(flags['text-pointer'] === undefined ? {} : { text_pointer: flags['text-pointer'] }),
      label,
    },
  };
}
