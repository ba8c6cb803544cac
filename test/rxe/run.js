#!/usr/bin/env node
// npm run test:rxe — the ibverbs provider against the real kernel RDMA stack.
// Boots a Debian kernel under QEMU (TCG) and runs, against real libibverbs
// and the kernel's uverbs completion channel:
//   jest     test/native/ on rxe0 (one guest, rxe0 on its loopback)
//   interop  rx-verbs pingpong <-> rdma-core's ibv_rc_pingpong, both roles
//            (the same guest as jest, after it)
//   bench    the benchmark suites (throughput, event rate, latency) on rxe0,
//            native baselines through libibverbs in the same run (the
//            jest/interop guest, after them): bench/results/rxe.json
//   pair     TWO guests joined by a link only they share, rxe0 on each one's
//            NIC: the cases of pair-cases.js (rdma_cm and verbs across hosts,
//            rdma-core's tools and ours, fault cases last)
// The guests run one after the other (the host has few cores). Exits
// non-zero if a part failed or produced no report; ends with one summary line.
//
// usage: test/rxe/run.js [--jest-only | --interop-only | --pair-only | --bench | --bench-pair]
//                        [--output FILE] [--quick] [--verbose] [-- JEST ARGS...]
//   --bench         npm run bench:rxe: the bench part, then --bench-pair
//   --bench-pair    the pair guests run the cross-host benchmarks of
//                   bench/cm instead of the test cases; figures in
//                   bench/results/rxe-pair.json and a table
//   --output FILE   write the merged report (jest --json format; the interop
//                   and pair cases appear as the suites test/rxe/interop and
//                   test/rxe/pair) to FILE
//   --quick         interop and pair: a few cases instead of all of them
//   -- ARGS         jest arguments instead of the default (the whole of
//                   test/native/ as one test file, see native-suite.ts)
// env: RXE_PARTS="jest interop pair"  RXE_SMP=2  RXE_MEM=3072 (MiB)
//      RXE_TIMEOUT=1080 (s, the jest+interop VM; 1380 with bench)  RXE_CACHE_DIR=test/rxe/.cache
//      RXE_JEST_TIMEOUT=780 (s, the native suite inside that VM)
//      RXE_NATIVE_FILES=qp.test.ts,arm.test.ts (only these native files)
//      RXE_INTEROP_CASES / RXE_CLI_CASES (lines "server client size iters events")
//      RXE_PAIR_CASES=<regexp> (only the pair cases whose names match)
//      RXE_PAIR_MEM=1536 (MiB per pair guest)  RXE_PAIR_TIMEOUT=900 (s, both guests; 1500 with the benchmarks)
//      RXE_PAIR_BENCH=after (the pair part runs the benchmarks after its cases)
//      RXE_BENCH_QUICK=1 (the benchmarks' quick modes, bench part and pair; also with --quick)
//      RXE_BENCH_SCALE=0.5 (the bench part's --scale; 0.1 when quick)
//      RXE_BENCH_SUITES=throughput,eventRate,latency (the bench part's --only:
//        e.g. RXE_PARTS=bench RXE_BENCH_SUITES=latency runs the latency suite alone)
//      RXE_BENCH_OUT=bench/results/rxe.json (where the bench part's results go)
//      RXE_BENCH_PAIR_OUT=bench/results/rxe-pair.json (where their figures go)
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { bootGuest, freePort, waitListening } = require('./qemu');
const { ensureFreshDist } = require('../../scripts/test/dist');
const { buildCmLoop } = require('../../bench/cm/build');
const benchAddon = require('../../bench/native/addon');
const { BUILD_DIR } = require('../../scripts/native/inputs');

const RXE_DIR = __dirname;
const ROOT = path.resolve(RXE_DIR, '..', '..');
const CACHE_DIR = path.resolve(process.env.RXE_CACHE_DIR || path.join(RXE_DIR, '.cache'));
const KERNEL_DIR = path.join(CACHE_DIR, 'kernel');
const INITRAMFS = path.join(CACHE_DIR, 'initramfs.cpio.gz');
const OUT = path.join(CACHE_DIR, 'out');
const JEST_CACHE = path.join(CACHE_DIR, 'jest-cache');
const FAST_TAR = path.join(CACHE_DIR, 'fast.tar');
const START = Date.now();
const say = (s) => process.stderr.write(`rxe: ${s}\n`);
const seconds = (t0) => ((Date.now() - t0) / 1000).toFixed(1);

