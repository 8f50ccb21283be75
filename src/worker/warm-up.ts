// What a predict task spends once, timed apart from its batch so that the main thread's speed estimate counts only
// the batch (src/predict/throughput.ts): the worker starting up, the tokenizer and the encoder loading, and a warm-up
// text run through an encoder just loaded. The warm-up touches the fresh encoder's buffers before the batch does, and
// its time is the first speed sample a restarted service has.
import { performance } from 'node:perf_hooks';

import type { Encoder } from '../native/encoder.js';
import type { PredictSetup } from '../pool/tasks.js';
import { estimateTokens } from '../predict/call.js';
import { embedTexts, tokenizerFor } from './embed-texts.js';

/**
 * 63 estimated tokens of plain English: 47 ms with the vector kernels, 1.1 s at the scalar level (a shared 2-core
 * machine at load 12); long enough that the fixed cost of a batch does not dominate its time, as it does for 'hi'.
 */
export const kWarmUpText =
  'The parcel arrived two days late and the box was damaged, but everything inside was intact. ' +
  'Customer support answered within an hour, apologised for the delay and offered a refund of the shipping cost. ' +
  'I would gladly order from this shop again.';

/** Estimated tokens of {@link kWarmUpText}, counted as the batcher counts a text. */
export const kWarmUpTokens = estimateTokens(kWarmUpText);

/** Times one warm-up text through `encoder` (just loaded), with `baseModel`'s tokenizer. */
function warmUp(baseModel: string, encoder: Encoder): { tokens: number; ms: number } {
  const started = performance.now();
  embedTexts(baseModel, encoder, [kWarmUpText]);
  return { tokens: kWarmUpTokens, ms: performance.now() - started };
}

// This worker's first predict task may have waited for the worker to start (its thread, the addon, its modules).
let firstTask = true;

/**
 * The predicting encoder `load` gives (loading it, and `baseModel`'s tokenizer, when this worker has not yet), and
 * what that cost once: null when nothing was done once. `loads` counts this worker's encoder loads.
 */
export function withSetup(baseModel: string, loads: () => number, load: () => Encoder): { encoder: Encoder; setup: PredictSetup | null } {
  const reachedAt = firstTask ? performance.timeOrigin + performance.now() : null;
  firstTask = false;
  const started = performance.now();
  const before = loads();
  tokenizerFor(baseModel);
  const encoder = load();
  const loaded = loads() !== before;
  const warm = loaded ? warmUp(baseModel, encoder) : null;
  if (reachedAt === null && !loaded) return { encoder, setup: null };
  return { encoder, setup: { reachedAt, ms: performance.now() - started, warmUp: warm } };
}
