// svc serve --adapter-cache-mb: the pool workers' adapter cache size, in the help with its default, and a wrong
// value refused as a usage error before anything starts.
import { describe, expect, it } from 'vitest';

import { kDefaultAdapterCacheBytes } from '../../src/pool/pool.js';
import { svc } from '../_support/cli.js';

describe('svc serve --adapter-cache-mb', () => {
  it('is in the help with its default', async () => {
    const { code, stdout } = await svc(['serve', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--adapter-cache-mb <n>');
    expect(stdout).toContain(`(default ${kDefaultAdapterCacheBytes / 2 ** 20}:`);
  });

  it('refuses a value that is not a positive integer', async () => {
    expect(await svc(['serve', '--adapter-cache-mb', 'lots'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "svc serve: --adapter-cache-mb must be a positive integer, got 'lots'\nRun 'svc serve --help' for its options and examples.\n",
    });
  });
});
