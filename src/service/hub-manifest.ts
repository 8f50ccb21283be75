// The manifest.json a hub download gets. A version's stored manifest names the store's key for that version (the
// `<classifier>.v<n>` row id that store/*-versions.ts gives every version after the first), which no route takes:
// a client that read `id` from `main/manifest.json` of a promoted version and sent it to /v2/predict got a 400. The
// copy sent names the classifier's public id and the version, as predict (`<id>@<n>`) and the versions routes do.
// The stored file stays as training wrote it; only the download changes, so versions trained before this read the
// same.
import { Readable } from 'node:stream';

import { kManifestFile } from '../contract/manifest.js';
import type { HubFileReader } from '../model/hub.js';

/** The version a hub download comes from: its classifier's public id and its number. */
export interface PublicVersionName {
  classifierId: string;
  version: number;
}

/**
 * The hub file as a client downloads it: `manifest.json` with `id` the classifier's public id and `version` the
 * version's number; any other file as stored.
 *
 * @example
 * ```ts
 * const stored = await runtime.hubFile('acme', 'svc-small-1a2b3c4d5e6f.v2', 'manifest.json'); // "id": "svc-small-1a2b3c4d5e6f.v2"
 * const sent = await publicHubFile(stored, 'manifest.json', { classifierId: 'svc-small-1a2b3c4d5e6f', version: 2 });
 * // sent.stream: { "format_version": 1, "id": "svc-small-1a2b3c4d5e6f", "version": 2, "created_at": ..., ... }
 * ```
 */
export async function publicHubFile(reader: HubFileReader, file: string, name: PublicVersionName): Promise<HubFileReader> {
  if (file !== kManifestFile) return reader;
  const chunks: Buffer[] = [];
  for await (const chunk of reader.stream) chunks.push(Buffer.from(chunk as Uint8Array));
  const stored = Buffer.concat(chunks);
  const manifest = parseObject(stored.toString('utf8'));
  // Not a JSON object: nothing names an id to rewrite, and the loader reports it as it would locally.
  const bytes = manifest === null ? stored : Buffer.from(`${JSON.stringify(renamed(manifest, name), null, 2)}\n`);
  return { size: bytes.length, stream: Readable.from([bytes]) };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The same fields in the same order, `id` replaced and `version` right after it. */
function renamed(manifest: Record<string, unknown>, { classifierId, version }: PublicVersionName): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (key === 'version') continue;
    out[key] = key === 'id' ? classifierId : value;
    if (key === 'id') out.version = version;
  }
  if (!('id' in out)) Object.assign(out, { id: classifierId, version });
  return out;
}
