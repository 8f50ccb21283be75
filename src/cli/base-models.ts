// The base models of `svc serve` and `svc info`: `--base-model NAME=DIR` flags (repeatable), else `SVC_BASE_MODELS`,
// registered before the command does anything else, and how `svc info` lists them.
import { environment } from '../environment.js';
import { SvcError } from '../errors.js';
import { type BaseModel, registeredBaseModels, resolveBaseModel } from '../model/base-models.js';
import { type BaseModelDirs, parseBaseModelEntries, registerBaseModels } from '../service/base-model-options.js';

/** Fingerprint characters `svc info` shows in its text: `sha256:` and 12 hex digits tell folders apart. */
const kFingerprintShown = 'sha256:'.length + 12;

/** A malformed flag is a usage error (exit 2); a folder that does not load is a failure (exit 1). */
function entriesOf(flags: readonly string[]): Record<string, string> {
  try {
    return parseBaseModelEntries(flags, '--base-model');
  } catch (error) {
    throw error instanceof SvcError ? new RangeError(error.message) : error;
  }
}

/**
 * Registers the `--base-model` flags' folders, each error naming its flag, and returns what `startServer` should
 * register besides: nothing (`{}`) when flags were given, for they replace `SVC_BASE_MODELS`; else undefined, so that
 * the server reads the variable.
 */
export function baseModelFlags(flags: readonly string[] | undefined): BaseModelDirs | undefined {
  if (flags === undefined || flags.length === 0) return undefined;
  registerBaseModels(entriesOf(flags), '--base-model');
  return {};
}

/** `svc info`'s base models: the flags', else `SVC_BASE_MODELS`'s, registered now; svc-small first. */
export function infoBaseModels(flags: readonly string[] | undefined): BaseModel[] {
  if (baseModelFlags(flags) === undefined) {
    registerBaseModels(parseBaseModelEntries(environment().baseModels, 'SVC_BASE_MODELS'), 'SVC_BASE_MODELS');
  }
  return [resolveBaseModel('svc-small'), ...registeredBaseModels()];
}

/** One base model as `svc info --json` prints it. */
export interface BaseModelInfo {
  name: string;
  family: string;
  pooling: string;
  normalize: boolean;
  max_seq_length: number;
  dimensions: number;
  /** `sha256:<64 hex>`; '' for built-in models, whose npm package pins their files. */
  fingerprint: string;
  dir: string;
  builtin: boolean;
}

export function baseModelInfo(base: BaseModel): BaseModelInfo {
  return {
    name: base.name,
    family: base.family,
    pooling: base.pooling,
    normalize: base.normalize,
    max_seq_length: base.maxLength,
    dimensions: base.hiddenSize,
    fingerprint: base.fingerprint,
    dir: base.dir,
    builtin: base.builtin,
  };
}

/** The base models as `svc info` prints them: a header, then one aligned row each. */
export function baseModelRows(models: readonly BaseModelInfo[]): string {
  const header = ['name', 'family', 'pooling', 'normalize', 'max_seq_length', 'dimensions', 'fingerprint', 'dir'];
  const rows = models.map((m) => [
    m.name,
    m.family,
    m.pooling,
    m.normalize ? 'yes' : 'no',
    String(m.max_seq_length),
    String(m.dimensions),
    m.builtin ? '(built in)' : m.fingerprint.slice(0, kFingerprintShown),
    m.dir,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  return [header, ...rows].map((row) => `  ${row.map((cell, i) => cell.padEnd(widths[i])).join('  ')}`.trimEnd()).join('\n');
}
