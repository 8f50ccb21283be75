// The work a train request asks for, bounded before its job is queued: the tokens of text the job would embed,
// estimated from characters (the tokenizer is pool work, and a request refused here must cost next to nothing).
import { SvcError } from '../errors.js';
import { estimateTextTokens, kCharsPerToken, kMaxTrainTokens } from './train-request.js';
import type { TrainRequest } from './train-request.js';

/**
 * The tokens a train request asks to embed, estimated from characters without running the tokenizer: each text of
 * the examples, validation and unlabelled texts counts `ceil(length / 4)` tokens plus its two special ones, at most
 * `readTokens` (the encoder's read, 256 for svc-small), except with `truncate: 'chunks'`, which reads it whole.
 *
 * @example
 * ```ts
 * trainRequestTokens({ ...request, unlabeled: Array(10_000).fill('x'.repeat(1550)) }, 256); // 2560000 + the examples'
 * ```
 */
export function trainRequestTokens(request: TrainRequest, readTokens: number): number {
  const read = request.truncate === 'chunks' ? Infinity : readTokens;
  const tokens = (text: string) => estimateTextTokens(text, read);
  let sum = 0;
  for (const example of request.examples) sum += tokens(example.text);
  for (const example of request.validation ?? []) sum += tokens(example.text);
  for (const text of request.unlabeled ?? []) sum += tokens(text);
  return sum;
}

/**
 * Refuses (413 `payload_too_large`) a train request that asks to embed more than {@link kMaxTrainTokens} tokens, as
 * {@link trainRequestTokens} counts them; the service checks it before the job is queued.
 *
 * @example
 * ```ts
 * checkTrainRequestWork(hugeRequest, 256);
 * // throws SvcError: The request asks to embed about 2562040 tokens of text (its examples, validation and unlabeled ...
 * ```
 */
export function checkTrainRequestWork(request: TrainRequest, readTokens: number): void {
  const tokens = trainRequestTokens(request, readTokens);
  if (tokens <= kMaxTrainTokens) return;
  const read =
    request.truncate === 'chunks'
      ? "each text whole, as truncate 'chunks' reads it"
      : `at most ${readTokens} a text, as the encoder reads it`;
  throw new SvcError(
    'payload_too_large',
    `The request asks to embed about ${tokens} tokens of text (its examples, validation and unlabeled texts, estimated at ` +
      `${kCharsPerToken} characters a token, ${read}); one training request may ask for at most ${kMaxTrainTokens}`,
  );
}
