import { defineConfig } from 'vitest/config';

import { kLevelSlowdown } from './test/_support/level.js';
import { filesByTier, kTiers } from './test/_support/tiers.js';

const tiers = filesByTier(import.meta.dirname);

// A run capped at a slow kernel level (`SVC_ISA=scalar`, as .ci/isa-levels does) gives every test and hook that
// much longer.
export default defineConfig({
  test: {
    // Native work is CPU-bound and the machines have 2 cores: run files two at a time.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/summary-reporter.ts'],
    testTimeout: 60_000 * kLevelSlowdown,
    hookTimeout: 120_000 * kLevelSlowdown,
    // In-process servers would write a log line per request to the runner's stdout; tests that read the
    // lines ask for them.
    env: { SVC_LOG_LEVEL: 'silent' },
    // One project per tier (test/_support/tiers.ts says which file is in which): `npm run test:unit` is the
    // fast one, with no server, database or training; `npm test` runs it first, then the rest.
    projects: [
      ...kTiers.map((tier) => ({ extends: true as const, test: { name: tier, include: tiers[tier] } })),
      // The public types (test/types/*.test-d.ts) are checked by tsc, not run.
      {
        extends: true as const,
        test: {
          name: 'types',
          include: [],
          typecheck: { enabled: true, only: true, include: ['test/types/**/*.test-d.ts'], tsconfig: './test/types/tsconfig.json' },
        },
      },
    ],
  },
});
