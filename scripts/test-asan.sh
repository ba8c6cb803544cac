#!/usr/bin/env bash
# npm run test:asan — the native suites under AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer.
#
# 1. Builds the addon and the benchmark baselines' addon (test/native/
#    bench-threads.test.ts runs them) with `RXV_SANITIZE=1 RXV_BENCH=1`
#    (binding.gyp: -fsanitize=address,undefined) from a copy of the sources,
#    in a folder of its own ($RXV_ASAN_DIR, default
#    node_modules/.cache/rx-verbs-asan), so the normal build/Release is never
#    touched.
# 2. Runs jest --runInBand on test/native and test/integration (or the
#    paths given as arguments) with the sanitized addons (RX_VERBS_ADDON,
#    RX_VERBS_BENCH_ADDON) and the ASan runtime preloaded into node and every
#    child process and worker it starts.
# 3. Every sanitizer report goes to a log file (log_path, one per process).
#    ASan and UBSan reports always count. Leak reports count only when the
#    leaked block was allocated by our code (a frame in rx_verbs.node or
#    src/native): node and V8 leak by design at exit, and those are
#    filtered (scripts/asan/lsan-filter.js; the suppressions file
#    scripts/asan/lsan.supp silences the well-known ones up front).
# Exits non-zero on a failed build, a failed test, or any counted report.
#
# Env: RXV_ASAN_DIR (build folder), RXV_ASAN_SKIP_BUILD=1 (reuse the build),
#      RXV_ASAN_KEEP_LOGS=1 (keep the raw logs), JOBS (compile jobs).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${RXV_ASAN_DIR:-$ROOT/node_modules/.cache/rx-verbs-asan}
TREE=$OUT/tree
LOGS=$OUT/logs
ADDON=$TREE/build/Release/rx_verbs.node
BENCH_ADDON=$TREE/build/Release/rx_verbs_bench.node
CXX=${CXX:-g++}

say() { printf '[test:asan] %s\n' "$*"; }

# The ASan runtime that matches the compiler (g++: libasan; clang: its own).
case "${CXX##*/}" in
  clang*) ASAN_RT=$($CXX -print-file-name=libclang_rt.asan-x86_64.so) ;;
  *) ASAN_RT=$($CXX -print-file-name=libasan.so) ;;
esac
ASAN_RT=$(readlink -f "$ASAN_RT" 2>/dev/null || echo "$ASAN_RT")
if [ ! -f "$ASAN_RT" ]; then
  say "no ASan runtime for $CXX (looked for $ASAN_RT); on Debian: apt-get install libasan8 (g++) or libclang-rt-dev (clang)"
  exit 2
fi

if [ "${RXV_ASAN_SKIP_BUILD:-0}" != 1 ] || [ ! -f "$ADDON" ] || [ ! -f "$BENCH_ADDON" ]; then
  say "building the sanitized addon in $TREE"
  mkdir -p "$TREE"
  # Only what binding.gyp reads; rsync would be nicer but is not always there.
  rm -rf "$TREE/src" "$TREE/scripts" "$TREE/bench"
  mkdir -p "$TREE/src" "$TREE/bench"
  cp -R src/native "$TREE/src/native"
  cp -R bench/native "$TREE/bench/native"
  cp -R scripts "$TREE/scripts"
  cp binding.gyp package.json "$TREE/"
  # node-addon-api is found from the tree through the parent's node_modules
  # when the tree lies under it; point at it explicitly otherwise.
  export NODE_PATH="$ROOT/node_modules${NODE_PATH:+:$NODE_PATH}"
  # node-gyp run directly does not read .npmrc: pass on a configured nodedir
  # (headers installed locally) as npm would.
  if [ -z "${npm_config_nodedir:-}" ]; then
    nodedir=$(npm config get nodedir 2>/dev/null || true)
    case "$nodedir" in ''|undefined|null) ;; *) export npm_config_nodedir=$nodedir ;; esac
  fi
  ( cd "$TREE" && RXV_SANITIZE=1 RXV_BENCH=1 CXX=$CXX "$ROOT/node_modules/.bin/node-gyp" rebuild -j "${JOBS:-max}" >"$OUT/build.log" 2>&1 )
  rc=$?
  if [ $rc -ne 0 ] || [ ! -f "$ADDON" ] || [ ! -f "$BENCH_ADDON" ]; then
    tail -40 "$OUT/build.log"
    say "build failed (full log: $OUT/build.log)"
    exit 1
  fi
  for a in "$ADDON" "$BENCH_ADDON"; do
    # grep reads all of nm's output: with -q it may exit first, and
    # pipefail would count nm's SIGPIPE as a miss.
    if ! nm -D "$a" | grep __asan_init >/dev/null; then
      say "the addon at $a is not instrumented (no __asan_init): RXV_SANITIZE did not reach binding.gyp"
      exit 1
    fi
  done
fi
say "addon: $ADDON"
say "bench addon: $BENCH_ADDON"
say "runtime: $ASAN_RT"

# TS sources are run by jest through swc; child fixtures load dist/.
if [ ! -f dist/index.js ] || [ "${RXV_ASAN_SKIP_TSC:-0}" != 1 ]; then
  "$ROOT/node_modules/.bin/tsc" -p tsconfig.build.json || { say "tsc failed"; exit 1; }
fi

rm -rf "$LOGS"
mkdir -p "$LOGS"
SUPP=$ROOT/scripts/asan/lsan.supp
# detect_leaks: LSan at exit of every process. log_path: one file per pid.
# halt_on_error: UBSan stops at its first report (so a test fails visibly).
# new_delete_type_mismatch / alloc_dealloc_mismatch are on (defaults).
export ASAN_OPTIONS="detect_leaks=1:log_path=$LOGS/asan:detect_stack_use_after_return=0:allow_user_segv_handler=1:handle_segv=1:abort_on_error=0:exitcode=66:strict_init_order=1:check_initialization_order=1"
# exitcode=0: a leak report alone does not change a process's exit code (tests check
# children's codes); lsan-filter.js decides which leaks count.
export LSAN_OPTIONS="suppressions=$SUPP:print_suppressions=0:max_leaks=50:report_objects=0:exitcode=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
export RX_VERBS_ADDON=$ADDON
export RX_VERBS_BENCH_ADDON=$BENCH_ADDON
export RX_VERBS_ASAN=1

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(test/native test/integration)
say "jest --runInBand ${targets[*]}"
start=$SECONDS
LD_PRELOAD="$ASAN_RT${LD_PRELOAD:+:$LD_PRELOAD}" \
  "$ROOT/node_modules/.bin/jest" --runInBand --forceExit --testTimeout=120000 ${RX_VERBS_RESULTS_DIR:+--json "--outputFile=$RX_VERBS_RESULTS_DIR/asan.json"} "${targets[@]}" 2>&1 | tee "$OUT/jest.log"
jest_rc=${PIPESTATUS[0]}
say "jest exit $jest_rc after $((SECONDS - start)) s"

node "$ROOT/scripts/asan/lsan-filter.js" "$LOGS"
filter_rc=$?

if [ $jest_rc -ne 0 ]; then
  say "FAILED: jest failed under the sanitizers (log: $OUT/jest.log)"
  exit 1
fi
if [ $filter_rc -ne 0 ]; then
  say "FAILED: sanitizer reports above (raw logs: $LOGS)"
  exit 1
fi
[ "${RXV_ASAN_KEEP_LOGS:-0}" = 1 ] || rm -rf "$LOGS"
say "clean: no ASan/UBSan report, no leak from rx-verbs"
