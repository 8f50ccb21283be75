// A process of its own for the data-directory tests (spawned with `node --import tsx`):
//   lock <dir>           takes the lock, prints "locked", holds it until killed
//   try-lock <dir> <at>  waits until the wall clock reaches <at> (ms), tries the lock, prints "locked" or the error code;
//                        a winner holds the lock until its stdin ends
//   open <dir> <at>      waits until <at>, opens (and migrates) the store, prints the schema version
import Database from 'better-sqlite3';

import { lockDataDir } from '../../src/service/data-lock.js';
import { SqliteStore } from '../../src/store/sqlite.js';

const [mode, dir, at] = process.argv.slice(2);

async function untilStart(): Promise<void> {
  // Spin the last milliseconds so that every process starts within a millisecond of the others.
  while (Date.now() < Number(at) - 20) await new Promise((resolve) => setTimeout(resolve, 5));
  while (Date.now() < Number(at));
}

if (mode === 'lock') {
  const release = lockDataDir(dir);
  process.stdout.write('locked\n');
  // Kept referenced for the process's life (see try-lock).
  setInterval(() => void release, 1 << 30);
} else if (mode === 'try-lock') {
  await untilStart();
  try {
    // The release function holds the lock's database: dropped, it could be collected (and the lock with it) while
    // this process waits, which hands the lock to a second taker.
    const release = lockDataDir(dir);
    process.stdout.write('locked\n');
    // Hold it until the test has heard from every other process, however late a loaded machine started them: a fixed
    // hold could end before a slow starter tried, and hand it the lock a second time.
    await new Promise((resolve) => process.stdin.on('end', resolve).resume());
    release();
  } catch (error) {
    process.stdout.write(`${(error as { code?: string }).code}\n`);
  }
} else if (mode === 'open') {
  await untilStart();
  const store = SqliteStore.open(dir);
  await store.close();
  const db = new Database(`${dir}/svc.sqlite`, { readonly: true });
  process.stdout.write(`${JSON.stringify(db.prepare('SELECT version FROM schema_version').all())}\n`);
  db.close();
} else {
  throw new Error(`unknown mode ${mode}`);
}
