// `svc-classify` is the library alone: an app that only trains or predicts never loads Fastify or
// SQLite; `svc-classify/server` brings the service pieces. Checked in a fresh process, where the
// CommonJS module cache lists every package the import pulled in (ESM imports of CJS land there too).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

  it('maps the server subpath to its own build', () => {
    const pkg = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(pkg.exports['./server']).toEqual({
      import: { types: './dist/server.d.ts', default: './dist/server.js' },
      require: { types: './dist/server.d.cts', default: './dist/server.cjs' },
    });
  });
});
