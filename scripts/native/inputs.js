// What the addon is built from, in one place: the build-on-demand check
// (build.js) and the prebuild script (prebuild.js) both use it.
//
// The probes are part of the inputs: they decide whether the ibverbs and
// rdma_cm providers are compiled in, so installing rdma-core's headers after
// a build makes the next check build again instead of leaving the addon
// without its real provider.
'use strict';
const { execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');

/**
 * Where node-gyp runs: the folder of binding.gyp, relative to the root (not
 * the root itself, see binding.gyp). Its build/ is the build folder.
 */
const GYP_DIR = path.join('src', 'native');

/** The build folder (node-gyp's build/ beside binding.gyp), relative to the root. */
const BUILD_DIR = path.join(GYP_DIR, 'build');

/** The files a source build needs (what the tarball ships for it, too). */
const SOURCE_FILES = ['src/native', 'scripts/probe-ibverbs.sh', 'scripts/probe-rdmacm.sh'];

/** Every file under SOURCE_FILES, relative to the root, sorted (the build folder is no source). */
function sourceFiles(base = root) {
  const out = [];
  const walk = (rel) => {
    const abs = path.join(base, rel);
    if (rel === BUILD_DIR) return;
    if (fs.statSync(abs).isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) walk(path.join(rel, name));
    } else if (!rel.endsWith('.ts')) {
      out.push(rel);
    }
  };
  for (const f of SOURCE_FILES) walk(f);
  return out.sort();
}

/** Copies the source files (sourceFiles()) from the root into `tree`, for a build of its own there. */
function copySources(tree) {
  for (const f of sourceFiles()) {
    fs.mkdirSync(path.dirname(path.join(tree, f)), { recursive: true });
    fs.copyFileSync(path.join(root, f), path.join(tree, f));
  }
}

/**
 * What the two probes say with this compiler: `{ ibverbs, rdmacm }`, each
 * true when rdma-core's headers for it are usable.
 */
function probe(env = process.env) {
  const run = (script) => execFileSync('sh', [path.join(root, 'scripts', script)], { env, encoding: 'utf8' }).trim() === '1';
  return { ibverbs: run('probe-ibverbs.sh'), rdmacm: run('probe-rdmacm.sh') };
}

/** The digest of the sources, the probes' answers and the toolchain's versions. */
function inputDigest(probes = probe()) {
  const h = crypto.createHash('sha256');
  for (const f of sourceFiles()) h.update(`${f}\0`).update(fs.readFileSync(path.join(root, f))).update('\0');
  h.update(`probes ${probes.ibverbs} ${probes.rdmacm}\0`);
  h.update(`node-addon-api@${require('node-addon-api/package.json').version}\0`);
  h.update(`napi ${process.versions.napi}\0`);
  return h.digest('hex');
}

/**
 * node-gyp's `--nodedir` for the running node when nothing configures one:
 * the headers installed beside it (Debian's nodejs, the official tarballs),
 * so a build outside npm does not try to download them.
 */
function nodedirArgs(env = process.env) {
  if (env.npm_config_nodedir) return [];
  const dir = path.resolve(path.dirname(process.execPath), '..');
  return fs.existsSync(path.join(dir, 'include', 'node', 'node_api.h')) ? [`--nodedir=${dir}`] : [];
}

module.exports = { root, GYP_DIR, BUILD_DIR, SOURCE_FILES, sourceFiles, copySources, probe, inputDigest, nodedirArgs };
