// `npm run test:pack`: the published package as its users get it.
//
// 1. `npm pack` (its prepack builds what is stale: the prebuilt binaries for
//    linux-x64 and linux-arm64, and dist/), then checks the tarball: the
//    binaries are in it, the package.json has no install-time script and
//    the package no binding.gyp at its root, from which npm infers one (npm
//    11 warns about packages that have one, and a user needs no compiler),
//    no tests or benchmarks.
// 2. For each Node version the package claims (nodes.js, binaries from the
//    npm registry): installs the tarball into an empty project with that
//    Node running npm, with nothing but node on PATH (no compiler, make or
//    python could be used), checks npm printed no warning, built nothing
//    and lists no install script of ours (`npm install-scripts ls`), then
//    runs the smoke suite (smoke.cjs, smoke.mjs), the CLI (`devices
//    --json`) and the demo with that Node.
// 3. arm64: the same install, run under qemu-user with an arm64 Node
//    (Debian's qemu-user-static; the cross toolchain's sysroot supplies
//    the arm64 C and C++ libraries).
//
//   node scripts/pack/test.js [--skip-arm64] [--source-build]
//
// --source-build also times building the addon from source inside one
// installed copy (`npm explore rx-verbs -- npm run build:native`), the path
// for platforms without a prebuild, for comparison with the prebuilt install,
// and checks that the copy then loads what it built.
'use strict';
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { VERSIONS, nodeBinary } = require('./nodes');

const root = path.join(__dirname, '..', '..');
const argv = process.argv.slice(2);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rx-verbs-pack-'));
const rows = [];
let failures = 0;

function say(line) {
  process.stdout.write(`${line}\n`);
}

/** Runs a command; returns { status, out, seconds }. Never throws. */
function run(cmd, args, opts = {}) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const out = `${r.stdout || ''}${r.stderr || ''}${r.error ? String(r.error) : ''}`;
  return { status: r.status ?? 1, out, seconds };
}

