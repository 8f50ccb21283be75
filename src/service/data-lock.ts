import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { SvcError } from '../errors.js';
import { loadSqlite } from '../store/sqlite-driver.js';

/** The file that says, for people and scripts, which process serves a data directory. It is never trusted. */
export const kLockFile = 'serve.pid';
/** The file whose lock is the lock: a SQLite database held in an exclusive transaction. */
export const kLockDatabase = 'serve.lock';

/**
 * Claims a data directory for this process. Two servers on one directory would each requeue the other's running
 * jobs at start-up and train them twice, so the second one is refused.
 *
 * The lock is the operating system's (SQLite's `fcntl` lock on `serve.lock`, held in an exclusive transaction), not
 * a pid in a file: the kernel drops it when the holder dies, however it dies, so there is no stale lock to take
 * over, no race between two takers, and no pid to misread (pid 1 after a container restart, our own pid, an empty
 * file). `serve.pid` is written after the lock is held, for operators, and only read to name the holder in the
 * error. Returns the release function, which holds the lock's connection: keep it for as long as the lock must
 * hold (a connection nothing references may be collected, and its lock dropped with it).
 *
 * @example
 * ```ts
 * const release = lockDataDir('./svc-data'); // holds ./svc-data/serve.lock, writes ./svc-data/serve.pid
 * release();
 * ```
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  // timeout 0: a held lock answers SQLITE_BUSY at once instead of after better-sqlite3's default 5 s wait.
  const db = new (loadSqlite())(join(dataDir, kLockDatabase), { timeout: 0 });
  try {
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    throw new SvcError('conflict', `another svc serve${holderText(dataDir)} is using the data directory ${dataDir}`);
  }
  const pidFile = join(dataDir, kLockFile);
  writeFileSync(pidFile, `${process.pid}\n`);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    rmSync(pidFile, { force: true });
    db.close();
  };
}

/** ` (pid 1234)` when `serve.pid` names one, else nothing: the message only, never a decision. */
function holderText(dataDir: string): string {
  try {
    const text = readFileSync(join(dataDir, kLockFile), 'utf8').trim();
    return /^[1-9]\d{0,9}$/.test(text) ? ` (pid ${text})` : '';
  } catch {
    return '';
  }
}
