// The base model entries a service registers at start-up: `NAME=DIR` as --base-model and SVC_BASE_MODELS give them,
// and the error of a folder that does not load, named after the entry that gave it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { environment } from '../../src/environment.js';
import { SvcError } from '../../src/errors.js';
import { parseBaseModelEntries, registerBaseModels } from '../../src/service/base-model-options.js';

const scratch = mkdtempSync(join(tmpdir(), 'svc-base-model-options-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('base model entries', () => {
  it('SVC_BASE_MODELS splits at commas, trimmed, blanks dropped', () => {
    expect(environment({ SVC_BASE_MODELS: ' e5-small=/models/e5 , ,bge=./bge ' }).baseModels).toEqual(['e5-small=/models/e5', 'bge=./bge']);
    expect(environment({ SVC_BASE_MODELS: '' }).baseModels).toEqual([]);
  });

  it('reads NAME=DIR, the folder up to its end (an = in it included)', () => {
    expect(parseBaseModelEntries(['e5-small=/models/e5', 'odd=/models/a=b'], '--base-model')).toEqual({
      'e5-small': '/models/e5',
      odd: '/models/a=b',
    });
    expect(parseBaseModelEntries([], 'SVC_BASE_MODELS')).toEqual({});
  });

  it.each([
    ['/models/e5', "SVC_BASE_MODELS entry '/models/e5' must be NAME=DIR (a name, '=', then the folder)"],
    ['=/models/e5', "SVC_BASE_MODELS entry '=/models/e5' must be NAME=DIR (a name, '=', then the folder)"],
    ['e5=', "SVC_BASE_MODELS entry 'e5=' must be NAME=DIR (a name, '=', then the folder)"],
  ])('refuses %s, naming the entry', (entry, message) => {
    expect(() => parseBaseModelEntries([entry], 'SVC_BASE_MODELS')).toThrow(message);
  });

  it('refuses a name given twice, naming both entries', () => {
    expect(() => parseBaseModelEntries(['e5=/a', 'e5=/b'], '--base-model')).toThrow(
      "--base-model entry 'e5=/b' names 'e5' again (first e5=/a)",
    );
  });

  it("puts the entry before the folder's own error", () => {
    const gone = join(scratch, 'gone');
    let thrown: unknown;
    try {
      registerBaseModels({ 'e5-small': gone }, 'options.baseModels');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SvcError);
    expect([(thrown as SvcError).code, (thrown as SvcError).param, (thrown as SvcError).message]).toEqual([
      'invalid_request',
      'base_model',
      `options.baseModels e5-small=${gone}: ${join(gone, 'config.json')}: is missing; a base model folder is a sentence-transformers model as saved by save_pretrained`,
    ]);
    expect(() => registerBaseModels({ 'svc-small': gone }, '--base-model')).toThrow(
      `--base-model svc-small=${gone}: 'svc-small' is a built-in base model; register the folder under another name`,
    );
  });
});