function usage() {
  const text = fs.readFileSync(__filename, 'utf8').split('\n');
  const from = text.findIndex((l) => l.startsWith('// npm run test:rxe'));
  const to = text.findIndex((l) => l.startsWith("'use strict'"));
  return text.slice(from, to).map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
}

function parseArgs(argv) {
  const o = {
    parts: (process.env.RXE_PARTS ?? 'jest interop pair').split(/[\s,]+/).filter(Boolean),
    pairBench: process.env.RXE_PAIR_BENCH ?? '', output: '', quick: false, verbose: false, jestArgs: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--jest-only') o.parts = ['jest'];
    else if (a === '--interop-only') o.parts = ['interop'];
    else if (a === '--pair-only') o.parts = ['pair'];
    else if (a === '--bench') {
      o.parts = ['bench', 'pair'];
      o.pairBench = 'only';
    } else if (a === '--bench-pair') {
      o.parts = ['pair'];
      o.pairBench = 'only';
    }
    else if (a === '--output') {
      if (!argv[i + 1]) throw new Error('--output needs a file');
      o.output = argv[++i];
    } else if (a.startsWith('--output=')) o.output = a.slice('--output='.length);
    else if (a === '--quick') o.quick = true;
    else if (a === '--verbose' || a === '-v') o.verbose = true;
    else if (a === '-h' || a === '--help') {
      process.stdout.write(`${usage()}\n`);
      process.exit(0);
    } else if (a === '--') {
      o.jestArgs = argv.slice(i + 1);
      break;
    } else throw new Error(`unknown option ${a} (see --help)`);
  }
  const unknown = o.parts.filter((p) => !['jest', 'interop', 'bench', 'pair'].includes(p));
  if (unknown.length) throw new Error(`unknown part(s) in RXE_PARTS: ${unknown.join(' ')} (jest, interop, bench, pair)`);
  if (!['', 'only', 'after'].includes(o.pairBench)) throw new Error(`RXE_PAIR_BENCH is 'only' or 'after' (got ${o.pairBench})`);
  if (o.output) o.output = path.resolve(o.output);
  return o;
}

/** Runs a shell script of the harness; true on exit 0. Its output goes to our stderr. */
function sh(script, ...args) {
  return spawnSync('bash', [path.join(RXE_DIR, script), ...args], { stdio: ['ignore', 2, 2] }).status === 0;
}

