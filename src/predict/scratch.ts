// Temporary directories that hold a just-trained model's fine-tuned encoder until it is saved.
// Removed when the classifier is disposed or garbage-collected, and at the latest when the
// process exits, so training never leaves weights behind in the temp folder.
import { rmSync } from 'node:fs';

const live = new Set<string>();
const collected = new FinalizationRegistry<string>((dir) => removeNow(dir));
let exitHook = false;

function removeNow(dir: string): void {
  if (!live.delete(dir)) return;
  rmSync(dir, { recursive: true, force: true });
}

/** Removes `dir` once `owner` is disposed, collected, or the process exits. */
export function trackScratchDir(owner: object, dir: string): void {
  live.add(dir);
  collected.register(owner, dir, owner);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const left of [...live]) removeNow(left);
    });
  }
}

/** Removes `dir` now (the owner was disposed). */
export function removeScratchDir(owner: object, dir: string): void {
  collected.unregister(owner);
  removeNow(dir);
}
