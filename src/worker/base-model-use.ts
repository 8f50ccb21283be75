// What a base model's folder asks of every forward a worker runs on it: the prompt put before each
// text (as sentence-transformers applies it, so counted in the tokens a text keeps) and how the
// token vectors are pooled.
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
 * What every Encoder on the base model, or on a fine-tuned copy of it, is opened with: its pooling and its
 * `max_seq_length` (a copy's weights file alone would get a bare folder's 256 tokens).
 */
export function baseEncoderOptions(baseModel: string): { pooling: BaseModelPooling; normalize: boolean; maxLength: number } {
  const { pooling, normalize, maxLength } = resolveBaseModel(baseModel);
  return { pooling, normalize, maxLength };
}
