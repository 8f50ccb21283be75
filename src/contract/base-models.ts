// The base encoder names a request may give as `model`: the built-in ones, whose files
// model/base-models.ts finds by these names, and the folders users register at run time.
// The contract layer imports nothing above it, so the registered names are kept here and
// model/base-models.ts adds to them when it registers a folder.

/** Built-in base models, shipped in npm packages. */
export const kBaseModelNames = Object.freeze(['svc-small'] as const);
export type BaseModelName = (typeof kBaseModelNames)[number];

// Live: a name registered later is in it, so messages list what this process accepts now.
const acceptedNames: string[] = [...kBaseModelNames];
// Registered names and the sha256 of their folder's files, which models trained on them record.
const fingerprints = new Map<string, string>();

/** Every name accepted as `model` now, built-in first, for messages (`must be one of svc-small`). */
export const baseModelNames: readonly string[] = acceptedNames;

/** Whether `name` is a built-in or a registered base model. */
export function isBaseModelName(name: string): boolean {
  return acceptedNames.includes(name);
}

/** Whether `name` is one of the built-in base models (those that need no registration). */
export function isBuiltinBaseModelName(name: string): name is BaseModelName {
  return (kBaseModelNames as readonly string[]).includes(name);
}

/**
 * Adds a registered folder's name, with its files' fingerprint, to the accepted ones
 * (model/base-models.ts calls this once it has read the folder).
 */
export function acceptBaseModelName(name: string, fingerprint: string): void {
  if (!acceptedNames.includes(name)) acceptedNames.push(name);
  fingerprints.set(name, fingerprint);
}

/** The fingerprint a registered base model's folder had when it was registered; undefined for built-in or unknown names. */
export function registeredFingerprint(name: string): string | undefined {
  return fingerprints.get(name);
}
