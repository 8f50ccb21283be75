import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { SvcError } from '../../src/index.js';
import { addonMissingMessage, currentTarget, packageRoot, prebuiltPlatforms, resolveAddonPath } from '../../src/native/load.js';

// The addon built in this checkout, copied into scratch package roots laid out as installs are.
const builtAddon = resolveAddonPath(packageRoot(), {});

describe('addon resolution', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-load-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const place = (relative: string): string => {
    const file = join(root, relative);
    mkdirSync(join(file, '..'), { recursive: true });
    copyFileSync(builtAddon, file);
    return file;
  };
  const here = `${process.platform}-${process.arch}`;

  it('finds the prebuilt addon for this platform, as prebuildify names it', () => {
    const file = place(`prebuilds/${here}/svc-classify.napi.${currentTarget().libc || 'x'}.node`);
    place('prebuilds/sunos-mips/svc-classify.napi.node');
    expect(prebuiltPlatforms(root)).toEqual([here, 'sunos-mips'].sort());
    expect(resolveAddonPath(root, {})).toBe(file);
  });

  it('prefers a local build over a prebuilt addon, and SVC_ADDON_PATH over both', () => {
    place(`prebuilds/${here}/svc-classify.napi.node`);
    const local = place('build/Release/svc_classify.node');
    expect(resolveAddonPath(root, {})).toBe(local);
    const elsewhere = place('elsewhere/svc_classify.node');
    expect(resolveAddonPath(root, { SVC_ADDON_PATH: elsewhere })).toBe(elsewhere);
  });

  it('names the platform, where it looked and the two ways out when nothing fits', () => {
    const target = { platform: 'linux', arch: 'arm64', libc: 'glibc', node: '22.11.0' };
    expect(addonMissingMessage('/app/node_modules/svc-classify', target, ['linux-x64'])).toBe(
      'svc-classify: no native addon for linux-arm64 (glibc) under Node.js 22.11.0 (looked in ' +
        '/app/node_modules/svc-classify/build/Release, /app/node_modules/svc-classify/build/Debug, ' +
        '/app/node_modules/svc-classify/prebuilds/linux-arm64). Prebuilt addons ship for linux-x64. Two ways out:\n' +
        '- Build it from source on this machine: `npm install node-addon-api && npm rebuild svc-classify --build-from-source` ' +
        '(needs python3, make and a C++17 compiler; in a clone of the repository, `npm run build:native`).\n' +
        '- Or install on a platform with a prebuilt addon; if node_modules was copied from another machine, ' +
        'run `npm rebuild svc-classify` here so the install step picks the addon for this one.',
    );
    expect(addonMissingMessage('/x', { platform: 'darwin', arch: 'arm64', libc: '', node: '20.17.0' }, [])).toContain(
      'no native addon for darwin-arm64 under Node.js 20.17.0 (looked in /x/build/Release, /x/build/Debug, ' +
        '/x/prebuilds/darwin-arm64). This copy ships no prebuilt addons. Two ways out:',
    );
  });

  it('throws that message as native_missing when only other platforms are prebuilt', () => {
    place('prebuilds/sunos-mips/svc-classify.napi.node');
    let thrown: unknown;
    try {
      resolveAddonPath(root, {});
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SvcError);
    expect((thrown as SvcError).code).toBe('native_missing');
    expect((thrown as SvcError).message).toBe(addonMissingMessage(root, currentTarget(), ['sunos-mips']));
  });
});
