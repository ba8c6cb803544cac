// `npm run test:headerless`: the test suite against the addon as a machine
// without rdma-core's headers builds it (a newcomer's `npm install` from a
// clone). Such a build has only the soft provider; every test must still
// pass there, and the errors must still name what is missing.
//
// The addon is built from a copy of the sources in a folder of its own (the
// normal src/native/build is never touched) with /usr/include/infiniband
// hidden: in a private mount namespace (`unshare -m`, as root) on a machine
// that has the headers, directly on one that has none. The build is reused
// while its inputs are unchanged (scripts/native/inputs.js's digest). Then
// jest runs with RX_VERBS_ADDON pointing at it (child processes inherit it).
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { root } = require('./step');
const { runJest } = require('./jest');
const { ensureFreshDist } = require('./dist');
const { GYP_DIR, BUILD_DIR, copySources, inputDigest, nodedirArgs } = require('../native/inputs');

const say = (line) => console.log(`[test:headerless] ${line}`);
const HEADERS = '/usr/include/infiniband';

function hasCommand(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** The command prefix that runs a build with rdma-core's headers out of sight. */
function hideHeaders() {
  if (!fs.existsSync(path.join(HEADERS, 'verbs.h'))) return [];
  if (process.getuid && process.getuid() === 0 && hasCommand('unshare')) {
    return ['unshare', '-m', 'sh', '-c', `mount -t tmpfs tmpfs ${HEADERS} && exec "$@"`, 'sh'];
  }
  throw new Error(
    `rdma-core's headers are installed (${HEADERS}) and hiding them needs a private mount namespace: run as root (unshare -m)`,
  );
}

/** Builds the headerless addon unless a build of the same inputs is there; returns its path. */
function buildHeaderless(out) {
  const tree = path.join(out, 'tree');
  const addon = path.join(tree, BUILD_DIR, 'Release', 'rx_verbs.node');
  const digest = inputDigest({ ibverbs: false, rdmacm: false });
  const stamp = path.join(out, 'digest');
  if (fs.existsSync(addon) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) {
    say(`reusing the headerless addon in ${path.relative(root, tree)}`);
    return addon;
  }
  fs.rmSync(tree, { recursive: true, force: true });
  copySources(tree);
  say(`building the addon without rdma-core's headers in ${path.relative(root, tree)}`);
  const gyp = path.join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const [cmd, ...pre] = [...hideHeaders(), process.execPath];
  const jobs = process.env.JOBS || 'max';
  const r = spawnSync(cmd, [...pre, gyp, 'rebuild', '-j', jobs, ...nodedirArgs()], {
    cwd: path.join(tree, GYP_DIR),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0 || !fs.existsSync(addon)) throw new Error(`the headerless build failed (exit ${r.status ?? r.signal})`);
  const check = spawnSync(process.execPath, ['-p', `require(${JSON.stringify(addon)}).hasIbverbs()`], { encoding: 'utf8' });
  if (check.stdout.trim() !== 'false') throw new Error(`the headerless addon has the ibverbs provider: the headers were not hidden`);
  fs.writeFileSync(stamp, digest);
  return addon;
}

/** The whole run; resolves jest's exit status. */
async function runHeaderless(jestArgs) {
  let addon;
  try {
    addon = buildHeaderless(path.resolve(process.env.RXV_HEADERLESS_DIR || path.join(root, 'node_modules', '.cache', 'rx-verbs-headerless')));
    ensureFreshDist({ log: say });
  } catch (err) {
    say(err.message);
    return 1;
  }
  return runJest(['--forceExit', ...jestArgs], { name: 'headerless', env: { ...process.env, RX_VERBS_ADDON: addon, RX_VERBS_BUILT_WITHOUT_HEADERS: '1' } });
}

module.exports = { runHeaderless };
