// `npm run bench -- <suite> [--json] [suite options]`: runs one benchmark suite.
// Each suite is bench/<suite>.ts exporting `run(args: string[]): Promise<void>`.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const kNotSuites = new Set(['run', 'corpora']);
const suites = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
  .map((f) => f.slice(0, -3))
  // Shared helpers of suites are named _*.ts.
  .filter((name) => !name.startsWith('_') && !kNotSuites.has(name))
  .sort();

const [suite, ...args] = process.argv.slice(2);
if (!suite || !suites.includes(suite)) {
  console.error(`usage: npm run bench -- <suite> [--json]\nsuites: ${suites.join(', ')}`);
  process.exit(2);
}
const module = (await import(pathToFileURL(join(here, `${suite}.ts`)).href)) as {
  run(args: string[]): Promise<void>;
};
await module.run(args);
