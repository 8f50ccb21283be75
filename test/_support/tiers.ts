// Which tier each test file belongs to, read from what it uses (its own text and the test/_support and fixtures/
// helpers it imports, followed through), so a new file lands in the right tier without a list to
// keep. `npm run test:unit` runs the first tier alone: no server, no database, no model training.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const kTiers = ['unit', 'service', 'training', 'e2e'] as const;
export type Tier = (typeof kTiers)[number];

// What puts a file above the unit tier. Matched against the file and every helper it imports.
const kTrainingMarkers = [
  /\btrain\(/, // the library's train()
  /\/v2\/train\b/,
  /EncoderTrainer|finetune\(|runFinetuneStage|fitAndMeasure|FinetuneTask/,
  /\bclassify\(/, // classify() fits a head per call
];
const kServiceMarkers = [
  /startServer|\.listen\(|createServer\(|\.inject\(/,
  /SqliteStore|PostgresStore|startPostgres|better-sqlite3|from 'pg'|redis/i,
  /openService|connectService|SvcService/,
  /execFile|spawn\(|fork\(/, // the CLI and child processes
];

function importedHelpers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const helpers: string[] = [];
  // The test/_support helpers and the fixtures (the fake provider is a server, whoever imports it).
  for (const match of text.matchAll(/from '(\.[^']*(?:_support|fixtures)\/[^']+)'/g)) {
    const path = resolve(dirname(file), match[1]).replace(/\.js$/, '.ts');
    if (existsSync(path)) helpers.push(path);
  }
  return helpers;
}

/** The file's text and that of every helper it reaches. */
function reachableText(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return '';
  seen.add(file);
  return [readFileSync(file, 'utf8'), ...importedHelpers(file).map((helper) => reachableText(helper, seen))].join('\n');
}

/** The tier of one test file (absolute path): e2e by folder, else by what it uses, the heaviest first. */
export function tierOf(file: string, root: string): Tier {
  const path = relative(root, file).split('\\').join('/');
  if (path.startsWith('test/e2e/')) return 'e2e';
  const text = reachableText(file);
  if (kTrainingMarkers.some((marker) => marker.test(text))) return 'training';
  if (kServiceMarkers.some((marker) => marker.test(text))) return 'service';
  return 'unit';
}

function* testFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path);
    else if (entry.name.endsWith('.test.ts')) yield path;
  }
}

/** Every test file under `root/test`, relative to `root`, by tier. */
export function filesByTier(root: string): Record<Tier, string[]> {
  const tiers: Record<Tier, string[]> = { unit: [], service: [], training: [], e2e: [] };
  for (const file of testFiles(join(root, 'test'))) tiers[tierOf(file, root)].push(relative(root, file).split('\\').join('/'));
  for (const tier of kTiers) tiers[tier].sort();
  return tiers;
}
