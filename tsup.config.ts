import { defineConfig } from 'tsup';

// Three entry points: the library, the pool's worker (piscina loads it by file
// name, so it must be its own file), and the `svc` command.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    worker: 'src/pool/worker.ts',
    cli: 'src/cli/main.ts',
  },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts' } },
  sourcemap: true,
  clean: true,
  shims: true,
  target: 'node20',
  splitting: false,
});