const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
/** A guest.env file the guest script sources: name -> string or array. */
function writeEnv(file, vars) {
  const lines = Object.entries(vars).map(([k, v]) => (Array.isArray(v) ? `${k}=(${v.map(quote).join(' ')})` : `${k}=${quote(v)}`));
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

const newer = (a, b) => fs.statSync(a).mtimeMs > fs.statSync(b).mtimeMs;

/** Prerequisites, kernel, initramfs; false (after saying why) when something is missing. */
function prepare(o) {
  if (!sh('lib.sh', 'require-tools')) return false;
  // The kernel cache must hold every module the guests load (the pair part
  // added virtio_net and rdma_ucm): fetch-kernel.sh is a no-op when current.
  const order = path.join(KERNEL_DIR, 'ORDER');
  const needed = ['rdma_rxe', 'virtio_net', 'rdma_ucm'];
  const have = fs.existsSync(order) ? fs.readFileSync(order, 'utf8').split('\n') : [];
  if (!fs.existsSync(path.join(KERNEL_DIR, 'vmlinuz')) || needed.some((m) => !have.includes(m))) {
    say('the guest kernel is not cached yet (or lacks modules): fetching it');
    if (!sh('fetch-kernel.sh')) {
      say('could not fetch the guest kernel; as root run: bash test/rxe/setup.sh');
      return false;
    }
  }
  const addon = path.join(ROOT, BUILD_DIR, 'Release', 'rx_verbs.node');
  if (!fs.existsSync(addon)) {
    say('the addon is not built: npm run build:native');
    return false;
  }
  if (spawnSync(process.execPath, ['-e', `process.exit(require(${JSON.stringify(addon)}).hasIbverbs() ? 0 : 1)`]).status !== 0) {
    say('the addon was built without the ibverbs provider: apt-get install libibverbs-dev, then npm run build:native');
    return false;
  }
  if (o.parts.includes('interop') && !fs.existsSync(path.join(ROOT, 'dist', 'cli', 'pingpong', 'command.js'))) {
    say('the CLI is not built: npx tsc -p tsconfig.build.json');
    return false;
  }
  if (o.pairBench && o.parts.includes('pair') && !buildCmLoop({ log: say })) return false;
  if (o.parts.includes('bench') && !buildBench()) return false;
  if (!fs.existsSync(INITRAMFS) || newer(path.join(RXE_DIR, 'init'), INITRAMFS) || newer(order, INITRAMFS)) {
    if (!sh('build-initramfs.sh')) return false;
  }
  return true;
}

/** The bench part's suites (bench/build) and native baselines (rx_verbs_bench.node), built here: the guest has no compiler. */
function buildBench() {
  if (benchAddon.build() !== 0) {
    say(`building the bench addon failed: ${benchAddon.BUILD_HINT}`);
    return false;
  }
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  if (spawnSync(tsc, ['-p', path.join(ROOT, 'bench', 'tsconfig.json')], { stdio: ['ignore', 2, 2] }).status !== 0) {
    say('compiling the bench suites failed (bench/tsconfig.json)');
    return false;
  }
  return true;
}

/**
 * Warms jest's transform cache here (swc is quick natively, slow under TCG):
 * a run that loads every test file and runs none of them (-t matches no
 * test). Same flags and cache path as in the guest, so the keys match.
 */
function warmJest(jestArgs) {
  const t0 = Date.now();
  const du = spawnSync('du', ['-sm', JEST_CACHE], { encoding: 'utf8' });
  if (du.status === 0 && Number(du.stdout.split('\t')[0]) > 200) fs.rmSync(JEST_CACHE, { recursive: true, force: true });
  fs.mkdirSync(JEST_CACHE, { recursive: true });
  const log = fs.openSync(path.join(OUT, 'jest-warmup.log'), 'w');
  spawnSync(process.execPath, [path.join(ROOT, 'node_modules/jest/bin/jest.js'), '--runInBand', '--ci', `--cacheDirectory=${JEST_CACHE}`,
    '-t', '^rxe: warm the transform cache, run nothing$', ...jestArgs], {
    cwd: ROOT, stdio: ['ignore', log, log], env: { ...process.env, RX_VERBS_TEST_DEVICE: 'rxe0' },
  });
  fs.closeSync(log);
  say(`warmed jest's transform cache (${seconds(t0)}s)`);
}

/**
 * Packs what node loads (node_modules, dist, the addon, jest's cache) into
 * one file the guests unpack into RAM: every file read over 9p is slow
 * under TCG (a node start that loads rxjs: ~20 s from 9p, ~6 s from tmpfs).
 */
function packFast(o) {
  const rel = (p) => path.relative('/', p);
  const items = [path.join(ROOT, 'node_modules'), path.join(ROOT, 'dist'), path.join(ROOT, BUILD_DIR, 'Release', 'rx_verbs.node')];
  if (o.parts.includes('bench')) items.push(benchAddon.addonPath());
  if (fs.existsSync(JEST_CACHE)) items.push(JEST_CACHE);
  const excludes = ['*.map', '*.md', '*.d.ts', ...['typescript', 'typedoc', '@shikijs', 'markdown-it', 'node-gyp', '@types'].map((m) => `node_modules/${m}`)];
  const r = spawnSync('tar', ['-cf', FAST_TAR, ...excludes.map((e) => `--exclude=${e}`), '-C', '/', ...items.filter(fs.existsSync).map(rel)], { stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`could not pack ${FAST_TAR}`);
}

/** Folders the guest must still see after it covers /tmp, /root, ... with tmpfs. */
function keepPaths() {
  const prefix = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  const keep = [ROOT];
  if (prefix !== '/usr' && prefix !== '/usr/local') keep.push(prefix);
  if (keep.some((p) => /\s/.test(p))) throw new Error(`paths with spaces are not supported: ${keep.join(' ')}`);
  return keep;
}

const kver = () => fs.readFileSync(path.join(KERNEL_DIR, 'KVER'), 'utf8').trim();
const guestBase = (o) => ({ kernel: path.join(KERNEL_DIR, 'vmlinuz'), initrd: INITRAMFS, keep: keepPaths(), verbose: o.verbose });

/** The guest's exit status as it wrote it, or undefined. */
function guestExit(dir) {
  try {
    const t = fs.readFileSync(path.join(dir, 'guest-exit'), 'utf8').trim();
    return /^\d+$/.test(t) ? Number(t) : undefined;
  } catch {
    return undefined;
  }
}

// --- jest + interop: one guest, rxe0 on its loopback -------------------------
// ibv_srq_pingpong's mode (--srq, 4 QPs on one SRQ) against ibv_srq_pingpong.
const SRQ_INTEROP = ['ours', 'theirs'].flatMap((server) => [0, 1].map((ev) => `${server} ${server === 'ours' ? 'theirs' : 'ours'} 4096 400 ${ev} srq4`));
// ibv_ud_pingpong: both roles, polling and -e (UD messages fit the port MTU: 1024 on rxe0).
const UD_INTEROP = ['ours', 'theirs'].flatMap((server) => [0, 1].map((ev) => `${server} ${server === 'ours' ? 'theirs' : 'ours'} 1024 500 ${ev} ud`));
// -c in every mode, both roles: each side's marks pass the other's check
// (a few hundred exchanges); then a server with -c whose client marks
// nothing must report every page, ours and theirs alike.
const CHK_INTEROP = ['ours', 'theirs'].flatMap((server) => {
  const client = server === 'ours' ? 'theirs' : 'ours';
  return [`${server} ${client} 8192 200 0 rc,chk`, `${server} ${client} 8192 200 1 srq4,chk`, `${server} ${client} 1024 200 0 ud,chk`, `${server} ${client} 8192 100 0 rc,srvchk`];
});
const QUICK_INTEROP = ['ours theirs 4096 200 1', 'theirs ours 4096 200 0', 'theirs ours 4096 200 1 srq4', 'ours theirs 1024 200 1 ud', 'theirs ours 8192 200 0 rc,chk'];
const FULL_INTEROP = ['ours', 'theirs'].flatMap((server) => [0, 1].flatMap((ev) => [['64', 1000], ['4096', 500], ['65536', 100]]
  .map(([size, iters]) => `${server} ${server === 'ours' ? 'theirs' : 'ours'} ${size} ${iters} ${ev}`))).concat(SRQ_INTEROP, UD_INTEROP, CHK_INTEROP);
const QUICK_CLI = ['ours theirs 4096 100 1'];
const FULL_CLI = ['theirs theirs 4096 500 0', 'ours theirs 4096 500 1', 'theirs ours 65536 100 0', 'ours ours 4096 500 1'];

async function runSingle(o, parts, jestArgs) {
  // The bench part adds its own minutes to the jest+interop guest's bound.
  // The native suite takes about 3 minutes on a quiet host and has run past
  // 10 on one shared with other guests: its bound (RXE_JEST_TIMEOUT) leaves
  // room for that, and the guest's leaves room for it plus the interop part.
  const jestTimeoutS = Number(process.env.RXE_JEST_TIMEOUT || 780);
  const timeoutS = Number(process.env.RXE_TIMEOUT || (parts.includes('bench') ? 1380 : 1080));
  writeEnv(path.join(OUT, 'guest.env'), {
    RXE_PROJECT: ROOT,
    RXE_PARTS: parts.join(' '),
    RXE_JEST_ARGS: jestArgs,
    RXE_JEST_CACHE: JEST_CACHE,
    RXE_JEST_TIMEOUT: String(jestTimeoutS),
    RXE_NATIVE_FILES: process.env.RXE_NATIVE_FILES ?? '',
    RXE_INTEROP_CASES: process.env.RXE_INTEROP_CASES ?? (o.quick ? QUICK_INTEROP : FULL_INTEROP).join('\n'),
    RXE_CLI_CASES: process.env.RXE_CLI_CASES ?? (o.quick ? QUICK_CLI : FULL_CLI).join('\n'),
    RXE_FAST_TAR: FAST_TAR,
    RXE_BENCH_SCALE: process.env.RXE_BENCH_SCALE ?? (o.quick || process.env.RXE_BENCH_QUICK === '1' ? '0.1' : '0.5'),
    RXE_BENCH_SUITES: process.env.RXE_BENCH_SUITES ?? 'throughput,eventRate,latency',
  });
  const smp = process.env.RXE_SMP || 2;
  const mem = process.env.RXE_MEM || 3072;
  say(`booting ${kver()} under QEMU/TCG (smp ${smp}, ${mem} MiB); parts: ${parts.join(' ')}`);
  // -nic none: this VM has no network device; all RoCE and TCP traffic stays
  // inside the guest kernel (rxe0 on lo, 127.0.0.1).
  const r = await bootGuest({
    ...guestBase(o), script: path.join(RXE_DIR, 'guest.sh'), out: OUT, smp, mem, timeoutS, console: path.join(OUT, 'console.log'),
  });
  if (r.timedOut) say(`the VM ran past RXE_TIMEOUT=${timeoutS}s and was stopped`);
  const rc = guestExit(OUT);
  if (rc === undefined) say(`the guest reported no exit status (qemu exit ${r.code}); console: ${path.relative(ROOT, path.join(OUT, 'console.log'))}`);
  const benchRc = parts.includes('bench') ? benchReport() : 0;
  return (rc ?? 1) || benchRc;
}

/** The bench part's results (the guest's bench.json): bench/results/rxe.json and the tables; non-zero when a ratio is missing. */
function benchReport() {
  const file = path.join(OUT, 'bench.json');
  if (!fs.existsSync(file)) {
    say('bench: the guest wrote no results (test/rxe/.cache/out/bench.log)');
    return 1;
  }
  const out = path.resolve(process.env.RXE_BENCH_OUT || path.join(ROOT, 'bench', 'results', 'rxe.json'));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.copyFileSync(file, out);
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench', 'rxe-report.js'), out], { stdio: ['ignore', 2, 2] });
  return r.status === 0 ? 0 : 1;
}

// --- pair: two guests on a link only they share ------------------------------
// Two links, each only between the two guests: the test link (rxe0; fault
// cases take it down) and the control link (pair.js's requests).
const PAIR = [
  { role: 'a', self: '198.18.0.1', peer: '198.18.0.2', mac: '52:54:00:c6:12:01', ctrlSelf: '198.19.0.1', ctrlPeer: '198.19.0.2', ctrlMac: '52:54:00:c6:13:01' },
  { role: 'b', self: '198.18.0.2', peer: '198.18.0.1', mac: '52:54:00:c6:12:02', ctrlSelf: '198.19.0.2', ctrlPeer: '198.19.0.1', ctrlMac: '52:54:00:c6:13:02' },
];

async function runPair(o) {
  const t0 = Date.now();
  // The benchmarks take longer than the cases (bench/cm/pair-cases.js).
  const timeoutS = Number(process.env.RXE_PAIR_TIMEOUT || (o.pairBench ? 1500 : 900));
  const mem = process.env.RXE_PAIR_MEM || 1536;
  const ports = [await freePort()];
  while (ports.length < 2) {
    const p = await freePort();
    if (p !== ports[0]) ports.push(p);
  }
  const boots = [];
  const stopA = new AbortController();
  for (const g of PAIR) {
    const dir = path.join(OUT, `pair-${g.role}`);
    fs.mkdirSync(dir, { recursive: true });
    writeEnv(path.join(dir, 'guest.env'), {
      RXE_PROJECT: ROOT, RXE_ROLE: g.role, RXE_SELF: g.self, RXE_PEER: g.peer, RXE_MAC: g.mac,
      RXE_CTRL_SELF: g.ctrlSelf, RXE_CTRL_PEER: g.ctrlPeer, RXE_CTRL_MAC: g.ctrlMac,
      RXE_PAIR_CASES: process.env.RXE_PAIR_CASES ?? '', RXE_QUICK: o.quick ? '1' : '0', RXE_FAST_TAR: FAST_TAR,
      RXE_PAIR_BENCH: o.pairBench, RXE_BENCH_QUICK: process.env.RXE_BENCH_QUICK === '1' ? '1' : '0',
    });
    // Guest a listens on the host's loopback, guest b connects: QEMU relays
    // the Ethernet frames between the two, and nothing else joins the link.
    const netdev = (port) => (g.role === 'a' ? `listen=127.0.0.1:${port}` : `connect=127.0.0.1:${port}`);
    if (g.role === 'b' && !(await waitListening(ports[0], 30) && await waitListening(ports[1], 30))) {
      say(`pair: guest a's QEMU did not listen on 127.0.0.1:${ports.join(', ')} within 30 s`);
      break;
    }
    if (g.role === 'a') say(`pair: booting two guests (smp 1, ${mem} MiB each), links on 127.0.0.1:${ports.join(', ')}`);
    boots.push(bootGuest({
      ...guestBase(o), script: path.join(RXE_DIR, 'pair-guest.sh'), out: dir, smp: 1, mem, timeoutS,
      signal: g.role === 'a' ? stopA.signal : undefined,
      console: path.join(dir, 'console.log'), prefix: `${g.role}| `,
      net: ['-netdev', `socket,id=n0,${netdev(ports[0])}`, '-device', `virtio-net-pci,netdev=n0,mac=${g.mac}`,
        '-netdev', `socket,id=n1,${netdev(ports[1])}`, '-device', `virtio-net-pci,netdev=n1,mac=${g.ctrlMac}`],
    }));
  }
  // Guest a serves guest b: once b is gone, a has nothing left to do.
  if (boots[1]) boots[1].then(() => setTimeout(() => stopA.abort(), 60_000).unref());
  else stopA.abort();
  const results = await Promise.all(boots);
  if (results.some((r) => r.timedOut)) say(`pair: a guest ran past RXE_PAIR_TIMEOUT=${timeoutS}s and was stopped`);
  const rcs = PAIR.map((g) => guestExit(path.join(OUT, `pair-${g.role}`)));
  for (const [i, rc] of rcs.entries()) {
    if (rc === undefined) say(`pair: guest ${PAIR[i].role} reported no exit status; console: ${path.relative(ROOT, path.join(OUT, `pair-${PAIR[i].role}`, 'console.log'))}`);
  }
  let rc = rcs.every((r) => r === 0) ? 0 : 1;
  fs.appendFileSync(path.join(OUT, 'status'), `pair ${rc} ${seconds(t0)}\n`);
  if (o.pairBench) rc = pairBenchReport(o) || rc;
  return rc;
}

/** The benchmarks' figures (guest b's bench.jsonl): the JSON file and the table; non-zero when a ratio is missing. */
function pairBenchReport(o) {
  const out = path.resolve(process.env.RXE_BENCH_PAIR_OUT || path.join(ROOT, 'bench', 'results', 'rxe-pair.json'));
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench', 'cm', 'pair-report.js'), path.join(OUT, 'pair-b', 'bench.jsonl'), out, o.quick ? 'quick' : 'full'],
    { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) return 1;
  // npm run bench:rxe: the single-guest results take the pair figures in too.
  const rxe = path.resolve(process.env.RXE_BENCH_OUT || path.join(ROOT, 'bench', 'results', 'rxe.json'));
  if (!o.parts.includes('bench') || !fs.existsSync(rxe)) return 0;
  return spawnSync(process.execPath, [path.join(ROOT, 'bench', 'rxe-report.js'), rxe, '--pair', out], { stdio: ['ignore', 'ignore', 2] }).status === 0 ? 0 : 1;
}

function finish(o, rc) {
  const r = spawnSync(process.execPath, [path.join(RXE_DIR, 'report.js'), OUT, o.parts.join(' '), String(rc), o.output,
    String(Math.round((Date.now() - START) / 1000)), o.verbose ? '1' : '0'], { stdio: 'inherit' });
  process.exit(r.status === 0 ? rc : 1);
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    say(e.message);
    process.exit(1);
  }
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  if (o.output) fs.mkdirSync(path.dirname(o.output), { recursive: true });
  if (!prepare(o)) finish(o, 1);

  // jest: by default the whole native suite as ONE test file (native-suite.ts:
  // every test file costs ~20 s of set-up under TCG); `-- ARGS` runs jest as given.
  // (jest.config.js keeps test/rxe/ out of the host's runs: undo that here.)
  const jestArgs = o.jestArgs.length ? o.jestArgs : ['--testMatch', '**/test/rxe/native-suite.ts', '--testPathIgnorePatterns', '/node_modules/'];
  // The guests run dist/ as packed here (they have no tsc): build it from
  // the current sources first.
  try {
    ensureFreshDist({ log: say });
  } catch (err) {
    say(err.message);
    finish(o, 1);
  }
  if (o.parts.includes('jest')) warmJest(jestArgs);
  packFast(o);
  let rc = 0;
  try {
    const single = o.parts.filter((p) => p === 'jest' || p === 'interop' || p === 'bench');
    if (single.length) rc = await runSingle(o, single, jestArgs);
    // Never at the same time as the other guest: the host has few cores.
    if (o.parts.includes('pair')) rc = (await runPair(o)) || rc;
  } finally {
    fs.rmSync(FAST_TAR, { force: true });
  }
  finish(o, rc);
}

main().catch((e) => {
  say(e.stack || String(e));
  process.exit(1);
});
