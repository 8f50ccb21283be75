// Every relative link in the README and the docs leads somewhere: the file exists, and a `#fragment` names a heading
// of the file it points at, as GitHub turns headings into fragments. Pages get split and sections renamed; a reader
// who follows a link to a section that moved lands at the top of the wrong page, and nothing else would notice.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

import { describe, expect, it } from 'vitest';

import { kRepoRoot } from '../_support/cli.js';

const kPages = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...readdirSync(join(kRepoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The page without its fenced code blocks and inline code, where a `[x](y)` is an example, not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's fragment for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingFragments(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const fragments = new Set<string>();
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = text
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    fragments.add(count === 0 ? base : `${base}-${count}`);
  }
  return fragments;
}

interface Link {
  page: string;
  target: string;
}

function relativeLinks(page: string): Link[] {
  const text = prose(readFileSync(join(kRepoRoot, page), 'utf8'));
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => ({ page, target }));
}

/** What is wrong with a link, or null when it leads somewhere. */
function brokenReason({ page, target }: Link): string | null {
  const [path, fragment] = target.split('#', 2);
  const file = path === '' ? join(kRepoRoot, page) : join(kRepoRoot, dirname(page), decodeURIComponent(path));
  if (!existsSync(file)) return `${relative(kRepoRoot, file)} does not exist`;
  if (fragment === undefined || !file.endsWith('.md')) return null;
  return headingFragments(readFileSync(file, 'utf8')).has(fragment) ? null : `${relative(kRepoRoot, file)} has no heading #${fragment}`;
}

describe('links in the README and the docs', () => {
  it('turns headings into the fragments GitHub gives them', () => {
    const fragments = headingFragments(
      '# Benchmarks\n## HTTP predict\n### `auto` as the default, checked\n## Notes\n## Notes\n```\n# not a heading\n```\n',
    );
    expect([...fragments]).toEqual(['benchmarks', 'http-predict', 'auto-as-the-default-checked', 'notes', 'notes-1']);
  });

  it('finds the links of every page', () => {
    const links = kPages.flatMap(relativeLinks);
    expect(links.length).toBeGreaterThan(100);
    expect(links).toContainEqual({ page: 'docs/benchmarks.md', target: 'benchmark-history.md#accuracy' });
  });

  it('names what is wrong with a link that leads nowhere', () => {
    expect(brokenReason({ page: 'docs/benchmarks.md', target: 'benchmark-history.md#accuracy' })).toBeNull();
    expect(brokenReason({ page: 'docs/benchmarks.md', target: 'benchmark-history.md#no-such-section' })).toBe(
      'docs/benchmark-history.md has no heading #no-such-section',
    );
    expect(brokenReason({ page: 'README.md', target: 'docs/no-such-page.md' })).toBe('docs/no-such-page.md does not exist');
  });

  it.each(kPages)('%s links only to files and headings that exist', (page) => {
    const broken = relativeLinks(page)
      .map((link) => ({ target: link.target, reason: brokenReason(link) }))
      .filter((link) => link.reason !== null);
    expect(broken).toEqual([]);
  });
});
