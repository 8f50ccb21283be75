// `/v2/classify` without HTTP: the body parsed with the one classify schema, and the library's
// classify run as the calling organization, so it waits in that organization's line of the predict
// batcher and is admitted by the same per-organization bounds as its predict calls. No model record
// is read or written: the head lives in the library's bounded cache only.
import { classifyRequest } from '../train/classify.js';
import { validateClassifyRequest } from '../contract/classify-request.js';
import type { ClassifyResponseBody } from '../contract/schemas.js';

/** Classifies a `/v2/classify` body for organization `orgId`. */
export async function classifyForOrg(orgId: string, body: unknown, options: { signal?: AbortSignal }): Promise<ClassifyResponseBody> {
  return classifyRequest(validateClassifyRequest(body), { signal: options.signal, tenant: orgId });
}
