import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { SvcError } from './errors.js';
import { packageRoot } from './native/load.js';

// The service's packages are optionalDependencies: the library (train, predict) needs none of them, and
// better-sqlite3 compiles itself where its prebuilt binary cannot be downloaded, which needs python3, make and a C++
// compiler. A failed build must not fail the library's install; a command that needs the package says what is
// missing, what it is for and how to get it, instead of the loader's "Cannot find package".

/** What each optional package is for, as the message for a missing one says it. */
export const kOptionalPackages: Readonly<Record<string, string>> = Object.freeze({
  'better-sqlite3': 'the embedded SQLite store (svc serve without --database, the operator commands on a data directory)',
  pg: 'PostgreSQL (--database postgres://...)',
  redis: 'the Redis request counts (--redis)',
  fastify: 'the HTTP server (svc serve, svc-classify/server)',
  '@fastify/rate-limit': 'the HTTP server (svc serve, svc-classify/server)',
  'fastify-type-provider-zod': 'the HTTP server (svc serve, svc-classify/server)',
  'prom-client': 'the HTTP server (svc serve, svc-classify/server)',
});

const kRequire = createRequire(import.meta.url);

/** The HTTP server's packages (svc serve, `svc-classify/server`): checked together, so that one message names them all. */
export const kServerPackages: readonly string[] = Object.freeze([
  'fastify',
  '@fastify/rate-limit',
  'fastify-type-provider-zod',
  'prom-client',
]);

/** The version range svc-classify asks for (its package.json), so that the install command gets a matching one. */
export function optionalPackageRange(name: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
      optionalDependencies?: Record<string, string>;
    };
    return manifest.optionalDependencies?.[name];
  } catch {
    return undefined;
  }
}

/** `npm install a@^1 b@^2` for the packages named. */
export function installCommand(names: readonly string[]): string {
  return `npm install ${names
    .map((name) => {
      const range = optionalPackageRange(name);
      return range === undefined ? name : `${name}@${range}`;
    })
    .join(' ')}`;
}

/** The optional packages among `names` that cannot be resolved from svc-classify's own folder. */
export function missingPackages(names: readonly string[]): string[] {
  return names.filter((name) => {
    try {
      kRequire.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * The message for a missing optional package: what it is for and how to get it. `alternative` adds a way around it
 * (for SQLite: `--database postgres://...`).
 */
export function missingPackageMessage(names: readonly string[], alternative?: string): string {
  const uses = [...new Set(names.map((name) => kOptionalPackages[name] ?? name))].join(' and ');
  const one = names.length === 1;
  const build = names.includes('better-sqlite3')
    ? ' (better-sqlite3 builds from source where its prebuilt binary cannot be downloaded, which needs python3, make and a C++ compiler)'
    : '';
  return (
    `${uses} needs ${names.join(', ')}, ${one ? 'an optional dependency' : 'optional dependencies'} of svc-classify ` +
    `that ${one ? 'is' : 'are'} not installed here${build}. Install ${one ? 'it' : 'them'} with: ${installCommand(names)}` +
    (alternative === undefined ? '' : `; or ${alternative}`)
  );
}

/**
 * Loads an optional CommonJS package now (not when the module that uses it is imported), or throws
 * `SvcError('native_missing')` with {@link missingPackageMessage}. A package that is there but fails to load (a
 * native build for another Node) keeps its own error as the cause.
 *
 * @example
 * ```ts
 * const Database = requireOptional<typeof import('better-sqlite3')>('better-sqlite3', 'use --database postgres://...');
 * ```
 */
export function requireOptional<T>(name: string, alternative?: string): T {
  try {
    return kRequire(name) as T;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const missing = code === 'MODULE_NOT_FOUND' && missingPackages([name]).length === 1;
    const message = missing
      ? missingPackageMessage([name], alternative)
      : `${kOptionalPackages[name] ?? name}: the package ${name} did not load (${error instanceof Error ? error.message : String(error)}). ` +
        `Reinstall it with: ${installCommand([name])}`;
    throw new SvcError('native_missing', message, { cause: error });
  }
}

/** Throws `SvcError('native_missing')` naming every missing server package and the command that installs them all. */
export function assertServerPackages(): void {
  const missing = missingPackages(kServerPackages);
  if (missing.length > 0) throw new SvcError('native_missing', missingPackageMessage(missing));
}

// The built `svc-classify/server` (and `svc serve`) loads each server package through one of these two (tsup.config.ts
// routes the imports here): a missing package would otherwise fail in Node's loader with ERR_MODULE_NOT_FOUND for the
// first one it meets, before any code of ours runs, in ESM and CommonJS alike.

/** The server package `name` for the CommonJS build, after {@link assertServerPackages}. */
export function requireServerPackage(name: string): unknown {
  assertServerPackages();
  return kRequire(name);
}

/** The server package `name`'s module namespace for the ESM build, after {@link assertServerPackages}. */
export async function importServerPackage(name: string): Promise<Record<string, unknown>> {
  assertServerPackages();
  return (await import(name)) as Record<string, unknown>;
}
