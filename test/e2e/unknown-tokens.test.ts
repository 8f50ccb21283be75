// What a new user's first texts get over HTTP, through the stand-alone service on 127.0.0.1 with the library's
// frozen encoder: texts the tokenizer barely knows carry `unknown_tokens` in /v2/classify's answer (the response
// schema keeps the field), English ones do not, and blank texts are refused with the index before any work.
import { describe, expect, it } from 'vitest';

import { useAcmeService } from '../_support/classify-service.js';
import { imdbExamples } from '../_support/examples.js';
import { httpCall } from '../_support/http.js';

const acme = useAcmeService('svc-e2e-unknown-');

async function classify(inputs: string[]) {
  const body = { model: 'svc-small', task_type: 'binary-classification', inputs, examples: imdbExamples(0, 10) };
  const answer = await httpCall(acme.server.url, 'POST', '/v2/classify', acme.key, body);
  return { status: answer.status, body: JSON.parse(answer.text) as { predictions?: Record<string, unknown>[]; error?: unknown } };
}

describe('unknown tokens and blank texts over HTTP', () => {
  it('flags emoji-only and Chinese texts with their share of [UNK] pieces, and leaves English unflagged', async () => {
    const answer = await classify(['😀😀😀', '🎉', '为什么这个月我被收了两次费?', 'A wonderful, moving film.']);
    expect(answer.status).toBe(200);
    const predictions = answer.body.predictions!;
    expect(predictions.map((p) => p.unknown_tokens)).toEqual([1, 1, 11 / 14, undefined]);
    expect(Object.keys(predictions[3])).toEqual(['label', 'probability', 'truncated']);
    // Both emoji texts read as [CLS] [UNK] [SEP]: the same scores, which the flag explains.
    expect(predictions[1].probability).toBe(predictions[0].probability);
  });

  it('refuses an empty or whitespace-only input with a 400 naming it', async () => {
    const answer = await classify(['Fine film', '\u00a0 \n']);
    expect(answer).toEqual({
      status: 400,
      body: {
        error: {
          message: 'inputs[1] must not be empty (it holds only whitespace)',
          type: 'invalid_request_error',
          param: 'inputs[1]',
          code: 'invalid_request',
        },
      },
    });
  });
});
