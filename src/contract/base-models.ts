// The base encoder names a request may give as `model`. Where each one's files live is
// model/base-models.ts, whose table is keyed by these names.

/** Names accepted as `model` when training or classifying. */
export const kBaseModelNames = Object.freeze(['svc-small'] as const);
export type BaseModelName = (typeof kBaseModelNames)[number];

/** The same names as a plain list, for messages (`must be one of svc-small`). */
export const baseModelNames: readonly string[] = kBaseModelNames;

export function isBaseModelName(name: string): boolean {
  return (kBaseModelNames as readonly string[]).includes(name);
}
