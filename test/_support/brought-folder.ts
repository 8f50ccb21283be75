// A base model folder as a user brings one: svc-small's real files (all-MiniLM-L6-v2) with the
// sentence-transformers files that a clone of its repository has beside them, in the mean-pooled
// layout of the original or a CLS-pooled variant.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { resolveBaseModel } from '../../src/model/base-models.js';

export interface BroughtFolderOptions {
  pooling?: 'mean' | 'cls';
  /** Writes the 2_Normalize module (as all-MiniLM-L6-v2 has); default true. */
  normalize?: boolean;
  maxSeqLength?: number;
  /** config_sentence_transformers.json's prompts, written only when given. */
  prompts?: Record<string, string>;
  defaultPromptName?: string;
}

function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Writes the folder into `dir` (created) and returns `dir`. The weights are a copy, safe to tamper with. */
export function writeBroughtFolder(dir: string, options: BroughtFolderOptions = {}): string {
  const { pooling = 'mean', normalize = true, maxSeqLength = 256 } = options;
  const svcSmall = resolveBaseModel('svc-small');
  mkdirSync(join(dir, '1_Pooling'), { recursive: true });
  copyFileSync(svcSmall.configFile, join(dir, 'config.json'));
  copyFileSync(svcSmall.tokenizerFile, join(dir, 'tokenizer.json'));
  copyFileSync(svcSmall.weightsFile, join(dir, 'model.safetensors'));
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (normalize) {
    modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
    mkdirSync(join(dir, '2_Normalize'), { recursive: true });
  }
  writeJson(join(dir, 'modules.json'), modules);
  writeJson(join(dir, '1_Pooling', 'config.json'), {
    word_embedding_dimension: svcSmall.hiddenSize,
    pooling_mode_cls_token: pooling === 'cls',
    pooling_mode_mean_tokens: pooling === 'mean',
    pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false,
  });
  writeJson(join(dir, 'sentence_bert_config.json'), { max_seq_length: maxSeqLength, do_lower_case: false });
  if (options.prompts) {
    writeJson(join(dir, 'config_sentence_transformers.json'), {
      prompts: options.prompts,
      default_prompt_name: options.defaultPromptName ?? null,
    });
  }
  return dir;
}
