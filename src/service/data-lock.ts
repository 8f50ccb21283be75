import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { SvcError } from '../errors.js';

/** The file that marks a data directory as served by one process. */
export const kLockFile = 'serve.pid';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claims a data directory for this process. Two servers on one directory
 * would each requeue the other's running jobs at start-up and train them
 * twice, so the second one is refused. A lock left by a process that died
 * (SIGKILL, a crash) is taken over. Returns the release function.
 *
 * @example
 * ```ts
 * const release = lockDataDir('./svc-data'); // writes ./svc-data/serve.pid
 * release();
 * ```
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, kLockFile);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return () => {
        try {
          if (Number(readFileSync(file, 'utf8')) === process.pid) rmSync(file, { force: true });
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(holder) && alive(holder)) {
        throw new SvcError('conflict', `another svc serve (pid ${holder}) is using the data directory ${dataDir}`);
      }
      rmSync(file, { force: true });
    }
  }
  throw new SvcError('conflict', `could not lock the data directory ${dataDir}`);
}
