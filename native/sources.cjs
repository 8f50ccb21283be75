// Lists native sources for binding.gyp, the same way CMakeLists.txt finds them,
// so node-gyp users build exactly what cmake-js builds.
// Usage: node native/sources.cjs core|avx2|avx512|neon|dotprod|bindings
'use strict';
const fs = require('node:fs');
const path = require('node:path');

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? walk(full) : [full];
  });
}

const root = path.join(__dirname, '..');
const rel = (file) => path.relative(root, file).split(path.sep).join('/');
const core = walk(path.join(__dirname, 'core'))
  .filter((f) => f.endsWith('.cc') && !f.endsWith('_test.cc'))
  .map(rel)
  .sort();
// *_avx512 / *_avx2 are x86-64 kernels, *_neon / *_dotprod aarch64 ones (binding.gyp
// builds each group only for its target_arch); `core` is the portable rest.
const isaSuffix = /_(avx512|avx2|neon|dotprod)\.cc$/;
const kinds = {
  avx512: core.filter((f) => f.endsWith('_avx512.cc')),
  avx2: core.filter((f) => f.endsWith('_avx2.cc')),
  neon: core.filter((f) => f.endsWith('_neon.cc')),
  dotprod: core.filter((f) => f.endsWith('_dotprod.cc')),
  core: core.filter((f) => !isaSuffix.test(f)),
  bindings: fs.readdirSync(path.join(__dirname, 'bindings')).filter((f) => f.endsWith('.cc')).map((f) => `native/bindings/${f}`).sort(),
};
const kind = process.argv[2];
if (!(kind in kinds)) {
  console.error(`usage: node native/sources.cjs ${Object.keys(kinds).join('|')}`);
  process.exit(2);
}
console.log(kinds[kind].join(' '));
