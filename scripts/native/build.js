// Builds the addon from source when it is missing or older than its inputs,
// so a clone needs no install script: `npm start`, `npm test` and jest's
// set-up call ensureNative() first (a few ms when nothing changed). The
// published package carries prebuilt binaries instead (prebuild.js), and
// never runs this.
//
// node-gyp runs in src/native, beside binding.gyp, and builds into
// src/native/build. Fresh means build/Release/rx_verbs.node exists there and
// build/.native-digest holds inputs.js's digest. Otherwise `node-gyp
// configure` runs when the build files are missing or binding.gyp's inputs
// changed (the probes' answers), then `node-gyp build`, which make keeps
// incremental.
//
//   node scripts/native/build.js            build if stale
//   node scripts/native/build.js --force    node-gyp rebuild
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { root, GYP_DIR, BUILD_DIR, probe, inputDigest, nodedirArgs } = require('./inputs');

const BUILD = path.join(root, BUILD_DIR);
const ADDON = path.join(BUILD, 'Release', 'rx_verbs.node');
const STAMP = path.join(BUILD, '.native-digest');
const CONFIG_STAMP = path.join(BUILD, '.configure-digest');

function nodeGyp(args) {
  const bin = require.resolve('node-gyp/bin/node-gyp.js', { paths: [root] });
  const jobs = String(Math.max(1, os.availableParallelism ? os.availableParallelism() : os.cpus().length));
  const r = spawnSync(process.execPath, [bin, ...args, '--loglevel=warn', ...(args[0] === 'configure' ? nodedirArgs() : ['-j', jobs])], {
    cwd: path.join(root, GYP_DIR),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`node-gyp ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
}

const read = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

/**
 * Builds the addon unless it is fresh. Throws with node-gyp's exit status
 * when the build fails (its output went to the terminal).
 * @returns {'fresh' | 'built'}
 */
function ensureNative({ force = false, log = (m) => console.error(m) } = {}) {
  const probes = probe();
  const digest = inputDigest(probes);
  if (!force && fs.existsSync(ADDON) && read(STAMP) === digest) return 'fresh';
  const configDigest = `${probes.ibverbs} ${probes.rdmacm} ${fs.readFileSync(path.join(root, GYP_DIR, 'binding.gyp'), 'utf8')}`;
  const providers = [probes.ibverbs && 'ibverbs', probes.rdmacm && 'rdma_cm'].filter(Boolean);
  log(`rx-verbs: building the native addon (providers: soft${providers.map((p) => `, ${p}`).join('')})`);
  if (force || !fs.existsSync(path.join(BUILD, 'Makefile')) || read(CONFIG_STAMP) !== configDigest) {
    nodeGyp(['configure']);
    fs.writeFileSync(CONFIG_STAMP, configDigest);
  }
  nodeGyp(['build']);
  fs.writeFileSync(STAMP, digest);
  return 'built';
}

module.exports = { ensureNative, ADDON, STAMP };

if (require.main === module) {
  try {
    ensureNative({ force: process.argv.includes('--force') });
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
