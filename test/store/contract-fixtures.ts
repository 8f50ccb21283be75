// What every part of the store contract shares (contract.ts runs the parts, versions-contract.ts is one more): the
// backend a test file describes, a fresh database per test, and the models, examples and claim the tests queue.
import { afterEach, beforeEach } from 'vitest';

import type { JobClaim, ModelRecord, Store, TrainingExample } from '../../src/store/types.js';

export interface StoreBackend {
  /** A fresh, empty database: a data directory, a URL. */
  create(): Promise<string>;
  /** A store on that database, migrated to the newest schema; call again for a second process's store. */
  open(location: string): Promise<Store>;
  /** The messages of the backend's own constraint errors (the driver's wording). */
  errors: {
    duplicateOrganization: string;
    projectOfUnknownOrganization: string;
    limitsOfUnknownOrganization: string;
  };
}

export const model = (id: string, orgId = 'acme', createdAt = 1000): ModelRecord => ({
  id,
  orgId,
  baseModel: 'svc-small',
  taskType: 'binary-classification',
  labelText: 'positive',
  status: 'training',
  error: null,
  createdAt,
  updatedAt: createdAt,
});
/** A runner's claim: default cap 1, a lease of 1 s. */
export const claim: JobClaim = { maxRunningJobs: 1, holder: 'runner-1', leaseMs: 1000 };
export const examples: TrainingExample[] = [
  { text: 'good', label: true, label_text: 'positive' },
  { text: 'bad', label: false, label_text: 'positive' },
];

/** The current test's store and its database (for a second store on it), as `freshStore` sets them. */
export interface FreshStore {
  readonly store: Store;
  readonly location: string;
}

/** In the calling `describe`: each test gets a store on a fresh, empty database, closed after the test. */
export function freshStore(backend: StoreBackend): FreshStore {
  let location: string;
  let store: Store;
  beforeEach(async () => {
    location = await backend.create();
    store = await backend.open(location);
  });
  afterEach(async () => {
    await store.close();
  });
  return {
    get store() {
      return store;
    },
    get location() {
      return location;
    },
  };
}
