// What a base model's folder asks of every forward a worker runs on it: the prompt put before each
// text (as sentence-transformers applies it, so counted in the tokens a text keeps) and how the
// token vectors are pooled.
import { SvcError } from '../errors.js';
import { resolveBaseModel } from '../model/base-models.js';

/** `texts` with the base model's prompt before each (the same array when it has none). */
export function promptedTexts(baseModel: string, texts: readonly string[]): string[] {
  const { prompt } = resolveBaseModel(baseModel);
  return prompt === '' ? (texts as string[]) : texts.map((text) => prompt + text);
}

/**
 * Pooling options for the encoder and trainer bindings, taken from the base model's 1_Pooling and
 * Normalize modules. The engine computes mean pooling with normalization today; a folder asking
 * for anything else is refused here rather than embedded wrongly, until the bindings take
 * `{ pooling, normalize }` (then this returns them, and the call sites spread it in).
 */
export function poolingOptions(baseModel: string): Record<string, never> {
  const { pooling, normalize, name } = resolveBaseModel(baseModel);
  if (pooling !== 'mean' || !normalize) {
    throw new SvcError(
      'invalid_request',
      `base model '${name}' asks for ${pooling} pooling${normalize ? '' : ' without normalization'}; this build's encoder computes mean pooling with normalization only`,
      { param: 'model' },
    );
  }
  return {};
}
