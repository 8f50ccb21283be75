import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import type { Plugin } from 'esbuild';
import { defineConfig } from 'tsup';

import { kServerPackages } from './src/optional-deps.js';

// tsup leaves dependencies and peerDependencies to the importer's node_modules but would bundle optional ones: the
// service's packages (optionalDependencies, so the library installs without them) stay external too.
const { optionalDependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8')) as { optionalDependencies?: Record<string, string> };

const kOptionalDeps = resolve('src/optional-deps.ts');

/**
 * The server's packages are optional: a plain `import Fastify from 'fastify'` in the built files would make
 * `import 'svc-classify/server'` without them fail in Node's loader (ERR_MODULE_NOT_FOUND for the first one it
 * meets) before any code of ours could say what is missing. Each import of one goes through a small module instead
 * that checks them all first (src/optional-deps.ts) and then hands over the package itself: by `import()` in the ESM
 * build (the same module a static import gives, so Fastify is the instance the app imports), by `require` in the
 * CommonJS one. Its named exports are the package's own, read here at build time.
 */
function serverPackages(): Plugin {
  const escaped = kServerPackages.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return {
    name: 'svc-server-packages',
    setup(build) {
      const cjs = build.initialOptions.define?.TSUP_FORMAT === JSON.stringify('cjs');
      build.onResolve({ filter: new RegExp(`^(${escaped.join('|')})$`) }, (args) => ({ path: args.path, namespace: 'svc-server-package' }));
      build.onLoad({ filter: /.*/, namespace: 'svc-server-package' }, async (args) => {
        const names = Object.keys((await import(args.path)) as object).filter(
          (name) => name !== 'default' && /^[A-Za-z_$][\w$]*$/.test(name),
        );
        const name = JSON.stringify(args.path);
        return {
          contents:
            `import { importServerPackage, requireServerPackage } from ${JSON.stringify(kOptionalDeps)};\n` +
            `const pkg = ${cjs ? `requireServerPackage(${name})` : `await importServerPackage(${name})`};\n` +
            // An ESM importer of a CommonJS package gets its module.exports as the default export.
            `export default ${cjs ? 'pkg' : 'pkg.default'};\n` +
            `export const { ${names.join(', ')} } = pkg;\n`,
          loader: 'js',
          resolveDir: resolve('.'),
        };
      });
    },
  };
}

/**
 * The declarations, one file per module (dist/types/predict/classifier.d.ts for src/predict/classifier.ts), so that
 * go-to-definition lands in a file named after the code: tsup's rolled-up declarations put every type the two
 * entries share in a chunk with a hashed name. tsc writes them (tsconfig.types.json); each gets a .d.cts twin whose
 * relative imports end in .cjs, for `require` (TypeScript reads a .d.ts of a "type": "module" package as ESM).
 */
function writeDeclarations(): void {
  execFileSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.types.json'], { stdio: 'inherit' });
  for (const file of readdirSync(join('dist', 'types'), { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.d.ts')) continue;
    const esm = readFileSync(join('dist', 'types', file), 'utf8');
    const cjs = esm.replace(/(from\s+|import\(\s*)(['"])(\.\.?\/[^'"]*)\.js\2/g, '$1$2$3.cjs$2');
    writeFileSync(join('dist', 'types', file.replace(/\.d\.ts$/, '.d.cts')), cjs);
  }
}

// Four entry points: the library (`svc-classify`), the service pieces (`svc-classify/server`),
// the pool's worker (piscina loads it by file name, so it must be its own file), and the `svc`
// command. Shared code goes to chunks so that both package entries use one SvcError class.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    server: 'src/server/index.ts',
    worker: 'src/worker/worker.ts',
    cli: 'src/cli/main.ts',
  },
  format: ['esm', 'cjs'],
  onSuccess: async () => writeDeclarations(),
  sourcemap: true,
  clean: true,
  shims: true,
  target: 'node20',
  splitting: true,
  external: Object.keys(optionalDependencies).filter((name) => !kServerPackages.includes(name)),
  esbuildPlugins: [serverPackages()],
});
