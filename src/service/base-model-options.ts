// The base model folders a service registers at start-up: from `--base-model NAME=DIR` flags or `SVC_BASE_MODELS`
// entries, or a `baseModels: { name: dir }` option, each registered before anything else starts so that a bad entry
// stops start-up with an error naming it. What each replica registered is then checked against the shared store
// (base-model-agreement.ts).
import { SvcError } from '../errors.js';
import { type BaseModel, registerBaseModel } from '../model/base-models.js';

/** Base model folders by the name requests give as `model`: `{ 'e5-small': '/models/e5-small-v2' }`. */
export type BaseModelDirs = Readonly<Record<string, string>>;

/**
 * `NAME=DIR` entries (`--base-model` flags, `SVC_BASE_MODELS`) as a {@link BaseModelDirs}; an entry without `=`, with
 * an empty side, or naming a model twice is an `invalid_request` naming the entry and where it came from.
 *
 * @example
 * ```ts
 * parseBaseModelEntries(['e5-small=/models/e5-small-v2', 'bge=./bge-small'], '--base-model');
 * // { 'e5-small': '/models/e5-small-v2', bge: './bge-small' }
 * parseBaseModelEntries(['e5-small'], 'SVC_BASE_MODELS');
 * // throws SvcError("SVC_BASE_MODELS entry 'e5-small' must be NAME=DIR (a name, '=', then the folder)")
 * ```
 */
export function parseBaseModelEntries(entries: readonly string[], source: string): Record<string, string> {
  const dirs: Record<string, string> = {};
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    const name = entry.slice(0, equals).trim();
    const dir = entry.slice(equals + 1).trim();
    if (equals < 0 || name.length === 0 || dir.length === 0) {
      throw new SvcError('invalid_request', `${source} entry '${entry}' must be NAME=DIR (a name, '=', then the folder)`, {
        param: 'base_model',
      });
    }
    if (Object.hasOwn(dirs, name)) {
      throw new SvcError('invalid_request', `${source} entry '${entry}' names '${name}' again (first ${name}=${dirs[name]})`, {
        param: 'base_model',
      });
    }
    dirs[name] = dir;
  }
  return dirs;
}

/**
 * Registers each folder of `dirs` (see `registerBaseModel`), in order; the first that fails stops it with the
 * folder's own error after the entry that named it (`--base-model e5=/models/e5: /models/e5/config.json: is missing; ...`).
 *
 * @example
 * ```ts
 * registerBaseModels({ 'e5-small': '/models/e5-small-v2' }, 'options.baseModels').map((base) => base.name); // ['e5-small']
 * ```
 */
export function registerBaseModels(dirs: BaseModelDirs, source: string): BaseModel[] {
  return Object.entries(dirs).map(([name, dir]) => {
    try {
      return registerBaseModel(name, dir);
    } catch (error) {
      if (!(error instanceof SvcError)) throw error;
      throw new SvcError(error.code, `${source} ${name}=${dir}: ${error.message}`, { param: 'base_model', cause: error });
    }
  });
}
