import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { environment, type EnvironmentSource } from '../environment.js';
import { SvcError } from '../errors.js';
import type { NativeAddon } from './binding.js';

const kAddonFile = 'svc_classify.node';
// cmake-js and node-gyp both write here; a local build wins over a prebuilt one, so a
// source build (after `npm rebuild --build-from-source`, or in a clone) is what runs.
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

/** What a prebuilt addon must match: the names node-gyp-build and prebuildify use. */
export interface AddonTarget {
  platform: string;
  arch: string;
  /** 'glibc' or 'musl' on Linux, '' elsewhere. */
  libc: string;
  /** The running Node.js version, e.g. '20.17.0'. */
  node: string;
}

export function currentTarget(): AddonTarget {
  let libc = '';
  if (process.platform === 'linux') {
    // The same test node-gyp-build applies when it picks a prebuild.
    libc = environment().libc ?? (existsSync('/etc/alpine-release') ? 'musl' : 'glibc');
  }
  return { platform: process.platform, arch: process.arch, libc, node: process.versions.node };
}

/** The platform folders under prebuilds/ (e.g. ['linux-x64']); none in a clone. */
export function prebuiltPlatforms(root: string): string[] {
  try {
    return readdirSync(join(root, 'prebuilds'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && readdirSync(join(root, 'prebuilds', entry.name)).some((f) => f.endsWith('.node')))
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

/** The error text when no addon fits: the platform, where it looked, and the two ways out. */
export function addonMissingMessage(root: string, target: AddonTarget, shipped: readonly string[]): string {
  const platform = `${target.platform}-${target.arch}${target.libc ? ` (${target.libc})` : ''}`;
  const looked = [...kBuildDirs.map((d) => join(root, d)), join(root, 'prebuilds', `${target.platform}-${target.arch}`)];
  const prebuilt = shipped.length ? `Prebuilt addons ship for ${shipped.join(', ')}.` : 'This copy ships no prebuilt addons.';
  return (
    `svc-classify: no native addon for ${platform} under Node.js ${target.node} ` +
    `(looked in ${looked.join(', ')}). ${prebuilt} Two ways out:\n` +
    `- Build it from source on this machine: \`npm install node-addon-api && npm rebuild svc-classify --build-from-source\` ` +
    '(needs python3, make and a C++17 compiler; in a clone of the repository, `npm run build:native`).\n' +
    `- Or install on a platform with a prebuilt addon; if node_modules was copied from another machine, ` +
    'run `npm rebuild svc-classify` here so the install step picks the addon for this one.'
  );
}

/**
 * The addon file this process should load: SVC_ADDON_PATH when set, else a local build,
 * else the prebuilt addon for this platform (found the way node-gyp-build finds it).
 */
export function resolveAddonPath(root: string, env?: EnvironmentSource): string {
  const override = environment(env).addonPath;
  if (override) {
    if (existsSync(override)) return override;
    throw new SvcError(
      'native_missing',
      `svc-classify: SVC_ADDON_PATH is set to ${override}, which does not exist. ` +
        `Point it at a built ${kAddonFile}, or unset it to use the addon installed with the package.`,
    );
  }
  const local = kBuildDirs.map((d) => join(root, d, kAddonFile)).find((p) => existsSync(p));
  if (local) return local;
  if (prebuiltPlatforms(root).length) {
    const require = createRequire(import.meta.url);
    const nodeGypBuild = require('node-gyp-build') as { path(dir: string): string };
    try {
      return nodeGypBuild.path(root);
    } catch {
      // no prebuild matches this platform: the error below says what to do
    }
  }
  throw new SvcError('native_missing', addonMissingMessage(root, currentTarget(), prebuiltPlatforms(root)));
}

let cached: NativeAddon | undefined;

/**
 * Loads the addon once per thread. When none fits, the error names the platform and
 * how to get one, instead of Node's bare "Cannot find module".
 */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const found = resolveAddonPath(packageRoot());
  const require = createRequire(import.meta.url);
  cached = require(found) as NativeAddon;
  return cached;
}
