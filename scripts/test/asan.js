// `npm run test:asan`: the native suites under AddressSanitizer,
// UndefinedBehaviorSanitizer and LeakSanitizer.
//
// 1. Builds the sanitized addons (./asan-build.js) in $RXV_ASAN_DIR
//    (default node_modules/.cache/rx-verbs-asan), and dist/ from the
//    current sources (./dist.js) before the ASan runtime is preloaded.
// 2. Runs jest --runInBand on test/native and test/integration (or the
//    paths given) with the sanitized addons (RX_VERBS_ADDON,
//    RX_VERBS_BENCH_ADDON) and the ASan runtime preloaded into node and
//    every child process and worker it starts.
// 3. Every sanitizer report goes to a log file (log_path, one per process).
//    ASan and UBSan reports always count. Leak reports count only when the
//    leaked block was allocated by our code (a frame in rx_verbs.node or
//    src/native): node and V8 leak by design at exit, and those are
//    filtered (scripts/asan/lsan-filter.js; the suppressions file
//    scripts/asan/lsan.supp silences the well-known ones up front).
// Exits non-zero on a failed build, a failed test, or any counted report;
// with RX_VERBS_RESULTS_DIR it writes asan.json (jest's report) and
// asan.exit there.
//
// Env: RXV_ASAN_DIR (build folder), RXV_ASAN_SKIP_BUILD=1 (reuse the build),
//      RXV_ASAN_JEST_WORKERS=N (N jest workers instead of --runInBand: CI
//      runs the suite beside other steps and then alone, on two cores),
//      RXV_ASAN_KEEP_LOGS=1 (keep the raw logs), JOBS (compile jobs), CXX.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { root, recordExit } = require('./step');
const { runJest } = require('./jest');
const { ensureFreshDist } = require('./dist');
const { AsanSetupError, asanRuntime, asanPaths, buildSanitized } = require('./asan-build');

const say = (line) => console.log(`[test:asan] ${line}`);

/** The sanitizers' options: reports to per-process log files, leaks judged afterwards. */
function sanitizerEnv(logs) {
  return {
    // detect_leaks: LSan at exit of every process. log_path: one file per pid.
    ASAN_OPTIONS: [
      'detect_leaks=1',
      `log_path=${path.join(logs, 'asan')}`,
      'detect_stack_use_after_return=0',
      'allow_user_segv_handler=1',
      'handle_segv=1',
      'abort_on_error=0',
      'exitcode=66',
      'strict_init_order=1',
      'check_initialization_order=1',
    ].join(':'),
    // exitcode=0: a leak report alone does not change a process's exit code
    // (tests check children's codes); lsan-filter.js decides which leaks count.
    LSAN_OPTIONS: `suppressions=${path.join(root, 'scripts', 'asan', 'lsan.supp')}:print_suppressions=0:max_leaks=50:report_objects=0:exitcode=0`,
    // halt_on_error: UBSan stops at its first report (so a test fails visibly).
    UBSAN_OPTIONS: `print_stacktrace=1:halt_on_error=1:log_path=${path.join(logs, 'ubsan')}`,
  };
}

/** The whole sanitizer run; resolves its exit status. */
async function asanSuite(targets) {
  const env = process.env;
  // Checked before minutes of building. In band by default (a 2-core
  // machine, other work beside it); each worker is a process of its own, as
  // in band the suite's children are.
  const workers = env.RXV_ASAN_JEST_WORKERS;
  if (workers !== undefined && !/^[1-9]\d*$/.test(workers)) {
    say(`RXV_ASAN_JEST_WORKERS must be a positive integer, got "${workers}"`);
    return 1;
  }
  const band = workers ? [`--maxWorkers=${workers}`] : ['--runInBand'];
  const paths = asanPaths(path.resolve(env.RXV_ASAN_DIR || path.join(root, 'node_modules', '.cache', 'rx-verbs-asan')));
  let runtime;
  try {
    runtime = asanRuntime();
    buildSanitized(paths, { reuse: env.RXV_ASAN_SKIP_BUILD === '1', jobs: env.JOBS || 'max', say });
    // Here, not in jest's global set-up: that would run tsc with ASan preloaded.
    ensureFreshDist({ log: say });
  } catch (err) {
    say(err instanceof AsanSetupError ? err.message : `set-up failed: ${err.message}`);
    return err instanceof AsanSetupError ? err.status : 1;
  }
  say(`addon: ${paths.addon}`);
  say(`bench addon: ${paths.benchAddon}`);
  say(`runtime: ${runtime}`);

  fs.rmSync(paths.logs, { recursive: true, force: true });
  fs.mkdirSync(paths.logs, { recursive: true });
  const jestEnv = {
    ...env,
    ...sanitizerEnv(paths.logs),
    RX_VERBS_ADDON: paths.addon,
    RX_VERBS_BENCH_ADDON: paths.benchAddon,
    RX_VERBS_ASAN: '1',
    LD_PRELOAD: [runtime, env.LD_PRELOAD].filter(Boolean).join(':'),
  };
  const files = targets.length > 0 ? targets : ['test/native', 'test/integration'];
  say(`jest ${band[0]} ${files.join(' ')}`);
  const start = Date.now();
  const jestLog = path.join(paths.out, 'jest.log');
  const jestStatus = await runJest([...band, '--forceExit', '--testTimeout=120000', ...files], { name: 'asan', env: jestEnv, tee: jestLog });
  say(`jest exit ${jestStatus} after ${Math.round((Date.now() - start) / 1000)} s`);

  const filter = spawnSync(process.execPath, [path.join(root, 'scripts', 'asan', 'lsan-filter.js'), paths.logs], { stdio: 'inherit' });
  if (jestStatus !== 0) {
    say(`FAILED: jest failed under the sanitizers (log: ${jestLog})`);
    return 1;
  }
  if (filter.status !== 0) {
    say(`FAILED: sanitizer reports above (raw logs: ${paths.logs})`);
    return 1;
  }
  if (env.RXV_ASAN_KEEP_LOGS !== '1') fs.rmSync(paths.logs, { recursive: true, force: true });
  say('clean: no ASan/UBSan report, no leak from rx-verbs');
  return 0;
}

/** Runs the sanitizer suite and records its final status as asan.exit (jest's own goes there first). */
async function runAsan(targets) {
  const status = await asanSuite(targets);
  recordExit('asan', status);
  return status;
}

module.exports = { runAsan };
