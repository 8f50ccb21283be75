// What a base model's folder asks of every forward a worker runs on it: the prompt put before each
// text (as sentence-transformers applies it, so counted in the tokens a text keeps) and how the
// token vectors are pooled.
import { SvcError } from '../errors.js';
import { type BaseModelPooling, resolveBaseModel } from '../model/base-models.js';

/** `texts` with the base model's prompt before each (the same array when it has none). */
export function promptedTexts(baseModel: string, texts: readonly string[]): string[] {
  const { prompt } = resolveBaseModel(baseModel);
  return prompt === '' ? (texts as string[]) : texts.map((text) => prompt + text);
}

/** The Encoder options for the base model's 1_Pooling and Normalize modules. */
export function encoderPooling(baseModel: string): { pooling: BaseModelPooling; normalize: boolean } {
  const { pooling, normalize } = resolveBaseModel(baseModel);
  return { pooling, normalize };
}

/**
 * Pooling options for the trainer, which computes mean pooling with normalization only so far: a
 * base asking for anything else is refused here, by name, rather than fine-tuned on other
 * embeddings than it predicts with. When the trainer takes `{ pooling, normalize }`, this returns
 * them as `encoderPooling` does.
 */
export function trainerPooling(baseModel: string): Record<string, never> {
  const { pooling, normalize, name } = resolveBaseModel(baseModel);
  if (pooling !== 'mean' || !normalize) {
    throw new SvcError(
      'invalid_request',
      `base model '${name}' asks for ${pooling} pooling${normalize ? '' : ' without normalization'}; fine-tuning computes mean pooling with normalization only: train it with finetune: false`,
      { param: 'finetune' },
    );
  }
  return {};
}
