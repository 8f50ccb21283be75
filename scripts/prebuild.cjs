// `npm pack`'s prepack step: puts the prebuilt addon for this platform in prebuilds/, so that the packed tarball
// installs without a compiler. Compiling takes minutes and node-gyp prints a line per source file, so it compiles
// only when nothing current is at hand, in this order:
//   1. prebuilds/<platform>-<arch>/ already holds one newer than every native source: kept as it is;
//   2. build/Release/svc_classify.node (what `npm install` or `npm run build:native` built in the clone) is newer
//      than every native source: copied there and stripped, as prebuildify would;
//   3. otherwise prebuildify compiles it, its output kept in build/prebuild.log and shown only when it fails.
// --force (or SVC_PREBUILD_FORCE=1) always compiles.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const pkg = require(path.join(root, 'package.json'));
const target = `${process.platform}-${process.arch}`;
// prebuildify's name for an N-API build tagged with the C library (--napi --tag-libc): the package is glibc-only.
const prebuilt = path.join(root, 'prebuilds', target, `${pkg.name}.glibc.node`);
const compiled = path.join(root, 'build', 'Release', 'svc_classify.node');

function say(line) {
  console.log(`svc-classify prebuild: ${line}`);
}

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? walk(full) : [full];
  });
}

/** The newest modification time among the files the addon is built from (C++ tests and generators excluded). */
function newestSource() {
  const sources = walk(path.join(root, 'native'))
    .filter((file) => !file.endsWith('_test.cc') && !file.endsWith('.py') && !file.endsWith('install.cjs'))
    .concat(['CMakeLists.txt', 'binding.gyp'].map((file) => path.join(root, file)));
  return Math.max(...sources.map((file) => fs.statSync(file).mtimeMs));
}

function newerThan(file, time) {
  return fs.existsSync(file) && fs.statSync(file).mtimeMs > time;
}

/** Loads the addon in a child process, so that a broken file says so here rather than in a user's install. */
function loads(file) {
  return spawnSync(process.execPath, ['-e', `require(${JSON.stringify(file)})`], { stdio: 'ignore' }).status === 0;
}

const relative = (file) => path.relative(root, file);
const forced = process.argv.includes('--force') || process.env.SVC_PREBUILD_FORCE === '1';
const sources = newestSource();

if (!forced && newerThan(prebuilt, sources) && loads(prebuilt)) {
  say(`${relative(prebuilt)} is newer than the native sources: kept`);
  process.exit(0);
}
if (!forced && newerThan(compiled, sources) && loads(compiled)) {
  fs.mkdirSync(path.dirname(prebuilt), { recursive: true });
  fs.copyFileSync(compiled, prebuilt);
  const stripped = spawnSync('strip', ['--strip-all', prebuilt], { stdio: 'ignore' }).status === 0;
  say(`${relative(prebuilt)} copied from ${relative(compiled)}${stripped ? ' and stripped' : ' (strip not found: unstripped)'}`);
  process.exit(0);
}

const started = Date.now();
say(`compiling ${relative(prebuilt)} with prebuildify (node-gyp); a few minutes`);
const bin = require.resolve('prebuildify/bin.js', { paths: [root] });
const args = ['--napi', '--strip', '--tag-libc', '--target', `node@${process.versions.node}`];
const result = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
const log = path.join(root, 'build', 'prebuild.log');
fs.mkdirSync(path.dirname(log), { recursive: true });
fs.writeFileSync(log, `${result.stdout ?? ''}${result.stderr ?? ''}`);
if (result.status !== 0 || !fs.existsSync(prebuilt)) {
  process.stderr.write(fs.readFileSync(log, 'utf8'));
  console.error(
    `svc-classify prebuild: prebuildify failed (exit ${result.status ?? result.signal}); its output is above and in ${relative(log)}`,
  );
  process.exit(1);
}
say(`built ${relative(prebuilt)} in ${Math.round((Date.now() - started) / 1000)} s (compiler output in ${relative(log)})`);
