// `svc shadow set|list|remove|stats`: a project's shadow classifier for a proxied model, through the service's
// /v2/{project_id}/shadow routes (client.ts's connection: --url / SVC_URL, --key / SVC_KEY).
import { parseArgs } from 'node:util';

import { call, connection, kConnection } from './client.js';

export const kShadowUsage =
  'usage: svc shadow set --project <id> --model provider-a:<name> --classifier <id> (--label-pointer P | --label-regex R [--label-flags i] | ' +
  "--label-words 'label=w1,w2;label2=w3') [--text-pointer P]\n" +
  '       svc shadow list --project <id>\n' +
  '       svc shadow remove --project <id> --model provider-a:<name>\n' +
  '       svc shadow stats --project <id> [--window 1h|24h|7d|30d] [--model provider-a:<name>]';

const usage = (reason: string) => new RangeError(`${reason}\n${kShadowUsage}`);

export interface ShadowFlags {
  classifier?: string;
  model?: string;
  'text-pointer'?: string;
  'label-pointer'?: string;
  'label-regex'?: string;
  'label-flags'?: string;
  'label-words'?: string;
}

/**
 * The `PUT /v2/{project_id}/shadow` body the flags spell; exactly one label flag.
 *
 * @example
 * ```ts
 * shadowBody({ model: 'provider-a:gpt-4o-mini', classifier: 'svc-small-5b8257b3efa7', 'label-words': 'true=yes;false=no' });
 * // { model: 'provider-a:gpt-4o-mini', classifier: 'svc-small-5b8257b3efa7', label: { words: { true: ['yes'], false: ['no'] } } }
 * ```
 */
export function shadowBody(flags: ShadowFlags): Record<string, unknown> {
  if (flags.model === undefined) throw usage('--model <proxied model> is required');
  if (flags.classifier === undefined) throw usage('--classifier <id> is required');
  const rules = (['label-pointer', 'label-regex', 'label-words'] as const).filter((flag) => flags[flag] !== undefined);
  if (rules.length !== 1) throw usage(`give exactly one of --label-pointer, --label-regex, --label-words (got ${rules.length})`);
  if (flags['label-flags'] !== undefined && flags['label-regex'] === undefined)
    throw usage('--label-flags is only used with --label-regex');
  const label =
    flags['label-pointer'] !== undefined
      ? { pointer: flags['label-pointer'] }
      : flags['label-regex'] !== undefined
        ? { regex: flags['label-regex'], ...(flags['label-flags'] === undefined ? {} : { flags: flags['label-flags'] }) }
        : { words: labelWords(flags['label-words']!) };
  return {
    model: flags.model,
    classifier: flags.classifier,
    ...(flags['text-pointer'] === undefined ? {} : { text_pointer: flags['text-pointer'] }),
    label,
  };
}

/** `label=word,word;label=word` as a words rule (binary: the labels `true` and `false`). */
function labelWords(spec: string): Record<string, string[]> {
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

/** `svc shadow <action> --project <id> ...`: prints the service's answer as JSON. */
export async function shadowCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...kConnection,
      project: { type: 'string' },
      model: { type: 'string' },
      classifier: { type: 'string' },
      window: { type: 'string' },
      'text-pointer': { type: 'string' },
      'label-pointer': { type: 'string' },
      'label-regex': { type: 'string' },
      'label-flags': { type: 'string' },
      'label-words': { type: 'string' },
    },
    allowPositionals: true,
  });
  const [action] = positionals;
  if (positionals.length !== 1 || !['set', 'list', 'remove', 'stats'].includes(action)) {
    console.error(kShadowUsage);
    return 2;
  }
  if (values.project === undefined) throw usage('--project <id> is required');
  const path = `/v2/${encodeURIComponent(values.project)}/shadow`;
  let answer: unknown;
  if (action === 'set') {
    const body = shadowBody(values);
    answer = await call(connection(values), 'PUT', path, body);
  } else if (action === 'list') answer = await call(connection(values), 'GET', path);
  else if (action === 'remove') {
    if (values.model === undefined) throw usage('--model <proxied model> is required');
    answer = await call(connection(values), 'DELETE', `${path}?model=${encodeURIComponent(values.model)}`);
  } else {
    const query = new URLSearchParams({ window: values.window ?? '7d', ...(values.model === undefined ? {} : { model: values.model }) });
    answer = await call(connection(values), 'GET', `${path}/stats?${query}`);
  }
  console.log(JSON.stringify(answer, null, 2));
  return 0;
}
