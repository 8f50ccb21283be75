// One predict call as the batcher holds it, cut into parts as batches have room, and the pieces
// a batch is made of.
import { estimateTextTokens } from '../contract/train-request.js';
import { isMultiHead } from '../model/directory.js';
import type { Head } from '../model/directory.js';
import type { HeadTable, PredictResult } from '../pool/tasks.js';
import type { TruncationSide } from '../native/tokenizer.js';

/** Tokens kept per text by the base models. */
export const kMaxTokensPerText = 256;

/** A cheap token estimate that needs no tokenizer on the main thread (`estimateTextTokens`), capped at the truncation length. */
export function estimateTokens(text: string): number {
  return estimateTextTokens(text, kMaxTokensPerText);
}

/** One `scoreTexts` call: its texts go out in order, in as many batches as room allows, and it ends when all are back. */
export class Call {
  readonly texts: readonly string[];
  readonly tokens: Uint16Array;
  readonly head: Head;
  readonly tenant: string;
  /** An adapter model's adapter file: its texts go through it on the shared base encoder (null: the base alone). */
  adapter: string | null = null;
  /** Which tokens its texts lose when too long for the encoder: `'start'` keeps their last ones (absent: the tokenizer's default, their first). */
  truncate?: TruncationSide;
  readonly #rows: number;
  readonly #out: PredictResult;
  /** The first text not in a batch yet. */
  next = 0;
  /** Estimated tokens of the texts not in a batch yet. */
  unsentTokens = 0;
  /** Texts in a batch whose results are not back. */
  #outstanding = 0;
  #settled = false;
  deadline: NodeJS.Timeout | undefined;
  /** When the deadline passes (`performance.now()` time), Infinity without one. */
  deadlineAt = Infinity;
  readonly #resolve: (result: PredictResult) => void;
  readonly #reject: (error: unknown) => void;
  readonly #signal: AbortSignal | undefined;
  #onAbort: (() => void) | undefined;

  constructor(
    texts: readonly string[],
    head: Head,
    tenant: string,
    signal: AbortSignal | undefined,
    resolve: (r: PredictResult) => void,
    reject: (e: unknown) => void,
  ) {
    this.texts = texts;
    this.tokens = Uint16Array.from(texts, estimateTokens);
    for (const t of this.tokens) this.unsentTokens += t;
    this.head = head;
    this.tenant = tenant;
    this.#rows = headRows(head);
    this.#out = {
      probabilities: new Float32Array(texts.length * this.#rows),
      truncated: new Uint8Array(texts.length),
      unknownShare: new Float64Array(texts.length),
    };
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  get unsent(): number {
    return this.texts.length - this.next;
  }

  /** Texts `from`..`to` went out in a batch. */
  sent(from: number, to: number, tokens: number): void {
    this.#outstanding += to - from;
    this.unsentTokens -= tokens;
    // Every part has started: the deadline bounded the wait, not the work.
    if (this.unsent === 0) clearTimeout(this.deadline);
  }

  onAbort(listener: () => void): void {
    this.#onAbort = listener;
    this.#signal?.addEventListener('abort', listener, { once: true });
  }

  /** A batch brought back the results of texts `from`..`to` (ignored once the call was refused or aborted). */
  fill(from: number, to: number, probabilities: Float32Array, truncated: Uint8Array, unknownShare: Float64Array): void {
    if (this.#settled) return;
    this.#out.probabilities.set(probabilities, from * this.#rows);
    this.#out.truncated.set(truncated, from);
    this.#out.unknownShare.set(unknownShare, from);
    this.#outstanding -= to - from;
    if (this.unsent === 0 && this.#outstanding === 0) this.#settle(() => this.#resolve(this.#out));
  }

  fail(error: unknown): void {
    this.#settle(() => this.#reject(error));
  }

  #settle(action: () => void): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.deadline);
    if (this.#onAbort) this.#signal?.removeEventListener('abort', this.#onAbort);
    action();
  }
}

/** Texts `start`..`end` of one call, as they go out in a batch. */
export interface Segment {
  call: Call;
  start: number;
  end: number;
}

/**
 * Per text of a batch, 1 where its call keeps a long text's last tokens (`truncate: 'start'`). The side rides per
 * text rather than per batch, so calls cut on either side still share one engine batch.
 */
export function fromStartFlags(batch: readonly Segment[]): Uint8Array {
  const flags = new Uint8Array(batch.reduce((texts, { start, end }) => texts + end - start, 0));
  let at = 0;
  for (const { call, start, end } of batch) {
    if (call.truncate === 'start') flags.fill(1, at, at + end - start);
    at += end - start;
  }
  return flags;
}

/** Probabilities a head gives per text: 1 for a binary head, one per label otherwise. */
export function headRows(head: Head): number {
  return isMultiHead(head) ? head.biases.length : 1;
}

/** The heads of a batch, packed one after the other for the predict task. */
export function packHeads(heads: readonly Head[]): HeadTable {
  const rows = Int32Array.from(heads, headRows);
  const first = new Int32Array(heads.length);
  for (let h = 1; h < heads.length; h++) first[h] = first[h - 1] + rows[h - 1];
  const total = first[heads.length - 1] + rows[heads.length - 1];
  const dim = heads[0].weights.length / rows[0];
  const weights = new Float64Array(total * dim);
  const biases = new Float64Array(total);
  heads.forEach((head, h) => {
    weights.set(head.weights, first[h] * dim);
    if (isMultiHead(head)) biases.set(head.biases, first[h]);
    else biases[first[h]] = head.bias;
  });
  const softmax = Uint8Array.from(heads, (head) => (isMultiHead(head) && head.kind === 'softmax' ? 1 : 0));
  return { weights, biases, rows, first, softmax };
}
