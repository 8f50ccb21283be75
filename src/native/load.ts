import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { SvcError } from '../errors.js';
import type { NativeAddon } from './binding.js';

const kAddonFile = 'svc_classify.node';
// cmake-js and node-gyp both write here.
const kBuildDirs = ['build/Release', 'build/Debug'];

/** The package root: the nearest folder above this module whose package.json is ours. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if (JSON.parse(readFileSync(manifest, 'utf8')).name === 'svc-classify') return dir;
      } catch {
        // not ours, keep walking up
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new SvcError('internal', 'svc-classify: cannot find the package root');
    dir = parent;
  }
}

let cached: NativeAddon | undefined;

/**
 * Loads the compiled addon once per thread. When it is missing the error says
 * how to build it, instead of Node's bare "Cannot find module".
 */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const root = packageRoot();
  const override = process.env.SVC_ADDON_PATH;
  const candidates = override ? [override] : kBuildDirs.map((d) => join(root, d, kAddonFile));
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new SvcError(
      'native_missing',
      `svc-classify: the native addon is not built (looked for ${candidates.join(', ')}). ` +
        `Build it with \`npm run build:native\` in ${root} (needs cmake >= 3.15 and a C++17 compiler), ` +
        'or with `npx node-gyp rebuild`.',
    );
  }
  const require = createRequire(import.meta.url);
  cached = require(found) as NativeAddon;
  return cached;
}
