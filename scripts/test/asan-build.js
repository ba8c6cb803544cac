// The sanitized addons for `npm run test:asan`: the product addon and the
// benchmark baselines' addon (test/native/bench-threads.test.ts runs them),
// built with `RXV_SANITIZE=1 RXV_BENCH=1` (binding.gyp: -fsanitize=address,
// undefined) from a copy of the sources in a folder of their own, so the
// normal src/native/build is never touched; and the ASan runtime that matches
// the compiler, which every process of the run preloads.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { root } = require('./step');
const { GYP_DIR, BUILD_DIR, copySources: copyAddonSources } = require('../native/inputs');

/** A failure that ends the sanitizer run with `status` and this message. */
class AsanSetupError extends Error {
  constructor(message, status = 1) {
    super(message);
    this.name = 'AsanSetupError';
    this.status = status;
  }
}

/** $CXX as a command and its leading arguments ("ccache g++" works). */
function compiler() {
  const words = (process.env.CXX || 'g++').trim().split(/\s+/);
  return { cmd: words[0], args: words.slice(1), text: words.join(' ') };
}

/** The ASan runtime the compiler links against (g++: libasan; clang: its own). */
function asanRuntime() {
  const cxx = compiler();
  const lib = /clang/.test(path.basename(cxx.cmd)) ? 'libclang_rt.asan-x86_64.so' : 'libasan.so';
  const r = spawnSync(cxx.cmd, [...cxx.args, `-print-file-name=${lib}`], { encoding: 'utf8' });
  const asked = (r.stdout ?? '').trim() || lib;
  let found;
  try {
    found = fs.realpathSync(asked);
  } catch {
    found = undefined;
  }
  if (!found || !fs.statSync(found).isFile()) {
    throw new AsanSetupError(
      `no ASan runtime for ${cxx.text} (looked for ${asked}); on Debian: apt-get install libasan8 (g++) or libclang-rt-dev (clang)`,
      2,
    );
  }
  return found;
}

/** Where the sanitized tree and its addons live. */
function asanPaths(out) {
  const tree = path.join(out, 'tree');
  return {
    out,
    tree,
    logs: path.join(out, 'logs'),
    addon: path.join(tree, BUILD_DIR, 'Release', 'rx_verbs.node'),
    benchAddon: path.join(tree, BUILD_DIR, 'Release', 'rx_verbs_bench.node'),
  };
}

/** Copies what binding.gyp reads into the tree (and nothing else: it is rebuilt from scratch). */
function copySources(tree) {
  fs.mkdirSync(tree, { recursive: true });
  for (const d of ['src', 'scripts', 'bench']) fs.rmSync(path.join(tree, d), { recursive: true, force: true });
  copyAddonSources(tree);
  fs.cpSync(path.join(root, 'bench', 'native'), path.join(tree, 'bench', 'native'), { recursive: true });
  fs.copyFileSync(path.join(root, 'package.json'), path.join(tree, 'package.json'));
}

/** The environment node-gyp needs to build the tree as `npm install` would. */
function buildEnv() {
  const env = { ...process.env, RXV_SANITIZE: '1', RXV_BENCH: '1', CXX: compiler().text };
  // node-addon-api is found from the tree through the parent's node_modules
  // when the tree lies under it; point at it explicitly otherwise.
  env.NODE_PATH = [path.join(root, 'node_modules'), env.NODE_PATH].filter(Boolean).join(path.delimiter);
  // node-gyp run directly does not read .npmrc: pass on a configured nodedir
  // (headers installed locally) as npm would.
  if (!env.npm_config_nodedir) {
    const r = spawnSync('npm', ['config', 'get', 'nodedir'], { encoding: 'utf8' });
    const nodedir = (r.stdout ?? '').trim();
    if (r.status === 0 && nodedir && !['undefined', 'null'].includes(nodedir)) env.npm_config_nodedir = nodedir;
  }
  return env;
}

/** Whether an addon was compiled with ASan (it imports __asan_init). */
function instrumented(file) {
  const r = spawnSync('nm', ['-D', file], { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error) throw new AsanSetupError(`cannot inspect ${file}: nm: ${r.error.message} (binutils)`);
  return /\b__asan_init\b/.test(r.stdout);
}

/**
 * Builds both sanitized addons unless `reuse` and they are there; throws
 * AsanSetupError (with the build log's tail) when the build fails or its
 * output is not instrumented.
 */
function buildSanitized(paths, { reuse = false, jobs = 'max', say = console.log } = {}) {
  const { out, tree, addon, benchAddon } = paths;
  if (reuse && fs.existsSync(addon) && fs.existsSync(benchAddon)) return;
  say(`building the sanitized addon in ${tree}`);
  copySources(tree);
  const logFile = path.join(out, 'build.log');
  const gyp = path.join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const fd = fs.openSync(logFile, 'w');
  let r;
  try {
    r = spawnSync(process.execPath, [gyp, 'rebuild', '-j', String(jobs)], { cwd: path.join(tree, GYP_DIR), env: buildEnv(), stdio: ['ignore', fd, fd] });
  } finally {
    fs.closeSync(fd);
  }
  if (r.status !== 0 || !fs.existsSync(addon) || !fs.existsSync(benchAddon)) {
    const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
    throw new AsanSetupError(`${tail}\nbuild failed (full log: ${logFile})`);
  }
  for (const a of [addon, benchAddon]) {
    if (!instrumented(a)) throw new AsanSetupError(`the addon at ${a} is not instrumented (no __asan_init): RXV_SANITIZE did not reach binding.gyp`);
  }
}

module.exports = { AsanSetupError, asanRuntime, asanPaths, buildSanitized };
