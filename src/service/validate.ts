// Training requests are checked by the library's own `validateTrainRequest` (one set of rules
// and messages for `train()` and `POST /v2/train`); predict batches are checked here.
import { SvcError } from '../errors.js';
import { kMaxTextLength } from '../train/request.js';

export const kMaxPredictInputs = 2048;

const invalid = (message: string, param: string) => new SvcError('invalid_request', message, { param });

/** Predict inputs: a non-empty batch of at most 2,048 strings, each at most `kMaxTextLength` (100,000) UTF-16 units, as for training. */
export function validatePredictInputs(inputs: unknown[]): asserts inputs is string[] {
  if (inputs.length === 0) throw invalid('inputs must hold at least one text', 'inputs');
  if (inputs.length > kMaxPredictInputs) {
    throw invalid(`inputs holds ${inputs.length} texts; the limit is ${kMaxPredictInputs} per request`, 'inputs');
  }
  inputs.forEach((input, i) => {
    if (typeof input !== 'string') throw invalid(`inputs[${i}] must be a string`, `inputs[${i}]`);
    if (input.length > kMaxTextLength) {
      throw invalid(`inputs[${i}] must be at most ${kMaxTextLength} characters (got ${input.length})`, `inputs[${i}]`);
    }
  });
}
