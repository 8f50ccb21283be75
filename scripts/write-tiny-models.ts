// Writes the seeded tiny base models of the encoder reference set (test/_support/reference-encoders.ts) into a
// folder, each with ids.json (the token ids it runs on), for scripts/reference-encoders.py to compute the
// committed outputs from. Development time only: `npx tsx scripts/write-tiny-models.ts /tmp/tiny-models`.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { kReferenceCases, writeReferenceCase } from '../test/_support/reference-encoders.js';

const out = resolve(process.argv[2] ?? 'tiny-models');
for (const c of kReferenceCases) {
  const dir = join(out, c.name);
  const { ids } = writeReferenceCase(dir, c);
  writeFileSync(
    join(dir, 'ids.json'),
    JSON.stringify({
      name: c.name,
      lengths: c.lengths,
      ids: [...ids],
      pooling: c.options.pooling,
      normalize: c.options.normalize,
      family: c.options.family,
    }),
  );
  console.log(dir);
}
