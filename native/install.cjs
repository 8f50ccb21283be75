// The package's install step. Uses the prebuilt addon under prebuilds/ when one loads on
// this platform; otherwise (or with --build-from-source) builds from source and says so:
// with cmake-js when it and cmake are at hand (a clone of the repository has both), else
// with node-gyp from binding.gyp, which needs only node-addon-api (an optional peer
// dependency, since prebuilt users never need it) and npm's own node-gyp.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const target = `${process.platform}-${process.arch}`;

function say(line) {
  console.log(`svc-classify: ${line}`);
}

function resolvable(name) {
  try {
    require.resolve(`${name}/package.json`, { paths: [root] });
    return true;
  } catch {
    return false;
  }
}

function onPath(command) {
  return spawnSync(command, ['--version'], { stdio: 'ignore' }).status === 0;
}

function prebuiltAddon() {
  process.env.PREBUILDS_ONLY = '1'; // node-gyp-build: look in prebuilds/ only, not at build/
  try {
    const file = require('node-gyp-build').path(root);
    require(file); // it must also load: a prebuild for a newer C library would not
    return file;
  } catch {
    return null;
  }
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status === 0;
}

function buildFromSource() {
  if (resolvable('cmake-js') && onPath('cmake')) {
    say('building the addon from source with cmake-js');
    return run(process.execPath, [require.resolve('cmake-js/bin/cmake-js', { paths: [root] }), 'compile', '--log-level', 'warn']);
  }
  if (resolvable('node-addon-api')) {
    // npm hands its bundled node-gyp to install scripts in npm_config_node_gyp.
    const gyp = process.env.npm_config_node_gyp;
    say(`building the addon from source with node-gyp (binding.gyp)`);
    return gyp ? run(process.execPath, [gyp, 'rebuild']) : run('node-gyp', ['rebuild']);
  }
  console.error(
    `svc-classify: no prebuilt addon for ${target} in this package, and nothing to build one with.\n` +
      'To build from source here, add node-addon-api (the C++ headers) and rebuild:\n' +
      '  npm install node-addon-api && npm rebuild svc-classify --build-from-source\n' +
      'This needs python3, make and a C++17 compiler (g++ 10+ or clang 11+).',
  );
  return false;
}

const forced = /^(true|1|svc-classify)$/.test(process.env.npm_config_build_from_source ?? '');
if (!forced) {
  const file = prebuiltAddon();
  if (file) {
    say(`using the prebuilt addon ${path.relative(root, file)}`);
    process.exit(0);
  }
  if (fs.existsSync(path.join(root, 'prebuilds'))) say(`no prebuilt addon loads on ${target}`);
}
process.exit(buildFromSource() ? 0 : 1);
