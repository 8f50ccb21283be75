// The store contract: every Store backend runs these same tests (test/store/sqlite.test.ts,
// test/store/postgres.test.ts), one part per area of the Store (the files named below; versions-contract.ts is run
// beside it). Backend-specific behaviour (files, migrations from old versions, query plans) stays in each backend's
// own file.
import { describe } from 'vitest';

import { accountsContract } from './accounts-contract.js';
import type { StoreBackend } from './contract-fixtures.js';
import { jobLeasesContract } from './job-leases-contract.js';
import { jobQueueContract } from './job-queue-contract.js';
import { quotasContract } from './quotas-contract.js';
import { requestLogContract } from './request-log-contract.js';
import { shadowContract } from './shadow-contract.js';

export function storeContract(name: string, backend: StoreBackend): void {
  describe(`${name}: the Store contract`, () => {
    accountsContract(backend);
    jobQueueContract(backend);
    jobLeasesContract(backend);
    requestLogContract(backend);
    quotasContract(backend);
    shadowContract(backend);
  });
}
