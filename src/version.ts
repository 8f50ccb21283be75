import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { packageRoot } from './native/load.js';

let cached: string | undefined;

/** svc-classify's version, read once from its package.json (`svc --version`, model manifests). */
export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return cached;
}
