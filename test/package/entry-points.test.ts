// `svc-classify` is the library alone: an app that only trains or predicts never loads Fastify or
// SQLite; `svc-classify/server` brings the service pieces. Checked in a fresh process, where the
// CommonJS module cache lists every package the import pulled in (ESM imports of CJS land there too).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
    const declarations = readdirSync(join(kRepoRoot, 'dist', 'types'), { recursive: true, encoding: 'utf8' }).filter((file) =>
      /\.d\.c?ts$/.test(file),
    );
    expect(declarations).toContain(join('server', 'index.d.ts'));
    const imported = new Set(
      declarations.flatMap((file) =>
        [
          ...readFileSync(join(kRepoRoot, 'dist', 'types', file), 'utf8')
            .replace(/\/\*[\s\S]*?\*\//g, '')
            .matchAll(/(?:from |import\()['"]([^'".][^'"]*)['"]/g),
        ].map(
          (m) => m[1], // imports outside comments: TSDoc examples import what they like
        ),
      ),
    );
    const untyped = [...imported]
      .filter((name) => !name.startsWith('node:') && name !== 'svc-classify')
      .map((name) => (name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]))
      .filter((name) => {
        const manifest = JSON.parse(readFileSync(join(kRepoRoot, 'node_modules', name, 'package.json'), 'utf8')) as Record<string, unknown>;
        const ownTypes =
          manifest.types !== undefined || manifest.typings !== undefined || JSON.stringify(manifest.exports ?? {}).includes('"types"');
        return !(name in installed) || (!ownTypes && !(`@types/${name}` in installed));
      });
    expect(untyped).toEqual([]);
  });

  it('says where it runs, so that npm refuses the rest at install, and packs its prebuilt addon', () => {
    const pkg = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as Record<string, unknown>;
    // musl (Alpine) has no prebuilt and the addon is built for glibc: refused by npm instead of failing at load.
    expect([pkg.os, pkg.cpu, pkg.libc, pkg.engines]).toEqual([['linux'], ['x64', 'arm64'], ['glibc'], { node: '>=20.17' }]);
    // `npm pack` builds prebuilds/<platform>/ itself (.ci/pack-install checks the tarball holds it).
    expect((pkg.scripts as Record<string, string>).prepack).toBe('npm run build:prebuild');
  });

  it('maps each entry to its own build and its declarations, one file per module', () => {
    const pkg = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as { types: string; exports: Record<string, unknown> };
    expect([pkg.types, pkg.exports['.'], pkg.exports['./server']]).toEqual([
      './dist/types/index.d.ts',
      {
        import: { types: './dist/types/index.d.ts', default: './dist/index.js' },
        require: { types: './dist/types/index.d.cts', default: './dist/index.cjs' },
      },
      {
        import: { types: './dist/types/server/index.d.ts', default: './dist/server.js' },
        require: { types: './dist/types/server/index.d.cts', default: './dist/server.cjs' },
      },
    ]);
    // Go-to-definition lands in the file named after the module, not in a chunk with a hashed name.
    expect(readFileSync(join(kRepoRoot, 'dist', 'types', 'predict', 'classifier.d.ts'), 'utf8')).toMatch(
      /^export declare class Classifier\b/m,
    );
    const files = readdirSync(join(kRepoRoot, 'dist'), { recursive: true, encoding: 'utf8' });
    expect(files.filter((file) => /\.d\.c?ts$/.test(file) && !file.startsWith('types/'))).toEqual([]);
  });

  it('type-checks in a consumer with skipLibCheck: false, from ESM and from CommonJS', () => {
    // A project with svc-classify in node_modules (its package.json and dist/) beside the repository's packages.
    const app = mkdtempSync(join(tmpdir(), 'svc-types-'));
    try {
      const modules = join(app, 'node_modules');
      mkdirSync(join(modules, 'svc-classify'), { recursive: true });
      for (const entry of ['package.json', 'dist']) symlinkSync(join(kRepoRoot, entry), join(modules, 'svc-classify', entry));
      for (const name of readdirSync(join(kRepoRoot, 'node_modules'))) {
        if (!name.startsWith('.')) symlinkSync(join(kRepoRoot, 'node_modules', name), join(modules, name));
      }
      const use = (lib: string, server: string) =>
        `const request: ${lib}.TrainRequest = { model: 'svc-small', task_type: 'binary-classification', examples: [] };\n` +
        `export const trained: Promise<${lib}.Classifier<${lib}.TaskType>> = ${lib}.train(request);\n` +
        `export const hub: ${lib}.Hub = new ${lib}.DirectoryHub('./hub');\n` +
        `export const runtime = new ${server}.LibraryRuntime({ hub: './hub' });\n` +
        `export const routes: typeof ${server}.svcRoutes = ${server}.svcRoutes;\n`;
      writeFileSync(
        join(app, 'esm.mts'),
        `import * as lib from 'svc-classify';\nimport * as server from 'svc-classify/server';\n${use('lib', 'server')}`,
      );
      writeFileSync(
        join(app, 'cjs.cts'),
        `import lib = require('svc-classify');\nimport server = require('svc-classify/server');\n${use('lib', 'server')}`,
      );
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            skipLibCheck: false,
            noEmit: true,
            types: ['node'],
          },
          files: ['esm.mts', 'cjs.cts'],
        }),
      );
      const tsc = spawnSync(process.execPath, [join(kRepoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
        encoding: 'utf8',
      });
      expect(tsc.stdout + tsc.stderr).toBe('');
      expect(tsc.status).toBe(0);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  }, 300_000);
});
