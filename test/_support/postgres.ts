// The throwaway PostgreSQL cluster (fixtures/postgres-cluster.ts), one per test file.
import { afterAll, beforeAll } from 'vitest';

import { type PostgresCluster, startPostgres } from '../../fixtures/postgres-cluster.js';

export { type PostgresCluster, startPostgres } from '../../fixtures/postgres-cluster.js';

/** One cluster for the calling test file: started before its tests, stopped and removed after them. */
export function usePostgres(): { readonly cluster: PostgresCluster } {
  const holder: { cluster: PostgresCluster } = { cluster: undefined as unknown as PostgresCluster };
  beforeAll(async () => {
    holder.cluster = await startPostgres();
  });
  afterAll(async () => {
    await holder.cluster?.stop();
  });
  return holder;
}
