// `npm pack` (prepack: scripts/prebuild.cjs) compiles the prebuilt addon only when nothing current is at hand: a
// prebuild newer than the native sources is kept, and the clone's own build/Release (what `npm install` built) is
// copied instead of compiled again. Run here on a copy of the native sources with the repository's built addon, so
// that nothing compiles; .ci/pack-install packs for real, cold and then again.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { kRepoRoot } from '../_support/cli.js';

let clone: string;
let prebuilt: string;
const kHourAgo = new Date(Date.now() - 3_600_000);

function setTimes(dir: string, time: Date): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) setTimes(full, time);
    else utimesSync(full, time, time);
  }
}

function prebuild(): { code: number | null; output: string } {
  const result = spawnSync(process.execPath, [join(clone, 'scripts', 'prebuild.cjs')], { cwd: clone, encoding: 'utf8' });
  return { code: result.status, output: result.stdout + result.stderr };
}

beforeAll(() => {
  clone = mkdtempSync(join(tmpdir(), 'svc-prebuild-'));
  for (const entry of ['package.json', 'CMakeLists.txt', 'binding.gyp', 'native', 'scripts']) {
    cpSync(join(kRepoRoot, entry), join(clone, entry), { recursive: true });
  }
  cpSync(join(kRepoRoot, 'node_modules', 'node-gyp-build'), join(clone, 'node_modules', 'node-gyp-build'), { recursive: true });
  setTimes(join(clone, 'native'), kHourAgo);
  for (const file of ['CMakeLists.txt', 'binding.gyp']) utimesSync(join(clone, file), kHourAgo, kHourAgo);
  mkdirSync(join(clone, 'build', 'Release'), { recursive: true });
  copyFileSync(join(kRepoRoot, 'build', 'Release', 'svc_classify.node'), join(clone, 'build', 'Release', 'svc_classify.node'));
  prebuilt = join(clone, 'prebuilds', `${process.platform}-${process.arch}`, 'svc-classify.glibc.node');
});
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe('the prebuilt addon npm pack ships', () => {
  it('is copied from the build npm install made, not compiled again, and node-gyp-build picks it', () => {
    const { code, output } = prebuild();
    expect(code).toBe(0);
    expect(output).toMatch(
      /^svc-classify prebuild: prebuilds\/linux-\w+\/svc-classify\.glibc\.node copied from build\/Release\/svc_classify\.node/,
    );
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(statSync(prebuilt).size).toBeLessThanOrEqual(statSync(join(clone, 'build', 'Release', 'svc_classify.node')).size);
    // What native/install.cjs does in a user's install: prebuilds/ only, and the file must load.
    const found = spawnSync(
      process.execPath,
      ['-e', `const f = require('node-gyp-build').path(${JSON.stringify(clone)}); require(f); console.log(f)`],
      { cwd: clone, encoding: 'utf8', env: { ...process.env, PREBUILDS_ONLY: '1' } },
    );
    expect(found.stdout.trim()).toBe(prebuilt);
  });

  it('is kept as it is while it is newer than every native source', () => {
    const before = statSync(prebuilt).mtimeMs;
    const { code, output } = prebuild();
    expect([code, output]).toEqual([
      0,
      'svc-classify prebuild: prebuilds/linux-x64/svc-classify.glibc.node is newer than the native sources: kept\n'.replace(
        'x64',
        process.arch,
      ),
    ]);
    expect(statSync(prebuilt).mtimeMs).toBe(before);
  });

  it('is replaced once a native source changed after it', () => {
    const before = statSync(prebuilt).mtimeMs;
    const later = new Date(statSync(prebuilt).mtimeMs + 10_000);
    utimesSync(join(clone, 'native', 'sources.cjs'), later, later);
    // The clone rebuilt after the change (npm run build:native): its build is the current one, and is taken.
    const rebuilt = new Date(later.getTime() + 10_000);
    utimesSync(join(clone, 'build', 'Release', 'svc_classify.node'), rebuilt, rebuilt);
    const { code, output } = prebuild();
    expect(code).toBe(0);
    expect(output).toMatch(/copied from build\/Release\/svc_classify\.node/);
    expect(statSync(prebuilt).mtimeMs).not.toBe(before); // written again
  });
});