function check(ok, what, detail = '') {
  say(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures++;
  return ok;
}

/** The npm CLI this script runs under (its JS entry), to run it with another Node. */
function npmCli() {
  if (process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')) return process.env.npm_execpath;
  const npm = execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim();
  return path.join(path.dirname(fs.realpathSync(npm)), 'npm-cli.js');
}

function pack() {
  const r = run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`npm pack failed:\n${r.out}`);
  const [info] = JSON.parse(r.out.slice(r.out.indexOf('[')));
  const tarball = path.join(work, info.filename);
  say(`packed ${info.filename}: ${(info.size / 1024).toFixed(0)} KiB, ${info.entryCount} files, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked`);
  const files = info.files.map((f) => f.path);
  const pkg = JSON.parse(execFileSync('tar', ['xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }));
  const installTime = ['preinstall', 'install', 'postinstall', 'prepare'].filter((s) => pkg.scripts && pkg.scripts[s]);
  check(installTime.length === 0, 'no install-time scripts in the packed package.json', installTime.join(', '));
  check(pkg.gypfile === false, 'gypfile: false (npm would otherwise add `install: node-gyp rebuild`)');
  // npm 11 infers `install: node-gyp rebuild` from a binding.gyp at the
  // package root, gypfile notwithstanding (its install-scripts listing reads
  // the installed package without gypfile): the build's one sits beside the
  // sources it builds, which the source build needs.
  check(!files.includes('binding.gyp') && files.includes('src/native/binding.gyp'), 'binding.gyp in src/native, none at the package root');
  for (const arch of ['x64', 'arm64']) {
    check(files.includes(`prebuilds/linux-${arch}/rx-verbs.glibc.node`), `prebuilt binary for linux-${arch} in the tarball`);
  }
  const stray = files.filter((f) => /^(test|bench|examples|scripts\/(?!probe-)|src\/native\/build\/)|\.digest$|\.tsbuildinfo$|\.test\./.test(f));
  check(stray.length === 0, 'no tests, benchmarks or build stamps in the tarball', stray.slice(0, 5).join(', '));
  // Comments in the shipped sources and typings cite the architecture document; typedoc's output is not shipped.
  check(files.includes('docs/ARCHITECTURE.md') && !files.some((f) => f.startsWith('docs/api/')), 'docs/ARCHITECTURE.md in the tarball, docs/api not');
  return tarball;
}

/** A PATH holding only `node` (the given binary): nothing else can be run. */
function bareBin(node) {
  const dir = fs.mkdtempSync(path.join(work, 'bin-'));
  fs.symlinkSync(node, path.join(dir, 'node'));
  return dir;
}

function install(tarball, node, label) {
  const app = path.join(work, `app-${label}`);
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `smoke-${label}`, version: '1.0.0', private: true }));
  const env = { ...process.env, PATH: bareBin(node), npm_config_update_notifier: 'false' };
  for (const k of Object.keys(env)) if (/^npm_(lifecycle|package|config_(nodedir|build_from_source))/.test(k)) delete env[k];
  const r = run(node, [npmCli(), 'install', '--no-audit', '--no-fund', tarball], { cwd: app, env });
  check(r.status === 0, `${label}: npm install of the tarball with only node on PATH`, r.status ? r.out.slice(-2000) : '');
  const warnings = r.out.split('\n').filter((l) => /\bwarn\b|\bERR\b/i.test(l));
  check(warnings.length === 0, `${label}: npm printed no warning`, warnings.slice(0, 4).join(' | '));
  const installed = path.join(app, 'node_modules', 'rx-verbs');
  check(!['build', 'src/native/build'].some((d) => fs.existsSync(path.join(installed, d))), `${label}: nothing was compiled at install`);
  installScripts(app, node, env, label);
  for (const f of ['smoke.cjs', 'smoke.mjs']) fs.copyFileSync(path.join(__dirname, f), path.join(app, f));
  return { app, seconds: r.seconds };
}

/**
 * What npm says about the install scripts of the installed packages
 * (`npm install-scripts ls`, npm 11): rx-verbs must not be listed, or a
 * user who approves what is listed gets a compile. The listing counts the
 * scripts in package.json and the `node-gyp rebuild` npm infers from a
 * binding.gyp at a package's root.
 */
function installScripts(app, node, env, label) {
  const r = run(node, [npmCli(), 'install-scripts', 'ls', '--json'], { cwd: app, env });
  let listed;
  try {
    listed = JSON.parse(r.out.slice(r.out.indexOf('{'))).allowScripts.map((p) => p.name);
  } catch {
    /* judged below */
  }
  check(r.status === 0 && Array.isArray(listed) && !listed.includes('rx-verbs'), `${label}: npm install-scripts ls lists no install script of rx-verbs`, listed ? listed.join(', ') : r.out.slice(-800));
}

/** Runs the smoke suite, the CLI and the demo in `app` with `node` (prefix: qemu for arm64). */
function smoke(app, label, { node, prefix = [], env = {}, arch = 'x64', demoMessages = 2000 }) {
  const cmd = prefix.length ? prefix[0] : node;
  const pre = prefix.length ? [...prefix.slice(1), node] : [];
  const opts = { cwd: app, env: { ...process.env, ...env, RX_VERBS_SMOKE_ADDON: `prebuilds/linux-${arch}/rx-verbs.glibc.node` } };
  const row = { label, install: '', smoke: 'FAIL', cli: 'FAIL', demo: 'FAIL' };
  const cjs = run(cmd, [...pre, 'smoke.cjs'], opts);
  const mjs = run(cmd, [...pre, 'smoke.mjs'], opts);
  if (check(cjs.status === 0 && mjs.status === 0, `${label}: smoke suite (require, providers, soft0 pipeline, worker thread, ESM)`, cjs.status || mjs.status ? `${cjs.out}${mjs.out}`.slice(-2000) : '')) {
    row.smoke = 'ok';
  }
  for (const line of cjs.out.trim().split('\n')) say(`       ${line}`);
  const cli = path.join(app, 'node_modules', 'rx-verbs', 'dist', 'cli', 'main.js');
  const devices = run(cmd, [...pre, cli, 'devices', '--json'], opts);
  let names = [];
  try {
    names = JSON.parse(devices.out).map((d) => d.name);
  } catch {
    /* judged below */
  }
  if (check(devices.status === 0 && names.includes('soft0'), `${label}: rx-verbs devices --json`, names.join(', ') || devices.out.slice(-500))) row.cli = 'ok';
  const demo = run(cmd, [...pre, cli, 'demo', '--messages', String(demoMessages), '--quiet', '--json'], opts);
  let summary;
  try {
    summary = JSON.parse(demo.out.slice(demo.out.indexOf('{')));
  } catch {
    /* judged below */
  }
  if (check(demo.status === 0 && summary, `${label}: rx-verbs demo --messages ${demoMessages}`, summary ? '' : demo.out.slice(-800))) {
    row.demo = `ok (${demoMessages} msgs, ${demo.seconds.toFixed(1)} s)`;
  }
  return row;
}

function main() {
  const tarball = pack();
  for (const version of VERSIONS) {
    const label = `node ${version} x64`;
    const node = nodeBinary(version, 'x64');
    const { app, seconds } = install(tarball, node, `x64-${version}`);
    const row = smoke(app, label, { node });
    row.install = `${seconds.toFixed(1)} s`;
    rows.push(row);
  }
  if (!argv.includes('--skip-arm64')) {
    const qemu = run('sh', ['-c', 'command -v qemu-aarch64-static || command -v qemu-aarch64']).out.trim();
    const sysroot = '/usr/aarch64-linux-gnu';
    if (check(!!qemu && fs.existsSync(path.join(sysroot, 'lib')), 'arm64: qemu-user and the arm64 libraries are here', 'install qemu-user-static and g++-aarch64-linux-gnu')) {
      const version = VERSIONS[VERSIONS.length - 1];
      const node = nodeBinary(version, 'arm64');
      // npm itself runs on the host's node: what it installs does not depend on the CPU.
      const { app, seconds } = install(tarball, process.execPath, `arm64-${version}`);
      const row = smoke(app, `node ${version} arm64 (qemu-user)`, { node, prefix: [qemu], env: { QEMU_LD_PREFIX: sysroot }, arch: 'arm64', demoMessages: 500 });
      row.install = `${seconds.toFixed(1)} s`;
      rows.push(row);
    }
  }
  if (argv.includes('--source-build')) {
    const app = path.join(work, `app-x64-${VERSIONS[0]}`);
    const r = run('npm', ['explore', 'rx-verbs', '--', 'npm', 'run', 'build:native'], { cwd: app });
    check(r.status === 0, 'source build of an installed copy (npm explore rx-verbs -- npm run build:native)', r.status ? r.out.slice(-1500) : `${r.seconds.toFixed(1)} s`);
    // The package loads what it built, not the prebuilt binary.
    const built = path.join('src', 'native', 'build', 'Release', 'rx_verbs.node');
    const probe = `require(${JSON.stringify(path.join(app, 'node_modules', 'rx-verbs', 'dist', 'native', 'binding.js'))}).binding();
      console.log(Object.keys(require.cache).find((f) => f.endsWith('.node')))`;
    const loaded = run(process.execPath, ['-e', probe], { cwd: app });
    check(loaded.status === 0 && loaded.out.trim().endsWith(built), `the installed copy loads its source build (${built})`, loaded.out.slice(-800));
  }
  say('\n| Node | install (prebuilt, no compiler) | smoke | CLI | demo |\n|---|---|---|---|---|');
  for (const r of rows) say(`| ${r.label} | ${r.install} | ${r.smoke} | ${r.cli} | ${r.demo} |`);
  // The benchmarks stay in the repository: the command says how to get them.
  const app = path.join(work, `app-x64-${VERSIONS[0]}`);
  const bench = run(process.execPath, [path.join(app, 'node_modules', 'rx-verbs', 'dist', 'cli', 'main.js'), 'bench'], { cwd: app });
  check(bench.status === 1 && /not part of the installed package/.test(bench.out), 'rx-verbs bench says the benchmarks are not shipped');
  const benchHelp = run(process.execPath, [path.join(app, 'node_modules', 'rx-verbs', 'dist', 'cli', 'main.js'), 'bench', '--help'], { cwd: app });
  check(benchHelp.status === 0 && /npm run bench -- --help/.test(benchHelp.out), 'rx-verbs bench --help answers, saying how to run them from a clone', benchHelp.out.slice(-500));
  say(failures ? `pack test: ${failures} check(s) failed` : 'pack test passed');
  return failures ? 1 : 0;
}

let status = 1;
try {
  status = main();
} catch (err) {
  say(`pack test failed: ${err.stack || err}`);
} finally {
  if (!process.env.RX_VERBS_KEEP_PACK) fs.rmSync(work, { recursive: true, force: true });
}
process.exit(status);
