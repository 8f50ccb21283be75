/** The seed of every seeded draw (pairs, their order, dropout masks) when the caller gives none. */
export const kDefaultSeed = 42;

/**
 * mulberry32: a small, fast, well-mixed 32-bit PRNG. Seeded draws (training
 * pairs, few-shot splits, generated test corpora) give the same sequence on
 * every machine, which Math.random cannot.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
