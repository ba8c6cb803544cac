// Loads rx_verbs_bench.node, the native benchmark baselines (an opt-in
// target of binding.gyp, never part of the product addon), and builds it on
// request. Plain CommonJS so that the bench runner, the compiled suites and
// the test fixtures all load the same file. Types: addon.d.ts.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const { root, GYP_DIR, BUILD_DIR } = require('../../scripts/native/inputs');

/** How to build the bench addon by hand (for messages). */
const BUILD_HINT = `RXV_BENCH=1 npx node-gyp -C ${GYP_DIR} configure build (or \`npm run bench\`, which builds it)`;

/** Where the bench addon is: RX_VERBS_BENCH_ADDON (the sanitizer run) or the product addon's build folder. */
function addonPath() {
  return process.env.RX_VERBS_BENCH_ADDON || path.join(root, BUILD_DIR, 'Release', 'rx_verbs_bench.node');
}

/**
 * Builds (or brings up to date) the bench addon next to the product addon.
 * The build folder is configured with the bench target only when it lacks
 * it: a configured folder is rebuilt incrementally. Quiet unless it fails
 * (then the compiler's output goes to stderr). Returns the exit status.
 */
function build() {
  const gyp = path.join(root, 'node_modules', '.bin', 'node-gyp');
  const env = { ...process.env, RXV_BENCH: '1' };
  // node-gyp run directly does not read .npmrc: pass on a configured nodedir
  // (headers installed locally) as npm would.
  if (!env.npm_config_nodedir) {
    const r = spawnSync('npm', ['config', 'get', 'nodedir'], { encoding: 'utf8' });
    const dir = (r.stdout || '').trim();
    if (r.status === 0 && dir && !['undefined', 'null'].includes(dir)) env.npm_config_nodedir = dir;
  }
  const run = (args) => {
    const r = spawnSync(gyp, args, { cwd: path.join(root, GYP_DIR), env, encoding: 'utf8', maxBuffer: 64 << 20 });
    const status = r.status ?? 1;
    if (status !== 0) process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}\n`);
    return status;
  };
  const makefile = path.join(root, BUILD_DIR, 'Makefile');
  const configured = fs.existsSync(makefile) && fs.readFileSync(makefile, 'utf8').includes('rx_verbs_bench.target.mk');
  if (!configured && run(['configure']) !== 0) return 1;
  return run(['build']);
}

let loaded;
/** The bench addon; throws an error that says how to build it when it is missing. */
function load() {
  if (loaded) return loaded;
  const file = addonPath();
  if (!fs.existsSync(file)) {
    throw new Error(`rx-verbs bench: the native baselines are not built (${path.relative(root, file)}); build them with ${BUILD_HINT}`);
  }
  loaded = require(file);
  return loaded;
}

module.exports = { addonPath, build, load, BUILD_HINT };
