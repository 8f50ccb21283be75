import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { baseModelNames, isBaseModelName, registerBaseModel, registeredBaseModels, resolveBaseModel } from '../../src/model/base-models.js';
import { validateTrainRequest } from '../../src/contract/train-request.js';
import { writeBroughtFolder } from '../_support/brought-folder.js';
import { imdbExamples } from '../_support/examples.js';

const root = mkdtempSync(join(tmpdir(), 'svc-brought-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let folders = 0;
function folder(options: Parameters<typeof writeBroughtFolder>[1] = {}): string {
  return writeBroughtFolder(join(root, `folder-${++folders}`), options);
}

function editJson(file: string, change: (value: Record<string, unknown>) => void): void {
  const value = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  change(value);
  writeFileSync(file, JSON.stringify(value));
}

describe('registerBaseModel', () => {
  it('reads what the folder says and lists the model', () => {
    const dir = folder({ maxSeqLength: 128 });
    const base = registerBaseModel('minilm-mean', dir);
    expect(base).toMatchObject({
      name: 'minilm-mean',
      dir,
      family: 'bert',
      pooling: 'mean',
      normalize: true,
      prompt: '',
      hiddenSize: 384,
      maxLength: 128,
      contextWindow: 512,
      builtin: false,
      weightsFile: join(dir, 'model.safetensors'),
    });
    expect(base.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(resolveBaseModel('minilm-mean')).toBe(base);
    expect(registeredBaseModels().map((model) => model.name)).toContain('minilm-mean');
    expect(isBaseModelName('minilm-mean')).toBe(true);
    expect(baseModelNames).toContain('minilm-mean');
    expect(resolveBaseModel('svc-small')).toMatchObject({ builtin: true, fingerprint: '', pooling: 'mean', normalize: true });
  });

  it('reads CLS pooling, no Normalize module and a max_seq_length past the positions', () => {
    const base = registerBaseModel('minilm-cls', folder({ pooling: 'cls', normalize: false, maxSeqLength: 4096 }));
    expect(base).toMatchObject({ pooling: 'cls', normalize: false, maxLength: 512, contextWindow: 512 });
  });

  it('counts the RoBERTa position offset for xlm-roberta and mpnet', () => {
    const dir = folder({ maxSeqLength: 4096 });
    editJson(join(dir, 'config.json'), (config) => {
      config.model_type = 'xlm-roberta';
      config.pad_token_id = 1;
      config.max_position_embeddings = 514;
    });
    expect(registerBaseModel('offset-model', dir)).toMatchObject({ family: 'xlm-roberta', contextWindow: 512, maxLength: 512 });
  });

  it("chooses default_prompt_name's prompt, else the query prompt", () => {
    const e5 = registerBaseModel('e5-like', folder({ prompts: { query: 'query: ', passage: 'passage: ' } }));
    expect(e5.prompt).toBe('query: ');
    const named = folder({ prompts: { query: 'query: ', classification: 'Classify: ' }, defaultPromptName: 'classification' });
    expect(registerBaseModel('prompted', named).prompt).toBe('Classify: ');
  });

  it('accepts a registered name wherever a request takes model', () => {
    registerBaseModel('accepted-base', folder());
    const request = validateTrainRequest({ model: 'accepted-base', task_type: 'binary-classification', examples: imdbExamples(0, 10) });
    expect(request.model).toBe('accepted-base');
    expect(() => validateTrainRequest({ ...request, model: 'never-registered' })).toThrow(/must be one of svc-small.*accepted-base/);
  });

  it('is a no-op for the same files and an error for other files under the same name', () => {
    const dir = folder();
    const first = registerBaseModel('twice', dir);
    expect(registerBaseModel('twice', dir)).toBe(first);
    const other = folder({ pooling: 'cls' });
    expect(() => registerBaseModel('twice', other)).toThrow(/'twice' is already registered from .* has other files/);
    expect(resolveBaseModel('twice').pooling).toBe('mean');
  });

  it.each([
    ['svc-small', /built-in base model/],
    ['Upper', /lowercase letters, digits/],
    ['has space', /lowercase letters, digits/],
    ['-leading', /lowercase letters, digits/],
    ['', /lowercase letters, digits/],
  ])('refuses the name %j', (name, message) => {
    expect(() => registerBaseModel(name, folder())).toThrow(message);
  });
});

describe('a bad folder', () => {
  function refusal(change: (dir: string) => void): string {
    const dir = folder();
    change(dir);
    try {
      registerBaseModel(`bad-${folders}`, dir);
    } catch (error) {
      expect(error).toMatchObject({ code: 'invalid_request' });
      expect(isBaseModelName(`bad-${folders}`)).toBe(false);
      return (error as Error).message;
    }
    throw new Error('the folder was registered');
  }

  it.each(['config.json', 'tokenizer.json', 'model.safetensors', 'modules.json', '1_Pooling/config.json', 'sentence_bert_config.json'])(
    'names the missing %s',
    (file) => {
      expect(refusal((dir) => unlinkSync(join(dir, file)))).toContain(`${file}: is missing`);
    },
  );

  it('names an unsupported model_type and the file', () => {
    const message = refusal((dir) => editJson(join(dir, 'config.json'), (config) => (config.model_type = 'gpt2')));
    expect(message).toMatch(/config\.json: model_type "gpt2" is not supported \(supported: bert, xlm-roberta, mpnet\)/);
  });

  it('names a size config.json lacks or that does not divide into heads', () => {
    expect(refusal((dir) => editJson(join(dir, 'config.json'), (config) => delete config.num_hidden_layers))).toMatch(
      /config\.json: num_hidden_layers must be a positive integer \(got undefined\)/,
    );
    expect(refusal((dir) => editJson(join(dir, 'config.json'), (config) => (config.num_attention_heads = 5)))).toMatch(
      /config\.json: hidden_size 384 is not a multiple of num_attention_heads 5/,
    );
  });

  it('names both files when the tokenizer and vocab_size disagree', () => {
    const message = refusal((dir) => editJson(join(dir, 'config.json'), (config) => (config.vocab_size = 250002)));
    expect(message).toMatch(/tokenizer\.json has 30522 tokens but .*config\.json says vocab_size 250002/);
  });

  it('names the pooling file for a pooling mode the engine does not compute', () => {
    const message = refusal((dir) =>
      editJson(join(dir, '1_Pooling', 'config.json'), (pooling) => {
        pooling.pooling_mode_mean_tokens = false;
        pooling.pooling_mode_max_tokens = true;
      }),
    );
    expect(message).toMatch(/1_Pooling\/config\.json: pooling must be exactly one of .*\(set: pooling_mode_max_tokens\)/);
  });

  it('names modules.json when it has no Pooling module', () => {
    const message = refusal((dir) =>
      writeFileSync(join(dir, 'modules.json'), JSON.stringify([{ idx: 0, path: '', type: 'sentence_transformers.models.Transformer' }])),
    );
    expect(message).toMatch(/modules\.json: has no sentence_transformers\.models\.Pooling module/);
  });

  it('names a file that is not JSON, and weights that are not safetensors', () => {
    expect(refusal((dir) => writeFileSync(join(dir, 'sentence_bert_config.json'), '{ max_seq_length'))).toMatch(
      /sentence_bert_config\.json: is not JSON/,
    );
    expect(refusal((dir) => writeFileSync(join(dir, 'model.safetensors'), Buffer.from('not weights at all')))).toMatch(
      /model\.safetensors: is not safetensors/,
    );
  });

  it('names a bad max_seq_length', () => {
    const message = refusal((dir) => writeFileSync(join(dir, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: 0 })));
    expect(message).toMatch(/sentence_bert_config\.json: max_seq_length must be a positive integer \(got 0\)/);
  });
});
