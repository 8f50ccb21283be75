// `svc train --from-log`: the from_log body each flag sets, and the reasons a wrong command line is refused for,
// from the function and from the real `svc` command.
import { describe, expect, it } from 'vitest';

import { kLogTrainUsage, logTrainBody, parseLabelWords } from '../../src/cli/log-train.js';
import { svc } from '../_support/cli.js';

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    if (error instanceof RangeError) return error.message;
    throw error;
  }
  throw new Error('expected a RangeError');
};

describe('svc train --from-log bodies', () => {
  it('sends the project, range, model, text pointer and a regex rule, with the binary label_text', () => {
    expect(
      logTrainBody({
        project: 'proj_0123456789ab',
        'label-text': 'billing question',
        'label-regex': '^(yes|no)',
        'label-flags': 'i',
        since: '2026-11-01',
        until: '1795000000000',
        'log-model': 'provider-a:gpt-4o-mini',
        'text-pointer': '/messages/1/content',
        holdout: '0.25',
        frozen: true,
      }),
    ).toEqual({
      model: 'svc-small',
      task_type: 'binary-classification',
      label_text: 'billing question',
      holdout: 0.25,
      finetune: false,
      from_log: {
        project_id: 'proj_0123456789ab',
        since: '2026-11-01',
        until: 1_795_000_000_000,
        model: 'provider-a:gpt-4o-mini',
        text_pointer: '/messages/1/content',
        label: { regex: '^(yes|no)', flags: 'i' },
      },
    });
  });

  it('sends a pointer rule with labels, and label words as label=word,word;label=word', () => {
    expect(
      logTrainBody({
        project: 'proj_1',
        'task-type': 'multi-class-classification',
        labels: 'billing, shipping',
        'label-pointer': '/label',
        model: 'svc-base',
      }),
    ).toEqual({
      model: 'svc-base',
      task_type: 'multi-class-classification',
      labels: ['billing', 'shipping'],
      from_log: { project_id: 'proj_1', label: { pointer: '/label' } },
    });
    expect(parseLabelWords('true=yes, billing;false=no;;true=invoice')).toEqual({ true: ['yes', 'billing', 'invoice'], false: ['no'] });
    const body = logTrainBody({ project: 'proj_1', 'label-text': 'spam', 'label-words': 'true=spam;false=ham' });
    expect(body.from_log).toEqual({ project_id: 'proj_1', label: { words: { true: ['spam'], false: ['ham'] } } });
  });

  it('refuses a command line without a project, with no rule or two, without labels, or with bad words', () => {
    const line = `\n${kLogTrainUsage}`;
    expect(refusal(() => logTrainBody({ 'label-text': 'x', 'label-regex': 'x' }))).toBe(
      `--from-log needs --project <id>: the project whose request log holds the calls${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'label-text': 'x' }))).toBe(
      `--from-log needs exactly one of --label-pointer, --label-regex, --label-words (got none)${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'label-text': 'x', 'label-regex': 'x', 'label-pointer': '/a' }))).toBe(
      `--from-log needs exactly one of --label-pointer, --label-regex, --label-words (got --label-pointer and --label-regex)${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'label-text': 'x', 'label-pointer': '/a', 'label-flags': 'i' }))).toBe(
      `--label-flags is only used with --label-regex${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'label-regex': 'x' }))).toBe(
      `--from-log needs --label-text "..." (what a true label means)${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'task-type': 'multi-label-classification', 'label-regex': 'x' }))).toBe(
      `--from-log needs --labels a,b,... for multi-label-classification${line}`,
    );
    expect(refusal(() => logTrainBody({ project: 'p', 'label-text': 'x', 'label-regex': 'x', holdout: 'a fifth' }))).toBe(
      `--holdout must be a number from 0 to 0.5; got 'a fifth'${line}`,
    );
    expect(refusal(() => parseLabelWords('true yes;false=no'))).toBe(
      `--label-words has 'true yes'; write label=word,word;label=word${line}`,
    );
    expect(refusal(() => parseLabelWords(' ; '))).toBe(`--label-words names no label; write label=word,word;label=word${line}`);
  });

  it('is in svc train --help: the usage line, every flag and an example', async () => {
    const help = await svc(['train', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: svc train --examples');
    expect(help.stdout).toContain(
      '\n       svc train --from-log --project <id> (--label-text "..." | --labels <a,b,...>) (--label-pointer P',
    );
    for (const flag of [
      '--from-log',
      '--label-pointer <P>',
      '--label-regex <R>',
      '--label-words <W>',
      '--since <T>',
      '--until <T>',
      '--log-model <name>',
      '--text-pointer <P>',
      '--holdout <share>',
    ]) {
      expect(help.stdout).toMatch(new RegExp(`\\n  ${flag.replace(/[<>]/g, '.')} {2,}\\S`));
    }
    expect(help.stdout).toContain("  svc train --from-log --project proj_0123456789ab --label-text 'billing question' --label-regex");
  });

  it('prints the refusal from the real command, before it calls the service', async () => {
    const result = await svc([
      'train',
      '--from-log',
      '--label-text',
      'x',
      '--label-regex',
      'x',
      '--key',
      'svc_x',
      '--url',
      'http://127.0.0.1:9',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `svc train: --from-log needs --project <id>: the project whose request log holds the calls\n${kLogTrainUsage}\n` +
        "Run 'svc train --help' for its options and examples.\n",
    );
  });
});
