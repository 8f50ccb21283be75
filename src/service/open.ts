import { join } from 'node:path';

import { SqliteStore } from '../store/sqlite.js';
import { LibraryRuntime } from './library-runtime.js';
import type { RetentionOptions } from './retention.js';
import { SvcService } from './service.js';

/**
 * The proxy models from `SVC_PROXY_MODELS`, comma-separated.
 *
 * @example
 * ```ts
 * proxyModelsFromEnv({ SVC_PROXY_MODELS: 'provider-a:gpt-4o-mini, provider-b:mistral-small' });
 * // ['provider-a:gpt-4o-mini', 'provider-b:mistral-small']
 * ```
 */
export function proxyModelsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.SVC_PROXY_MODELS ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * The service over a data directory: `<dataDir>/svc.sqlite` and the hub in
 * `<dataDir>/hub/<org>/<model_id>`. The job runner starts with `service.start()`.
 *
 * @example
 * ```ts
 * const service = openService('./svc-data');
 * await service.createOrganization('acme'); // { id: 'acme', createdAt: 1763790000000, proxyAccess: false }
 * await service.close();
 * ```
 */
export function openService(
  dataDir: string,
  proxyModels: readonly string[] = proxyModelsFromEnv(),
  retention: RetentionOptions = {},
): SvcService {
  const store = SqliteStore.open(dataDir);
  const runtime = new LibraryRuntime({ hubRoot: join(dataDir, 'hub') });
  return new SvcService({ store, runtime, proxyModels, retention });
}
