// `svc train --teacher provider-a:<name> --project <id> --texts <file>`: the train body that asks a chat model, through
// the proxy, to label the file's texts. The texts file is one text per line (.txt), JSON Lines of `{ "text": ... }`,
// or a JSON array of strings.
import { readFile } from 'node:fs/promises';

/** The flags of a teacher train command, as parseArgs gives them. */
export interface TeacherTrainFlags {
  teacher?: string;
  project?: string;
  texts?: string;
  'label-text'?: string;
  labels?: string;
  'task-type'?: string;
  instructions?: string;
  'texts-per-call'?: string;
  budget?: string;
  model?: string;
  frozen?: boolean;
}

const usage = (reason: string) =>
  new RangeError(
    `${reason}\nusage: svc train --teacher provider-a:<name> --project <id> --texts <file> (--label-text "..." | --labels a,b,...) ` +
      '[--task-type <type>] [--instructions "..."] [--texts-per-call N] [--budget N] [--frozen] [--wait]',
  );

/** The texts of a texts file: lines of a .txt, `text` fields of JSON Lines, or a JSON array of strings; blank lines skipped. */
export function parseTextsFile(content: string, name: string): string[] {
  const trimmed = content.trim();
  if (trimmed.startsWith('[')) {
    const parsed = JSON.parse(trimmed) as unknown;
    if (!Array.isArray(parsed) || parsed.some((t) => typeof t !== 'string')) throw usage(`${name} must be a JSON array of strings`);
    return parsed as string[];
  }
  const lines = trimmed.split(/\r?\n/).filter((line) => line.trim() !== '');
  if (name.endsWith('.jsonl')) {
    return lines.map((line, i) => {
      const text = (JSON.parse(line) as { text?: unknown }).text;
      if (typeof text !== 'string') throw usage(`${name} line ${i + 1} has no "text" string`);
      return text;
    });
  }
  return lines;
}

/**
 * The `POST /v2/train` body of a teacher command.
 *
 * @example
 * ```ts
 * await teacherTrainBody({ teacher: 'provider-a:gpt-4o-mini', project: 'proj_0123456789ab', texts: 'tickets.txt', 'label-text': 'billing' });
 * // { model: 'svc-small', task_type: 'binary-classification', label_text: 'billing', texts: [...],
 * //   teacher: { model: 'provider-a:gpt-4o-mini', project_id: 'proj_0123456789ab' } }
 * ```
 */
export async function teacherTrainBody(flags: TeacherTrainFlags): Promise<Record<string, unknown>> {
  if (flags.project === undefined) throw usage('--teacher needs --project <id>: the project whose proxy the teacher is called through');
  if (flags.texts === undefined) throw usage('--teacher needs --texts <file>: the texts to label');
  const taskType = flags['task-type'] ?? 'binary-classification';
  const names = taskType === 'binary-classification' ? flags['label-text'] : flags.labels;
  if (names === undefined) {
    throw usage(
      taskType === 'binary-classification'
        ? '--teacher needs --label-text "..." (what a true label means)'
        : `--teacher needs --labels a,b,... for ${taskType}`,
    );
  }
  const count = (flag: 'texts-per-call' | 'budget') => {
    const value = flags[flag];
    if (value === undefined) return undefined;
    if (!/^[1-9]\d*$/.test(value)) throw usage(`--${flag} must be a positive integer; got '${value}'`);
    return Number(value);
  };
  const textsPerCall = count('texts-per-call');
  const budget = count('budget');
  const texts = parseTextsFile(await readFile(flags.texts, 'utf8'), flags.texts);
  return {
    model: flags.model ?? 'svc-small',
    task_type: taskType,
    ...(taskType === 'binary-classification' ? { label_text: names } : { labels: names.split(',').map((label) => label.trim()) }),
    texts,
    teacher: {
      model: flags.teacher,
      project_id: flags.project,
      ...(flags.instructions === undefined ? {} : { instructions: flags.instructions }),
      ...(textsPerCall === undefined ? {} : { texts_per_call: textsPerCall }),
    },
    ...(budget === undefined ? {} : { select: { budget } }),
    ...(flags.frozen ? { finetune: false } : {}),
  };
}
