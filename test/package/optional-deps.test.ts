// The service's packages are optionalDependencies: an install where they are absent (better-sqlite3 failed to build,
// or `--omit=optional`) still runs the library, and the commands that need them say what is missing and how to get it.
// The tree here is real: svc-classify's built files in a fresh node_modules that holds every package of the
// repository's except the optional ones, run with --preserve-symlinks so that nothing resolves back to the repository.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { installCommand, missingPackageMessage, requireOptional } from '../../src/optional-deps.js';
import { expectFreshBundle, kRepoRoot, runNode } from '../_support/cli.js';

const kManifest = JSON.parse(readFileSync(join(kRepoRoot, 'package.json'), 'utf8')) as {
  optionalDependencies: Record<string, string>;
};
const kOptional = Object.keys(kManifest.optionalDependencies);

let app: string;
let pkg: string;

beforeAll(() => {
  expectFreshBundle();
  app = mkdtempSync(join(tmpdir(), 'svc-optional-'));
  pkg = join(app, 'node_modules', 'svc-classify');
  mkdirSync(join(pkg, 'node_modules'), { recursive: true });
  for (const entry of ['package.json', 'dist', 'bin', 'build', 'native']) symlinkSync(join(kRepoRoot, entry), join(pkg, entry));
  const modules = join(kRepoRoot, 'node_modules');
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.') || kOptional.includes(name)) continue;
    if (name.startsWith('@')) {
      // A scope: its other packages stay (Fastify's helpers, @types/node), the optional ones go.
      mkdirSync(join(pkg, 'node_modules', name));
      for (const inner of readdirSync(join(modules, name))) {
        if (!kOptional.includes(`${name}/${inner}`)) symlinkSync(join(modules, name, inner), join(pkg, 'node_modules', name, inner));
      }
      continue;
    }
    symlinkSync(join(modules, name), join(pkg, 'node_modules', name));
  }
  writeFileSync(join(app, 'package.json'), '{ "name": "app", "private": true, "type": "module" }\n');
});
afterAll(() => rmSync(app, { recursive: true, force: true }));

function inApp(args: string[]): ReturnType<typeof runNode> {
  return runNode(['--preserve-symlinks', '--preserve-symlinks-main', ...args]);
}

describe('an install without the optional packages', () => {
  it('has none of them to resolve', async () => {
    const script = `import { createRequire } from 'node:module';
      const require = createRequire(${JSON.stringify(join(pkg, 'dist', 'index.js'))});
      for (const name of [...${JSON.stringify(kOptional)}, 'piscina']) {
        try { require.resolve(name); console.log('found ' + name); } catch {}
      }`;
    const result = await inApp(['--input-type=module', '-e', script]);
    expect(result).toMatchObject({ code: 0, stdout: 'found piscina\n' });
  });

  it('runs the library: svc-classify imports and svc info answers', async () => {
    const script = `const lib = await import(${JSON.stringify(join(pkg, 'dist', 'index.js'))}); console.log(typeof lib.train, typeof lib.Classifier);`;
    expect(await inApp(['--input-type=module', '-e', script])).toMatchObject({ code: 0, stdout: 'function function\n' });
    const info = await inApp([join(pkg, 'bin', 'svc.js'), 'info', '--json']);
    expect(info.code).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ version: expect.any(String), cpu: expect.any(Object) });
  });

  it('svc serve names every missing server package and the command that installs them', async () => {
    const result = await inApp([join(pkg, 'bin', 'svc.js'), 'serve', '--data', join(app, 'data')]);
    const names = ['fastify', '@fastify/rate-limit', 'fastify-type-provider-zod', 'prom-client'];
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `svc serve: the HTTP server (svc serve, svc-classify/server) needs ${names.join(', ')}, optional dependencies of ` +
        `svc-classify that are not installed here. Install them with: npm install ${names.map((n) => `${n}@${kManifest.optionalDependencies[n]}`).join(' ')}\n`,
    });
  });

  it("svc-classify/server, imported or required, names every missing server package instead of the loader's first miss", async () => {
    const names = ['fastify', '@fastify/rate-limit', 'fastify-type-provider-zod', 'prom-client'];
    const message =
      `SvcError: the HTTP server (svc serve, svc-classify/server) needs ${names.join(', ')}, optional dependencies of ` +
      `svc-classify that are not installed here. Install them with: npm install ${names.map((n) => `${n}@${kManifest.optionalDependencies[n]}`).join(' ')}\n`;
    // The built entries of the package.json "exports" map: ESM for import, CommonJS for require.
    const loads = [
      ['module', `await import(${JSON.stringify(join(pkg, 'dist', 'server.js'))})`],
      ['commonjs', `require(${JSON.stringify(join(pkg, 'dist', 'server.cjs'))})`],
    ];
    for (const [type, load] of loads) {
      const script = `try { ${load}; console.log('loaded'); } catch (error) { console.log(\`\${error.name}: \${error.message}\`); console.log(error.code); }`;
      expect(await inApp([`--input-type=${type}`, '-e', script])).toEqual({ code: 0, stdout: `${message}native_missing\n`, stderr: '' });
    }
  });

  it('an operator command on a data directory says SQLite needs better-sqlite3, or PostgreSQL', async () => {
    const result = await inApp([join(pkg, 'bin', 'svc.js'), 'orgs', 'create', 'acme', '--data', join(app, 'data')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'svc orgs: the embedded SQLite store (svc serve without --database, the operator commands on a data directory) ' +
        'needs better-sqlite3, an optional dependency of svc-classify that is not installed here (better-sqlite3 builds ' +
        'from source where its prebuilt binary cannot be downloaded, which needs python3, make and a C++ compiler). ' +
        `Install it with: npm install better-sqlite3@${kManifest.optionalDependencies['better-sqlite3']}; ` +
        'or use PostgreSQL instead: --database postgres://... (no SQLite needed)\n',
    );
  });
});

describe('requireOptional', () => {
  it('loads a package that is there', () => {
    expect(typeof requireOptional<{ Pool: unknown }>('pg').Pool).toBe('function');
  });

  it('refuses a missing one with native_missing and the install command', () => {
    let caught: unknown;
    try {
      requireOptional('svc-classify-absent-package', 'do without');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SvcError);
    expect(caught).toMatchObject({
      code: 'native_missing',
      message:
        'svc-classify-absent-package needs svc-classify-absent-package, an optional dependency of svc-classify that is ' +
        'not installed here. Install it with: npm install svc-classify-absent-package; or do without',
    });
  });

  it('asks for the versions svc-classify declares', () => {
    expect(installCommand(['pg', 'redis'])).toBe(
      `npm install pg@${kManifest.optionalDependencies.pg} redis@${kManifest.optionalDependencies.redis}`,
    );
    expect(missingPackageMessage(['redis'])).toBe(
      `the Redis request counts (--redis) needs redis, an optional dependency of svc-classify that is not installed here. ` +
        `Install it with: npm install redis@${kManifest.optionalDependencies.redis}`,
    );
  });
});
