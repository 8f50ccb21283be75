// Embeddings of texts through the predict batcher, for classify and for predict's chunks and explain:
// the texts wait in the same per-organization lines, pass the same admission (429/503) and share
// the same engine batches as predict calls. The batcher scores texts with a head; an identity head with sigmoid rows (one row
// per embedding dimension, weight 1 on its own dimension) hands back sigmoid(e), which is inverted
// here. Embedding components are within [-1, 1] (the vectors are L2-normalized), where the float32
// round trip keeps them to about 3e-7: far below what changes a fitted head's answer.
import type { MultiHead } from '../model/directory.js';
import { resolveBaseModel } from '../model/base-models.js';
import { checkAdmission, scoreTexts } from './batcher.js';
import type { TruncateMode } from '../contract/long-texts.js';
import { estimateTextTokens } from '../contract/train-request.js';
import type { TruncationSide } from '../native/tokenizer.js';
import { refuseTooLong } from './texts-fit.js';

/** Words per window when a long text is read in chunks (about 200 WordPiece tokens of English, under the 256 read). */
export const kChunkWords = 160;
/** Words two neighbouring windows share, so that no sentence is only ever seen cut in two. */
export const kChunkOverlapWords = 32;
/** Characters a word (with its space) of English, for estimating windows from a length. */
const kCharsPerWord = 6;

const identityHeads = new Map<number, MultiHead>();

function identityHead(dim: number): MultiHead {
  let head = identityHeads.get(dim);
  if (head === undefined) {
    const weights = new Float64Array(dim * dim);
    for (let j = 0; j < dim; j++) weights[j * dim + j] = 1;
    head = { kind: 'one-vs-rest', weights, biases: new Float64Array(dim) };
    identityHeads.set(dim, head);
  }
  return head;
}

/** What a text becomes before it is embedded: one window, or several whose embeddings are averaged. */
export interface Windows {
  /** Each text's windows, in order. */
  windows: string[][];
}

/**
 * Windows of each text for a truncate mode. `end`, `start` and `none` send the text whole (the
 * tokenizer keeps its first 256 tokens, or with `start` its last ones; `none` has refused a text that
 * does not fit before this); `chunks` cuts it into windows of {@link kChunkWords} words, overlapping by
 * {@link kChunkOverlapWords}. A window is the stretch of the text from its first word to its last (the
 * whitespace between them as the text has it, which the tokenizer reads as it reads one space): no word
 * is copied, so a call of megabytes is windowed in one pass over its characters. Chunks stay windows of
 * words: a window of a text without spaces (Chinese, Japanese, Thai) is the whole text, cut by the tokenizer.
 */
export function windowsOf(texts: readonly string[], mode: TruncateMode): Windows {
  const windows: string[][] = [];
  const stride = kChunkWords - kChunkOverlapWords;
  for (const text of texts) {
    const words = mode === 'chunks' ? wordBounds(text) : null;
    const count = words === null ? 0 : words.length / 2;
    if (words === null || count <= kChunkWords) {
      windows.push([text]);
    } else {
      const parts: string[] = [];
      for (let start = 0; ; start += stride) {
        const last = Math.min(count, start + kChunkWords) - 1;
        parts.push(text.slice(words[2 * start], words[2 * last + 1]));
        if (start + kChunkWords >= count) break;
      }
      windows.push(parts);
    }
  }
  return { windows };
}

/** What a regular expression's `\\s` matches, as char codes. */
function isSpace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  if (code < 0x85) return false;
  return (
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** Where each whitespace-separated word of `text` starts and ends: [start0, end0, start1, end1, ...]. */
function wordBounds(text: string): Int32Array {
  let bounds = new Int32Array(64);
  let count = 0;
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const space = i === text.length || isSpace(text.charCodeAt(i));
    if (start < 0) {
      if (!space) start = i;
      continue;
    }
    if (!space) continue;
    if (count + 2 > bounds.length) {
      const grown = new Int32Array(bounds.length * 2);
      grown.set(bounds);
      bounds = grown;
    }
    bounds[count++] = start;
    bounds[count++] = i;
    start = -1;
  }
  return bounds.subarray(0, count);
}

/**
 * A cheap estimate of what `chunks` will send for `texts`, from their lengths alone (`estimateTextTokens`, and six
 * characters a word): so a call that asks for more than the service could answer is refused before any text is
 * windowed. Overlapping windows read their shared words twice.
 */
