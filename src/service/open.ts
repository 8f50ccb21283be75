import { join } from 'node:path';

import { environment, type EnvironmentSource } from '../environment.js';
import { SvcError } from '../errors.js';
import { PostgresHub } from '../artifacts/postgres-hub.js';
import { PostgresStore } from '../store/postgres.js';
import { SqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
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
export function proxyModelsFromEnv(env?: EnvironmentSource): string[] {
  return [...environment(env).proxyModels];
}

/**
 * The PostgreSQL database from `SVC_DATABASE_URL`, or undefined when it is unset or empty.
 *
 * @example
 * ```ts
 * databaseUrlFromEnv({ SVC_DATABASE_URL: 'postgres://svc@db.internal/svc' }); // 'postgres://svc@db.internal/svc'
 * ```
 */
export function databaseUrlFromEnv(env?: EnvironmentSource): string | undefined {
  return environment(env).databaseUrl;
}

/**
 * The Redis server for request counts from `SVC_REDIS_URL`, or undefined when it is unset or empty.
 *
 * @example
 * ```ts
 * redisUrlFromEnv({ SVC_REDIS_URL: 'redis://cache.internal:6379' }); // 'redis://cache.internal:6379'
 * ```
 */
export function redisUrlFromEnv(env?: EnvironmentSource): string | undefined {
  return environment(env).redisUrl;
}

/** A `redis://` or `rediss://` (TLS) URL, else an `invalid_request` naming the flag. */
export function checkRedisUrl(url: string, name = '--redis'): string {
  if (!/^rediss?:\/\/./.test(url)) {
    throw new SvcError('invalid_request', `${name} must be a redis:// or rediss:// URL; got '${redactDatabaseUrl(url)}'`, {
      param: name.replace(/^--/, ''),
    });
  }
  return url;
}

/** A `postgres://` or `postgresql://` URL, else an `invalid_request` naming the flag. */
export function checkDatabaseUrl(url: string, name = '--database'): string {
  if (!/^postgres(ql)?:\/\/./.test(url)) {
    throw new SvcError('invalid_request', `${name} must be a postgres:// URL; got '${redactDatabaseUrl(url)}'`, {
      param: name.replace(/^--/, ''),
    });
  }
  return url;
}

/** A URL in a text: its scheme, then everything up to a space or a quote. */
const kUrl = /([a-z][a-z0-9+.-]*:\/\/)([^\s'"<>]*)/gi;
/** A password given as a parameter: a URL's `?password=` or `&sslpassword=`, libpq's `password=...` form. */
const kPasswordParameter = /\b((?:ssl)?pass(?:word)?|passwd|pwd)=(?:'(?:[^'\\]|\\.)*'|[^\s&#'"]*)/gi;

/**
 * A connection string (PostgreSQL, Redis), or any text holding some, as logs and messages may show it: each URL's
 * password and each `password=` parameter become `***`. The one redaction for every place that shows a database or
 * Redis URL (the start-up line, a refused flag, a lost connection). A URL's user information ends at its last `@`, so
 * a password holding `@`, `:`, `/` or `?` is hidden whole; when in doubt it hides more, never less.
 *
 * @example
 * ```ts
 * redactDatabaseUrl('postgres://svc:p@ss:w0rd@db.internal:5432/svc'); // 'postgres://svc:***@db.internal:5432/svc'
 * redactDatabaseUrl('postgres://svc@db.internal/svc?sslmode=require&password=s3cret'); // 'postgres://svc@db.internal/svc?sslmode=require&password=***'
 * redactDatabaseUrl('redis://:hunter2@cache.internal:6379'); // 'redis://:***@cache.internal:6379'
 * ```
 */
export function redactDatabaseUrl(text: string): string {
  const urls = text.replace(kUrl, (_url, scheme: string, rest: string) => {
    const at = rest.lastIndexOf('@');
    const colon = rest.indexOf(':');
    // user:password@host: keep the user, hide all up to the last @ (a user alone, `svc@host`, is no secret).
    return colon === -1 || colon > at ? scheme + rest : `${scheme}${rest.slice(0, colon)}:***${rest.slice(at)}`;
  });
  return urls.replace(kPasswordParameter, '$1=***');
}

/** Where a service keeps its records and its model files. */
export interface ServiceLocation {
  /** The data directory: the SQLite file without a database, else only this replica's local cache. */
  dataDir: string;
  /** A PostgreSQL database shared by every replica (`postgres://...`); default: SQLite in `dataDir`. */
  database?: string;
  /**
   * The folder of model files (the hub), shared by every replica when they share a database. Default `<dataDir>/hub`
   * without a database; with one, the model files live in the database and `<dataDir>/model-cache` caches them.
   */
  artifactsDir?: string;
  /** With a database and no `artifactsDir`: the bytes of model files the local cache keeps at most. */
  modelCacheBytes?: number;
}

/** The folder of model files for a location. */
export function artifactsDirOf(location: ServiceLocation): string {
  return location.artifactsDir ?? join(location.dataDir, 'hub');
}

/** The store for a location: PostgreSQL (connected and migrated) when it names a database, else SQLite in `dataDir`. */
export async function openStore(location: ServiceLocation): Promise<Store> {
  return location.database === undefined ? SqliteStore.open(location.dataDir) : PostgresStore.open(checkDatabaseUrl(location.database));
}

function serviceOn(store: Store, runtime: LibraryRuntime, proxyModels: readonly string[], retention: RetentionOptions): SvcService {
  return new SvcService({ store, runtime, proxyModels, retention });
}

/**
 * The model runtime for a location: on the shared folder (or `<dataDir>/hub`), or, with a database and no folder,
 * on the database's artifact tables with this replica's cache in `<dataDir>/model-cache`.
 */
async function runtimeAt(location: ServiceLocation): Promise<LibraryRuntime> {
  if (location.database === undefined || location.artifactsDir !== undefined) {
    return new LibraryRuntime({ hub: artifactsDirOf(location) });
  }
  const cacheDir = join(location.dataDir, 'model-cache');
  const hub = await PostgresHub.open(checkDatabaseUrl(location.database), { cacheDir, maxCacheBytes: location.modelCacheBytes });
  return new LibraryRuntime({ hub });
}

/**
 * The service over a data directory: `<dataDir>/svc.sqlite` and the hub in
 * `<dataDir>/hub/<org>/<model_id>`. The job runner starts with `service.start()`.
 * {@link connectService} also opens a shared PostgreSQL database.
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
  return serviceOn(SqliteStore.open(dataDir), new LibraryRuntime({ hub: join(dataDir, 'hub') }), proxyModels, retention);
}

/**
 * The service at a location: on the PostgreSQL database it names (one of several replicas) or on the data
 * directory's SQLite file.
 *
 * @example
 * ```ts
 * const service = await connectService({ dataDir: './cache', database: 'postgres://svc@db.internal/svc', artifactsDir: '/mnt/models' });
 * await service.store.listOrganizations(); // [{ id: 'acme', createdAt: 1763790000000, proxyAccess: false }]
 * await service.close();
 * ```
 */
export async function connectService(
  location: ServiceLocation,
  proxyModels: readonly string[] = proxyModelsFromEnv(),
  retention: RetentionOptions = {},
): Promise<SvcService> {
  const store = await openStore(location);
  try {
    return serviceOn(store, await runtimeAt(location), proxyModels, retention);
  } catch (error) {
    await store.close();
    throw error;
  }
}
