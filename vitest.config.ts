import { defineConfig } from 'vitest/config';

import { kLevelSlowdown } from './test/_support/level.js';

// A run capped at a slow kernel level (`SVC_ISA=scalar`, as .ci/isa-levels does) gives every test and hook that
// much longer.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native work is CPU-bound and the machines have 2 cores: run files two at a time.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/summary-reporter.ts'],
    testTimeout: 60_000 * kLevelSlowdown,
    hookTimeout: 120_000 * kLevelSlowdown,
    // In-process servers would write a log line per request to the runner's stdout; tests that read the
    // lines ask for them.
    env: { SVC_LOG_LEVEL: 'silent' },
  },
});
