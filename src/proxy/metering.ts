import type { Usage } from './dialects.js';

/**
 * UTF-8 bytes per token when the provider did not say: English prose runs about 4 bytes a token in the GPT and
 * Claude tokenizers, code and other scripts fewer, so this errs on the side of counting low only for prose.
 */
export const kBytesPerToken = 4;

/**
 * Tokens in `bytes` of text sent in `pieces` streamed deltas, when the provider's own count is missing: a quarter of
 * the bytes, and never fewer than the deltas (each streamed delta is at least one token).
 *
 * @example
 * ```ts
 * estimateTokens(26, 5); // 7
 * estimateTokens(26, 9); // 9
 * ```
 */
export function estimateTokens(bytes: number, pieces = 0): number {
  return Math.max(pieces, Math.ceil(bytes / kBytesPerToken));
}

/**
 * How much of a call to charge:
 * - `complete`: the answer ended as its API says it ends; the provider's usage, estimates where a count is missing.
 * - `partial`: the answer stopped early (the client went away, the stream was cut, the budget ran out); the input
 *   as reported or estimated, and the larger of the reported output and the estimate of what was streamed.
 * - `nothing`: the provider refused the call or never answered; only what it reported (usually nothing).
 */
export type Charge = 'complete' | 'partial' | 'nothing';

/**
 * Counts a proxied call's tokens: what the provider reports, and what was streamed, so that a call whose final usage
 * never arrived is still charged. The input estimate is the request body's size ({@link estimateTokens}), which the
 * budget reservation uses too.
 */
export class Meter {
  readonly inputEstimate: number;
  #reported: Usage = { tokensIn: null, tokensOut: null };
  #outputBytes = 0;
  #pieces = 0;

  constructor(requestBodyBytes: number) {
    this.inputEstimate = estimateTokens(requestBodyBytes);
  }

  get reported(): Usage {
    return this.#reported;
  }

  report(usage: Usage): void {
    this.#reported = usage;
  }

  /** One streamed delta's text. */
  addStreamed(text: string): void {
    if (text === '') return;
    this.#outputBytes += Buffer.byteLength(text);
    this.#pieces += 1;
  }

  /** Bytes of a non-streamed answer body: its size bounds its tokens when it carries no usage. */
  addBodyBytes(bytes: number): void {
    this.#outputBytes += bytes;
  }

  get outputEstimate(): number {
    return estimateTokens(this.#outputBytes, this.#pieces);
  }

  /**
   * The tokens the call has certainly used so far, as the budget counts them while it streams: the input once the
   * provider reported it (Anthropic does at the start, OpenAI only at the end), and at least one token per streamed
   * delta. A lower bound, so that a stream is cut only once its budget is surely spent; the charge at the end uses
   * the provider's counts, or the estimates.
   */
  running(): number {
    return (this.#reported.tokensIn ?? 0) + Math.max(this.#reported.tokensOut ?? 0, this.#pieces);
  }

  /** The tokens to log and charge, by how the call ended (see {@link Charge}). */
  final(charge: Charge): Usage {
    const { tokensIn, tokensOut } = this.#reported;
    if (charge === 'nothing') return this.#reported;
    if (charge === 'complete') return { tokensIn: tokensIn ?? this.inputEstimate, tokensOut: tokensOut ?? this.outputEstimate };
    return { tokensIn: tokensIn ?? this.inputEstimate, tokensOut: Math.max(tokensOut ?? 0, this.outputEstimate) };
  }
}
