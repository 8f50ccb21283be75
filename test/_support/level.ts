// How much slower the kernel level a run is capped at trains than the vector kernels: the portable scalar
// kernels fine-tune 6-8x slower (a 4-round fine-tune of 20 sentences: about 9 s at AVX-512, over 60 s at
// scalar). `SVC_ISA=scalar` is the only way to reach that level on x86-64 machines made in the last ten years
// (arm64 has NEON), and .ci/isa-levels runs tests under it. Test timeouts (vitest.config.ts) and the polls that
// wait for a training job to end scale with it.
export const kLevelSlowdown = process.env.SVC_ISA === 'scalar' ? 8 : 1;