export function estimateChunks(texts: readonly string[]): { windows: number; tokens: number } {
  let windows = 0;
  let tokens = 0;
  const stride = kChunkWords - kChunkOverlapWords;
  for (const text of texts) {
    const parts = Math.max(1, Math.ceil((text.length - kChunkWords * kCharsPerWord) / (stride * kCharsPerWord)) + 1);
    windows += parts;
    tokens += Math.ceil((estimateTextTokens(text) * kChunkWords) / stride) + 2 * parts;
  }
  return { windows, tokens };
}

/**
 * Whose call it is, its signal, a trained model's own encoder file (its weights or adapter; absent: the base encoder),
 * and which tokens a text too long for the encoder loses (default `'end'`: its last ones).
 */
export interface EmbedOptions {
  tenant?: string;
  signal?: AbortSignal;
  encoderFile?: string | null;
  truncate?: TruncationSide;
}

/**
 * Embeddings (n x dim, L2-normalized) of texts, which ones the encoder cut and their shares of unknown word pieces, by
 * way of the predict batcher.
 */
export async function embedThroughBatcher(
  baseModel: string,
  texts: readonly string[],
  options: EmbedOptions,
): Promise<{ embeddings: Float32Array; truncated: Uint8Array; unknownShare: Float64Array; dim: number }> {
  const dim = resolveBaseModel(baseModel).hiddenSize;
  const { probabilities, truncated, unknownShare } = await scoreTexts(
    baseModel,
    options.encoderFile ?? null,
    identityHead(dim),
    texts,
    options,
  );
  const embeddings = new Float32Array(probabilities.length);
  for (let i = 0; i < probabilities.length; i++) {
    const p = probabilities[i];
    embeddings[i] = Math.log(p / (1 - p));
  }
  return { embeddings, truncated, unknownShare, dim };
}

/**
 * Per text, its embedding (the mean of its windows', L2-normalized again), whether it was cut, how many windows were
 * read, and the share of the word pieces read that were unknown (the mean of its windows').
 */
export interface EmbeddedTexts {
  embeddings: Float32Array;
  truncated: boolean[];
  chunks: number[];
  unknownShare: number[];
}

/**
 * Embeds texts as `mode` says, all of their windows in one batcher call. Pooling: the mean of the
 * windows' embeddings, normalized (the encoder's own pooling over tokens, one level up). With `none`
 * the tokenizer is asked first, and a text that does not fit is refused before anything is embedded;
 * `paramOf` names the field that refusal points at, by index.
 */
export async function embedTexts(
  baseModel: string,
  texts: readonly string[],
  mode: TruncateMode,
  options: EmbedOptions & { paramOf: (index: number) => string },
): Promise<EmbeddedTexts> {
  if (mode === 'chunks') {
    const { windows, tokens } = estimateChunks(texts);
    checkAdmission(options.tenant ?? '', windows, tokens);
  }
  if (mode === 'none') await refuseTooLong(baseModel, texts, options.paramOf, options.signal);
  const { windows } = windowsOf(texts, mode);
  const {
    embeddings: rows,
    truncated: rowCut,
    unknownShare: rowUnknown,
    dim,
  } = await embedThroughBatcher(baseModel, windows.flat(), { ...options, truncate: mode === 'start' ? 'start' : 'end' });
  const embeddings = poolWindows(windows, rows, dim);
  const truncated: boolean[] = [];
  const unknownShare: number[] = [];
  let row = 0;
  for (const parts of windows) {
    let anyCut = false;
    let unknown = 0;
    for (let w = 0; w < parts.length; w++, row++) {
      anyCut ||= rowCut[row] === 1;
      unknown += rowUnknown[row];
    }
    truncated.push(anyCut);
    unknownShare.push(unknown / parts.length);
  }
  return { embeddings, truncated, chunks: windows.map((parts) => parts.length), unknownShare };
}

/**
 * One embedding per text from the embeddings of its windows (`rows`, windows x dim, in order): their
 * mean, L2-normalized again (the encoder's own mean pooling over tokens, one level up).
 */
export function poolWindows(windows: readonly (readonly string[])[], rows: Float32Array, dim: number): Float32Array {
  const embeddings = new Float32Array(windows.length * dim);
  const sum = new Float64Array(dim);
  let row = 0;
  windows.forEach((parts, t) => {
    sum.fill(0);
    for (let w = 0; w < parts.length; w++, row++) for (let j = 0; j < dim; j++) sum[j] += rows[row * dim + j];
    let norm = 0;
    for (let j = 0; j < dim; j++) norm += sum[j] * sum[j];
    norm = Math.sqrt(norm) || 1;
    for (let j = 0; j < dim; j++) embeddings[t * dim + j] = sum[j] / norm;
  });
  return embeddings;
}
