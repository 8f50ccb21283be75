// `truncate: 'none'`: which texts are longer than the base model reads, by its tokenizer alone (the pool's `fits`
// task), so that a text that does not fit is refused before any inference: predict, classify and training all ask
// this first.
import { SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';
import { runTask } from '../pool/pool.js';

/** Texts per tokenizer task: a large call is checked on every worker at once. */
const kFitsChunk = 512;

/**
 * The index of the first text the encoder of `baseModel` would cut, or -1 when every text fits.
 *
 * @example
 * ```ts
 * await firstTooLong('svc-small', ['Short.', 'word '.repeat(400)]); // 1
 * ```
 */
export async function firstTooLong(baseModel: string, texts: readonly string[], signal?: AbortSignal): Promise<number> {
  const parts: Promise<Uint8Array>[] = [];
  for (let at = 0; at < texts.length; at += kFitsChunk) {
    parts.push(runTask<Uint8Array>({ kind: 'fits', baseModel, texts: texts.slice(at, at + kFitsChunk) }, signal));
  }
  let offset = 0;
  for (const flags of await Promise.all(parts)) {
    const first = flags.indexOf(1);
    if (first >= 0) return offset + first;
    offset += flags.length;
  }
  return -1;
}

/**
 * The 400 of `truncate: 'none'` for the text `param` names; `purpose` says what the other modes would do with it.
 *
 * @example
 * ```ts
 * tooLongError('svc-small', 'inputs[1]').message;
 * // "inputs[1] is longer than the 256 tokens svc-small reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to classify it"
 * ```
 */
export function tooLongError(baseModel: string, param: string, purpose = 'classify it'): SvcError {
  return new SvcError(
    'invalid_request',
    `${param} is longer than the ${resolveBaseModel(baseModel).maxLength} tokens ${baseModel} reads (truncate: 'none'); send truncate 'end', 'start' or 'chunks' to ${purpose}`,
    { param },
  );
}

/**
 * Refuses with {@link tooLongError} the first of `texts` that does not fit, named by `paramOf`; resolves when all fit.
 *
 * @example
 * ```ts
 * await refuseTooLong('svc-small', inputs, (t) => `inputs[${t}]`); // throws SvcError('invalid_request') naming inputs[t]
 * ```
 */
export async function refuseTooLong(
  baseModel: string,
  texts: readonly string[],
  paramOf: (t: number) => string,
  signal?: AbortSignal,
): Promise<void> {
  const first = await firstTooLong(baseModel, texts, signal);
  if (first >= 0) throw tooLongError(baseModel, paramOf(first));
}
