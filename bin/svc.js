#!/usr/bin/env node
// The `svc` command; the code lives in dist/cli.js (built by tsup on install).
import('../dist/cli.js').catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
