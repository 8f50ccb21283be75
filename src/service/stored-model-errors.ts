// Whose fault a damaged model is. The library reads a user's own folder: `Classifier.load('./my-model')` of a damaged
// one rejects with `invalid_request` naming the file and the tensor, which is that user's to see and fix. A model the
// service stored is the service's: the caller can neither see nor fix its files, and their paths are the server's.
// So the runtime turns failures of its stored models into `internal`: the client gets the generic 500 (see
// server/errors.ts), and the server's log the whole error, the original one as its cause.
import { SvcError } from '../errors.js';

// What loading may fail with that is still the caller's answer: the call went away, the machine is busy.
const kPassedThrough = new Set(['aborted', 'overloaded']);

/**
 * What a failed load of the stored model `hubId` answers. Any failure is the stored files' (unreadable, damaged,
 * altered since they were saved: the service checked the model exists and is trained), except the caller's own
 * abort, an overloaded pool, and the hub saying the model is gone (deleted meanwhile: `not_found` on `model`).
 *
 * @example
 * ```ts
 * storedModelLoadFailure(new SvcError('invalid_request', '/srv/hub/acme/m/adapter_model.safetensors: tensor …'), 'acme/m');
 * // SvcError { code: 'internal', message: "the stored model 'acme/m' failed to load: /srv/hub/acme/m/adapter_model…" }
 * ```
 */
export function storedModelLoadFailure(error: unknown, hubId: string): unknown {
  if (error instanceof SvcError && (kPassedThrough.has(error.code) || (error.code === 'not_found' && error.param === 'model'))) {
    return error;
  }
  return internal(error, `the stored model '${hubId}' failed to load`);
}

/**
 * What a failed predict (or hub download) of the stored model in `folder` answers: a failure whose message names
 * the model's folder is about its files (a worker read its adapter again and found it damaged or altered), so it is
 * internal; the rest (the caller's texts and options, aborts, overload) is answered as it is.
 */
export function storedModelUseFailure(error: unknown, hubId: string, folder: string): unknown {
  if (!(error instanceof SvcError) || error.status === 500 || !error.message.includes(folder)) return error;
  return internal(error, `the stored model '${hubId}' failed`);
}

function internal(error: unknown, what: string): SvcError {
  const detail = error instanceof Error ? error.message : String(error);
  return new SvcError('internal', `${what}: ${detail}`, { cause: error });
}
