// Public exports of svc-classify. Everything a user imports is listed here.
export { SvcError } from './errors.js';
export type { SvcErrorCode } from './errors.js';
export { cpuInfo } from './native/index.js';
export type { NativeCpuInfo } from './native/index.js';
export { Encoder } from './native/encoder.js';
export type { EncoderOptions, EncoderPrecision } from './native/encoder.js';
export { Tokenizer } from './native/tokenizer.js';
export type { EncodedBatch, EncodeBatchOptions, EncodeOptions, TokenizerFileOptions } from './native/tokenizer.js';
