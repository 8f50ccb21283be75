// The throwaway PostgreSQL cluster (fixtures/postgres-cluster.ts), one per test file.
import { type PostgresCluster, startPostgres } from '../../fixtures/postgres-cluster.js';
import { useStarted } from './throwaway.js';

export { type PostgresCluster, startPostgres } from '../../fixtures/postgres-cluster.js';

/** One cluster for the calling test file: started before its tests, stopped and removed after them. */
export function usePostgres(): { readonly cluster: PostgresCluster } {
  const started = useStarted(startPostgres);
  return {
    get cluster() {
      return started.current;
    },
  };
}
