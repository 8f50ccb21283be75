// docs/cli.md against the command's own help pages: a user reading the page finds every command, and the
// classify and models options the help lists.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { kClientHelp } from '../../src/cli/help-client.js';
import { kCommandNames } from '../../src/cli/help.js';
import { kRepoRoot } from '../_support/cli.js';

const page = readFileSync(join(kRepoRoot, 'docs', 'cli.md'), 'utf8');

/** The long flags a help page's options name (`--threshold <0..1>` gives `--threshold`). */
function flagsOf(command: string): string[] {
  return kClientHelp[command].options.map(([flag]) => /--[a-z-]+/.exec(flag)![0]).filter((flag) => flag !== '--help');
}

/** The lines of the page's section under `## <title>`, up to the next one. */
function section(title: string): string {
  const start = page.indexOf(`\n## ${title}\n`);
  expect(start, `docs/cli.md has no '## ${title}' section`).toBeGreaterThan(0);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end === -1 ? undefined : end);
}

describe('docs/cli.md', () => {
  it('has a row for every command svc --help lists', () => {
    const rows = page.split('\n').filter((line) => line.startsWith('| `svc '));
    const missing = kCommandNames.filter((name) => !rows.some((row) => row.startsWith(`| \`svc ${name}`)));
    expect(missing).toEqual([]);
  });

  it("lists every option of svc classify in its section, and svc models list's --json", () => {
    const classify = section('Classify without a model');
    const connection = ['--url', '--key']; // the page's opening paragraph describes them for every client command
    expect(flagsOf('classify').filter((flag) => !connection.includes(flag) && !classify.includes(`\`${flag}`))).toEqual([]);
    expect(classify).toContain('$ svc classify --examples ');
    expect(flagsOf('models')).toContain('--json');
    expect(page).toContain('`svc models list [--json]`');
  });
});
