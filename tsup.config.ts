import { readFileSync } from 'node:fs';

import { defineConfig } from 'tsup';

// tsup leaves dependencies and peerDependencies to the importer's node_modules but would bundle optional ones: the
// service's packages (optionalDependencies, so the library installs without them) stay external too.
const { optionalDependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8')) as { optionalDependencies?: Record<string, string> };

// Four entry points: the library (`svc-classify`), the service pieces (`svc-classify/server`),
// the pool's worker (piscina loads it by file name, so it must be its own file), and the `svc`
// command. Shared code goes to chunks so that both package entries use one SvcError class.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    server: 'src/server/index.ts',
    worker: 'src/pool/worker.ts',
    cli: 'src/cli/main.ts',
  },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', server: 'src/server/index.ts' } },
  sourcemap: true,
  clean: true,
  shims: true,
  target: 'node20',
  splitting: true,
  external: Object.keys(optionalDependencies),
});
