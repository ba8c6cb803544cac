// Builds the binaries the published package carries, with prebuildify, into
// prebuilds/<platform>-<arch>/ where node-gyp-build finds them at run time:
//
//   node scripts/native/prebuild.js [--arch x64|arm64|all] [--if-stale]
//
// One Node-API binary per architecture serves every Node version. Each is
// built with the ibverbs and rdma_cm providers compiled in, whatever the
// machine that installs the package has: the providers dlopen their
// libraries at run time, so a user without rdma-core gets soft0 and a clear
// error, and one who installs rdma-core later gets the real devices without
// rebuilding. The script therefore refuses to build when rdma-core's headers
// are missing (on Debian: libibverbs-dev and librdmacm-dev).
//
// arm64 is cross-compiled with Debian's g++-aarch64-linux-gnu. rdma-core's
// headers are the same on every architecture, so the cross compiler gets the
// host's infiniband/ and rdma/ folders, and nothing else of /usr/include.
//
// Each build runs in its own copy of the sources, so src/native/build (the
// clone's own addon) is never touched. prebuilds/<dir>/.digest records the inputs
// a binary was built from; --if-stale skips a binary whose inputs are
// unchanged.
'use strict';
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { root, GYP_DIR, BUILD_DIR, copySources, probe, inputDigest, nodedirArgs } = require('./inputs');

const TARGETS = {
  x64: { gypArch: 'x64', cross: null },
  arm64: { gypArch: 'arm64', cross: 'aarch64-linux-gnu' },
};

function which(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

/** A folder holding only rdma-core's header folders, for a cross compiler. */
function rdmaHeaders(stage) {
  const dir = path.join(stage, 'rdma-headers');
  fs.mkdirSync(dir, { recursive: true });
  for (const sub of ['infiniband', 'rdma']) {
    const from = path.join('/usr/include', sub);
    if (fs.existsSync(from)) fs.symlinkSync(from, path.join(dir, sub));
  }
  return dir;
}

/** The environment a build for `arch` runs with (the compilers for a cross build). */
function toolchainEnv(arch, stage) {
  const { cross } = TARGETS[arch];
  if (!cross) return { ...process.env };
  const gxx = `${cross}-g++`;
  if (!which(gxx)) throw new Error(`${gxx} not found: install Debian's g++-aarch64-linux-gnu to build the arm64 binary`);
  const inc = `-idirafter ${rdmaHeaders(stage)}`;
  return {
    ...process.env,
    CC: `${cross}-gcc ${inc}`,
    CXX: `${gxx} ${inc}`,
    LINK: gxx,
    AR: `${cross}-ar`,
    STRIP: `${cross}-strip`,
  };
}

function stageSources(stage) {
  copySources(stage);
  // node-addon-api's include folder is found by requiring it from the stage.
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(stage, 'node_modules'));
}

/**
 * The clone's own build serves as the host's prebuild when it was built
 * from the same inputs with both providers (scripts/native/build.js's
 * digest says so): compiling the same sources again with the same compiler
 * would only cost minutes. It is copied and stripped like prebuildify does.
 */
function reuseSourceBuild(arch, probes, outDir) {
  if (arch !== process.arch) return false;
  const { ADDON, STAMP } = require('./build');
  if (!fs.existsSync(ADDON) || !fs.existsSync(STAMP) || fs.readFileSync(STAMP, 'utf8') !== inputDigest(probes)) return false;
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, 'rx-verbs.glibc.node');
  fs.copyFileSync(ADDON, out);
  execFileSync('strip', ['--strip-all', out]);
  console.error(`prebuild ${arch}: the source build in ${BUILD_DIR}/Release is current and has both providers; using it`);
  report(arch, outDir);
  return true;
}

/** The CPU an ELF shared object is for, from its header's e_machine. */
function elfMachine(file) {
  const head = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (head.toString('latin1', 1, 4) !== 'ELF') return 'not an ELF file';
  const machine = head.readUInt16LE(18);
  return { 0x3e: 'x86-64', 0xb7: 'aarch64' }[machine] ?? `e_machine ${machine}`;
}

function report(arch, outDir) {
  for (const f of fs.readdirSync(outDir).filter((n) => n.endsWith('.node'))) {
    const file = path.join(outDir, f);
    console.error(`prebuild ${arch}: prebuilds/linux-${arch}/${f} (${fs.statSync(file).size} bytes; ELF for ${elfMachine(file)})`);
  }
}

function prebuild(arch, { ifStale = false } = {}) {
  const outDir = path.join(root, 'prebuilds', `linux-${arch}`);
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), `rx-verbs-prebuild-${arch}-`));
  try {
    const env = toolchainEnv(arch, stage);
    const probes = probe(env);
    if (!probes.ibverbs || !probes.rdmacm) {
      throw new Error(
        `refusing to build the ${arch} prebuild without the real providers: rdma-core's headers are not usable by ${
          env.CXX || 'c++'
        } (ibverbs: ${probes.ibverbs}, rdma_cm: ${probes.rdmacm}); install libibverbs-dev and librdmacm-dev`,
      );
    }
    // This script is an input too: how a binary is built and named.
    const recipe = require('crypto').createHash('sha256').update(fs.readFileSync(__filename)).digest('hex');
    const digest = `${arch} ${inputDigest(probes)} ${recipe}`;
    const stampFile = path.join(outDir, '.digest');
    if (ifStale && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === digest) {
      console.error(`prebuild ${arch}: up to date`);
      return;
    }
    if (reuseSourceBuild(arch, probes, outDir)) {
      fs.writeFileSync(stampFile, digest);
      return;
    }
    stageSources(stage);
    const bin = require.resolve('prebuildify/bin.js', { paths: [root] });
    // Built beside binding.gyp, written to the stage's prebuilds/, named
    // after the package. Tagged glibc: node-gyp-build then never offers it
    // to a musl system.
    const name = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).name;
    const args = [bin, '--napi', '--tag-libc', '--strip', '--arch', TARGETS[arch].gypArch, '--cwd', path.join(stage, GYP_DIR), '--out', stage, '--name', name];
    if (env.STRIP) args.push('--strip-bin', env.STRIP);
    const nodedir = nodedirArgs(env);
    if (nodedir.length) env.npm_config_nodedir = nodedir[0].slice('--nodedir='.length);
    console.error(`prebuild ${arch}: ${TARGETS[arch].cross ? `cross-compiling with ${env.CXX}` : 'building'}`);
    const r = spawnSync(process.execPath, args, {
      cwd: stage,
      env: { ...env, JOBS: String(os.availableParallelism ? os.availableParallelism() : os.cpus().length) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`prebuildify for ${arch} failed (exit ${r.status ?? r.signal})`);
    fs.rmSync(outDir, { recursive: true, force: true });
    fs.cpSync(path.join(stage, 'prebuilds', `linux-${arch}`), outDir, { recursive: true });
    fs.writeFileSync(stampFile, digest);
    report(arch, outDir);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--arch');
  const which = at >= 0 ? argv[at + 1] : 'all';
  const arches = which === 'all' ? Object.keys(TARGETS) : [which];
  try {
    for (const arch of arches) {
      if (!TARGETS[arch]) throw new Error(`unknown --arch ${arch} (x64, arm64 or all)`);
      prebuild(arch, { ifStale: argv.includes('--if-stale') });
    }
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}

module.exports = { prebuild, TARGETS };
