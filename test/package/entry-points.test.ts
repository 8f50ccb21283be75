// `svc-classify` is the library alone: an app that only trains or predicts never loads Fastify or
// SQLite; `svc-classify/server` brings the service pieces. Checked in a fresh process, where the
// CommonJS module cache lists every package the import pulled in (ESM imports of CJS land there too).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { kRepoRoot } from '../_support/cli.js';

function packagesLoadedBy(entry: string): string[] {
  const script = `
    import { createRequire } from 'node:module';
    const cache = createRequire(import.meta.url).cache;
    await import(${JSON.stringify(join(kRepoRoot, entry))});
    const names = Object.keys(cache).map((p) => /node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)/.exec(p)?.[1]).filter(Boolean);
    console.log(JSON.stringify([...new Set(names)].sort()));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: kRepoRoot });
  return JSON.parse(out.toString()) as string[];
}

describe('package entry points', () => {
  it('svc-classify loads neither fastify nor better-sqlite3 nor pg; svc-classify/server loads fastify, not the drivers', () => {
    const library = packagesLoadedBy('src/index.ts');
    expect(library.filter((name) => /fastify|better-sqlite3|^pg|redis|prom-client/.test(name))).toEqual([]);
    const server = packagesLoadedBy('src/server/index.ts');
    expect(server).toContain('fastify');
    expect(server).toContain('prom-client');
    // The database drivers are optional dependencies, loaded when a store opens: `--database postgres://` needs no
    // better-sqlite3, and SQLite needs no pg.
    expect(server.filter((name) => /better-sqlite3|^pg|redis/.test(name))).toEqual([]);
  });

  it('declares the type packages its published declarations import (a consumer with skipLibCheck: false needs them)', () => {
    const pkg = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const installed = { ...pkg.dependencies, ...pkg.optionalDependencies };
    const declarations = readdirSync(join(kRepoRoot, 'dist')).filter((file) => file.endsWith('.d.ts'));
    expect(declarations).toContain('server.d.ts');
    const imported = new Set(
      declarations.flatMap((file) =>
        [...readFileSync(join(kRepoRoot, 'dist', file), 'utf8').matchAll(/from '([^'.][^']*)'/g)].map((m) => m[1]),
      ),
    );
    const untyped = [...imported]
      .filter((name) => !name.startsWith('node:') && name !== 'svc-classify')
      .map((name) => (name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]))
      .filter((name) => {
        const manifest = JSON.parse(readFileSync(join(kRepoRoot, 'node_modules', name, 'package.json'), 'utf8')) as Record<string, unknown>;
        const ownTypes = manifest.types !== undefined || manifest.typings !== undefined || JSON.stringify(manifest.exports ?? {}).includes('"types"');
        return !(name in installed) || (!ownTypes && !(`@types/${name}` in installed));
      });
    expect(untyped).toEqual([]);
  });

  it('maps the server subpath to its own build', () => {
    const pkg = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(pkg.exports['./server']).toEqual({
      import: { types: './dist/server.d.ts', default: './dist/server.js' },
      require: { types: './dist/server.d.cts', default: './dist/server.cjs' },
    });
  });
});
