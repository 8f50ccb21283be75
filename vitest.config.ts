import { defineConfig } from 'vitest/config';

// The portable scalar kernels fine-tune 6-8x slower than the vector ones (a 4-round fine-tune of 20 sentences: about
// 9 s at AVX-512, over 60 s at scalar), so a run capped at that level (`SVC_ISA=scalar`, as .ci/run does) gives every test and hook that much
// longer. The cap is the only way to reach that level on x86-64 machines made in the last ten years; arm64 has NEON.
const kLevelSlowdown = process.env.SVC_ISA === 'scalar' ? 8 : 1;

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
