import { DirectoryHub } from '../model/hub.js';
import { sweepFinetuneFolders } from '../train/finetune-stage.js';

/**
 * Removes what a server killed mid-work leaves behind: hub staging and replaced-model folders, and the temporary
 * folders of fine-tuning runs whose process is gone. Run it at start-up, holding the data directory's lock (no
 * publish into this hub can be under way then; a hub that replicas share is never swept). Resolves to the paths
 * removed.
 *
 * @example
 * ```ts
 * const release = lockDataDir('./svc-data');
 * await sweepLeftovers('./svc-data/hub'); // ['svc-data/hub/acme/.staging-svc-small-1a2b3c4d5e6f-0f1e2d3c']
 * ```
 */
export async function sweepLeftovers(hubRoot: string, tmpRoot?: string): Promise<string[]> {
  const hub = await new DirectoryHub(hubRoot).sweep();
  return [...hub, ...(await sweepFinetuneFolders(tmpRoot))];
}
