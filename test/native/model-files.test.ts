// Tampered model files: each targeted tampering is refused with an SvcError naming the file and
// the tensor or field, before any buffer is sized from it (a widened attention.output.dense used
// to make the GEMM write past its buffers).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { Encoder } from '../../src/native/encoder.js';
import { Tokenizer } from '../../src/native/tokenizer.js';
import { EncoderTrainer } from '../../src/native/trainer.js';
import {
  kTiny,
  packSafetensors,
  safetensorsParts,
  tinyConfig,
  tinyTensors,
  tinyTokenizer,
  writeTinyModel,
} from '../_support/tiny-model.js';

const root = mkdtempSync(join(tmpdir(), 'svc-model-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let count = 0;
// A fresh directory holding the tiny model, then `edit` applied to it.
function model(edit: (dir: string) => void = () => {}): string {
  const dir = join(root, `m${count++}`);
  writeTinyModel(dir);
  edit(dir);
  return dir;
}

// Rewrites model.safetensors with its header object edited (the data section kept as is).
function editHeader(edit: (header: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>) => void) {
  return (dir: string) => {
    const { header, data } = safetensorsParts(tinyTensors());
    edit(header as never);
    writeFileSync(join(dir, 'model.safetensors'), packSafetensors(JSON.stringify(header), data));
  };
}

function loadError(dir: string): SvcError {
  try {
    Encoder.fromPretrained(dir, { threads: 1 }).dispose();
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe('native_error');
    return error as SvcError;
  }
  throw new Error(`${dir} loaded`);
}

const kDense = 'encoder.layer.0.attention.output.dense.weight';

describe('model files', () => {
  it('loads the untouched tiny model', () => {
    const encoder = Encoder.fromPretrained(model(), { threads: 1 });
    const out = encoder.embedSync(['hello world', 'this is a good movie']);
    expect(encoder.dim).toBe(kTiny.hidden);
    expect(out.length).toBe(2 * kTiny.hidden);
    expect(out.every(Number.isFinite)).toBe(true);
    encoder.dispose();
  });

  it('refuses a widened attention.output.dense by the config, in the encoder and the trainer', () => {
    const tensors = tinyTensors();
    const h = kTiny.hidden;
    tensors.set(kDense, { dtype: 'F32', shape: [2 * h, h], data: new Uint8Array(new Float32Array(2 * h * h).fill(0.01).buffer) });
    const dir = model((d) => {
      const { header, data } = safetensorsParts(tensors);
      writeFileSync(join(d, 'model.safetensors'), packSafetensors(JSON.stringify(header), data));
    });
    const file = join(dir, 'model.safetensors');
    const expected = `${file}: tensor '${kDense}' has shape [16, 8], the config needs [8, 8]`;
    expect(loadError(dir).message).toBe(expected);
    const train = () => EncoderTrainer.open(file, join(dir, 'config.json'), { totalSteps: 1 });
    expect(train).toThrow(SvcError);
    expect(train).toThrow(expected);
  });

  it('refuses wrong dtypes, offsets past the end, overlapping tensors and a header length beyond the file', () => {
    const cases: [(dir: string) => void, (file: string) => string][] = [
      [
        editHeader((h) => (h['embeddings.LayerNorm.weight']!.dtype = 'I32')),
        (f) => `${f}: tensor 'embeddings.LayerNorm.weight' has dtype I32 (need F32, F16 or BF16)`,
      ],
      [
        editHeader((h) => (h['embeddings.LayerNorm.weight']!.dtype = 'F8')),
        (f) => `${f}: tensor 'embeddings.LayerNorm.weight' has an unknown dtype`,
      ],
      [
        editHeader((h) => (h['embeddings.LayerNorm.weight']!.dtype = 'F16')),
        (f) => `${f}: tensor 'embeddings.LayerNorm.weight' has 32 bytes, not the [8] F16 its shape needs`,
      ],
      [
        editHeader((h) => (h[kDense]!.data_offsets = [1e6, 1e6 + 256])),
        (f) => `${f}: tensor '${kDense}' has data_offsets [1000000, 1000256) past the end of the data (4320 bytes)`,
      ],
      [
        editHeader((h) => (h['embeddings.LayerNorm.bias']!.data_offsets = h['embeddings.LayerNorm.weight']!.data_offsets)),
        (f) => `${f}: tensor 'embeddings.LayerNorm.weight' overlaps tensor 'embeddings.LayerNorm.bias'`,
      ],
      [
        editHeader((h) => (h[kDense]!.data_offsets = [-256, 0])),
        (f) => `${f}: tensor '${kDense}' has data_offsets that are not two non-negative integers`,
      ],
      [
        editHeader((h) => (h[kDense]!.data_offsets = [0.5, 256.5])),
        (f) => `${f}: tensor '${kDense}' has data_offsets that are not two non-negative integers`,
      ],
      [
        editHeader((h) => (h[kDense]!.data_offsets = [2 ** 64, 2 ** 64 + 256])),
        (f) => `${f}: tensor '${kDense}' has data_offsets that are not two non-negative integers`,
      ],
      [
        editHeader((h) => (h[kDense]!.shape = [-8, -8])),
        (f) => `${f}: tensor '${kDense}' has a shape entry that is not a non-negative integer`,
      ],
      [editHeader((h) => (h[kDense]!.shape = [2 ** 40, 2 ** 40])), (f) => `${f}: tensor '${kDense}' has a shape too large`],
      [
        (dir) => {
          const { header, data } = safetensorsParts(tinyTensors());
          const text = JSON.stringify(header);
          writeFileSync(join(dir, 'model.safetensors'), packSafetensors(text, data, BigInt(text.length + data.length + 1)));
        },
        (f) => `${f}: header length 6408 is beyond the file (6415 bytes) or the 100 MiB limit`,
      ],
      [
        (dir) => {
          const { header, data } = safetensorsParts(tinyTensors());
          const text = JSON.stringify(header).replace('"data_offsets":[0,', '"data_offsets":[NaN,');
          writeFileSync(join(dir, 'model.safetensors'), packSafetensors(text, data));
        },
        // The byte of NaN in the header: the first tensor's data_offsets.
        (f) =>
          `${f}: header: invalid JSON at byte ${JSON.stringify(safetensorsParts(tinyTensors()).header).indexOf('"data_offsets":[0,') + 16}: unexpected character`,
      ],
    ];
    for (const [edit, message] of cases) {
      const dir = model(edit);
      expect(loadError(dir).message).toBe(message(join(dir, 'model.safetensors')));
    }
  });

  it('bounds every config.json size and names the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ hidden_size: 0 }, 'hidden_size must be an integer from 1 to 16384'],
      [{ hidden_size: -8 }, 'hidden_size must be an integer from 1 to 16384'],
      [{ hidden_size: 8.5 }, 'hidden_size must be an integer from 1 to 16384'],
      [{ hidden_size: '8' }, 'hidden_size must be an integer from 1 to 16384'],
      [{ num_attention_heads: 3 }, 'hidden_size 8 is not a multiple of num_attention_heads 3'],
      [{ num_attention_heads: 16 }, 'num_attention_heads must be an integer from 1 to 8'],
      [{ vocab_size: 2 ** 40 }, 'vocab_size must be an integer from 1 to 4194304'],
      [{ num_hidden_layers: 1e9 }, 'num_hidden_layers must be an integer from 1 to 256'],
      [{ max_position_embeddings: undefined }, 'max_position_embeddings must be an integer from 1 to 65536'],
      [{ layer_norm_eps: -1 }, 'layer_norm_eps must be a number in (0, 1)'],
      [{ layer_norm_eps: 0 }, 'layer_norm_eps must be a number in (0, 1)'],
      [{ hidden_act: 'relu' }, "hidden_act 'relu' is not supported (only gelu)"],
    ];
    for (const [change, message] of cases) {
      const dir = model((d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig(), ...change })));
      expect(loadError(dir).message).toBe(`${join(dir, 'config.json')}: ${message}`);
    }
    // A config that agrees with itself but not with the weights: the tensor is named.
    const dir = model((d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig(), intermediate_size: 32 })));
    expect(loadError(dir).message).toBe(
      `${join(dir, 'model.safetensors')}: tensor 'encoder.layer.0.intermediate.dense.weight' has shape [16, 8], the config needs [32, 8]`,
    );
  });

  it('checks shared weights again when config.json changes beside them', () => {
    const dir = model();
    const loaded = Encoder.fromPretrained(dir, { threads: 1 });
    // The weights stay shared while `loaded` holds them; a config.json rewritten in place is another load.
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...tinyConfig(), intermediate_size: 32 }));
    expect(loadError(dir).message).toBe(
      `${join(dir, 'model.safetensors')}: tensor 'encoder.layer.0.intermediate.dense.weight' has shape [16, 8], the config needs [32, 8]`,
    );
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...tinyConfig(), num_attention_heads: 4 }));
    const fourHeads = Encoder.fromPretrained(dir, { threads: 1 });
    const [a, b] = [loaded, fourHeads].map((e) => e.embedSync(['this is a good movie']));
    expect(Array.from(b!)).not.toEqual(Array.from(a!));
    loaded.dispose();
    fourHeads.dispose();
  });

  it('refuses malformed JSON with the byte offset and the reason: depth, UTF-8, numbers, duplicates', () => {
    const tokenizer = JSON.stringify(tinyTokenizer());
    const cases: [Buffer, string][] = [
      [Buffer.from(`{"a":${'['.repeat(100)}${']'.repeat(100)}}`), 'invalid JSON at byte 69: nested deeper than 64 levels'],
      [Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), 'invalid JSON at byte 6: invalid UTF-8'],
      [Buffer.from('{"a":"\\ud800"}'), 'invalid JSON at byte 12: lone high surrogate in a \\u escape'],
      [Buffer.from('{"a":01}'), 'invalid JSON at byte 6: leading zero in a number'],
      [Buffer.from('{"a":1e999}'), 'invalid JSON at byte 5: number out of range'],
      [Buffer.from('{"a":1,"a":2}'), "invalid JSON at byte 12: duplicate member 'a'"],
      [Buffer.from(tokenizer.slice(0, 100)), 'invalid JSON at byte 100: unterminated string'],
    ];
    for (const [text, message] of cases) {
      const file = join(root, `tokenizer-${count++}.json`);
      writeFileSync(file, text);
      const load = () => Tokenizer.fromFile(file);
      expect(load).toThrow(SvcError);
      expect(load).toThrow(`${file}: ${message}`);
    }
    // The reader takes what it should: the same tokenizer.json loads and encodes.
    const file = join(root, 'tokenizer-ok.json');
    writeFileSync(file, tokenizer);
    expect(Array.from(Tokenizer.fromFile(file).encode('hello world'))).toEqual([2, 11, 12, 3]);
    expect(readFileSync(file, 'utf8')).toBe(tokenizer);
  });
});
