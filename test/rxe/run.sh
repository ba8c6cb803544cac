#!/usr/bin/env bash
# npm run test:rxe — the ibverbs provider against the real kernel RDMA stack.
# Boots a Debian kernel under QEMU (TCG, no network device), creates Soft-RoCE
# rxe0 on the guest's loopback, and runs there (see guest.sh):
#   jest     test/native/ on rxe0 (RX_VERBS_TEST_DEVICE=rxe0) in one node process
#   interop  rx-verbs pingpong <-> rdma-core's ibv_rc_pingpong, both roles
# Exits non-zero if the guest failed or produced no report; ends with one
# summary line.
#
# usage: test/rxe/run.sh [--jest-only | --interop-only] [--output FILE]
#                        [--quick] [--verbose] [-- JEST ARGS...]
#   --output FILE   write the merged report (jest --json format; the interop
#                   cases appear as the suite test/rxe/interop) to FILE
#   --quick         interop: a few cases instead of the whole matrix
#   -- ARGS         jest arguments instead of the default (the whole of
#                   test/native/ as one test file, see native-suite.ts)
# env: RXE_PARTS="jest interop"  RXE_SMP=2  RXE_MEM=3072 (MiB)
#      RXE_TIMEOUT=900 (s, the whole VM)  RXE_CACHE_DIR=test/rxe/.cache
#      RXE_NATIVE_FILES=qp.test.ts,arm.test.ts (only these native files)
#      RXE_INTEROP_CASES / RXE_CLI_CASES (lines "server client size iters events")
set -uo pipefail
. "$(dirname "$0")/lib.sh"

parts=${RXE_PARTS:-jest interop}
output= quick=0 verbose=0
jest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --jest-only) parts=jest ;;
    --interop-only) parts=interop ;;
    --output) output=${2:?--output needs a file}; shift ;;
    --output=*) output=${1#*=} ;;
    --quick) quick=1 ;;
    --verbose|-v) verbose=1 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; jest_args=("$@"); break ;;
    *) rxe_die "unknown option $1 (see --help)" ;;
  esac
  shift
done
if [ -n "$output" ]; then
  mkdir -p "$(dirname "$output")" && output=$(cd "$(dirname "$output")" && pwd)/$(basename "$output")
fi

# The merged report and the summary line, also when we stop early.
START=$SECONDS
finish() { # exit status of the run so far
  local rc=$1 line
  line=$(node "$RXE_DIR/report.js" "$OUT" "$parts" "$rc" "$output" "$((SECONDS - START))" "$verbose") || rc=1
  echo "$line"
  exit "$rc"
}
OUT=$CACHE_DIR/out
mkdir -p "$CACHE_DIR"
rm -rf "$OUT" && mkdir -p "$OUT"

# --- prerequisites ------------------------------------------------------------
rxe_require_tools || finish 1
if [ ! -f "$KERNEL_DIR/ORDER" ] || [ ! -f "$KERNEL_DIR/vmlinuz" ]; then
  rxe_log "no guest kernel cached yet: fetching it (once)"
  bash "$RXE_DIR/fetch-kernel.sh" || {
    rxe_log "could not fetch the guest kernel; as root run: bash test/rxe/setup.sh"; finish 1; }
fi
addon=$PROJECT_ROOT/build/Release/rx_verbs.node
[ -f "$addon" ] || { rxe_log "the addon is not built: npx node-gyp rebuild -j 2"; finish 1; }
node -e "process.exit(require('$addon').hasIbverbs() ? 0 : 1)" 2>/dev/null || {
  rxe_log "the addon was built without the ibverbs provider: apt-get install libibverbs-dev, then npx node-gyp rebuild -j 2"; finish 1; }
case " $parts " in *" interop "*)
  [ -f "$PROJECT_ROOT/dist/cli/pingpong/command.js" ] || {
    rxe_log "the CLI is not built: npx tsc -p tsconfig.build.json"; finish 1; } ;;
esac

# initramfs: rebuilt when /init or the kernel cache changed
if [ ! -f "$INITRAMFS" ] || [ "$RXE_DIR/init" -nt "$INITRAMFS" ] || [ "$KERNEL_DIR/ORDER" -nt "$INITRAMFS" ]; then
  bash "$RXE_DIR/build-initramfs.sh" || finish 1
fi

# --- what the guest runs -------------------------------------------------------
# The interop matrix (server client size iters events(1 = -e)), run in one
# node process by interop.js; ours-vs-ours cases need two processes and go
# to the CLI list. The CLI list runs real `rx-verbs pingpong` processes.
if [ $quick = 1 ]; then
  interop_cases="ours theirs 4096 200 1
theirs ours 4096 200 0"
  cli_cases="ours theirs 4096 100 1"
else
  interop_cases="ours theirs 64 1000 0
ours theirs 4096 500 0
ours theirs 65536 100 0
ours theirs 64 1000 1
ours theirs 4096 500 1
ours theirs 65536 100 1
theirs ours 64 1000 0
theirs ours 4096 500 0
theirs ours 65536 100 0
theirs ours 64 1000 1
theirs ours 4096 500 1
theirs ours 65536 100 1"
  cli_cases="theirs theirs 4096 500 0
ours theirs 4096 500 1
theirs ours 65536 100 0
ours ours 4096 500 1"
fi

# jest: by default the whole native suite as ONE test file (native-suite.ts:
# every test file costs ~20 s of set-up under TCG); `-- ARGS` runs jest as given.
if [ ${#jest_args[@]} -eq 0 ]; then
  # (jest.config.js keeps test/rxe/ out of the host's runs: undo that here)
  jest_args=(--testMatch '**/test/rxe/native-suite.ts' --testPathIgnorePatterns /node_modules/)
fi
JEST_CACHE=$CACHE_DIR/jest-cache
case " $parts " in *" jest "*)
  # Warm jest's transform cache here (swc is quick natively, slow under TCG):
  # a run that loads every test file and runs none of them (-t matches no
  # test). Same flags and cache path as in the guest, so the keys match.
  t=$SECONDS
  if [ -d "$JEST_CACHE" ] && [ "$(du -sm "$JEST_CACHE" | cut -f1)" -gt 200 ]; then rm -rf "$JEST_CACHE"; fi
  mkdir -p "$JEST_CACHE"
  (cd "$PROJECT_ROOT" && RX_VERBS_TEST_DEVICE=rxe0 node node_modules/jest/bin/jest.js --runInBand --ci \
    --cacheDirectory="$JEST_CACHE" -t '^rxe: warm the transform cache, run nothing$' "${jest_args[@]}" \
    > "$OUT/jest-warmup.log" 2>&1) || true
  rxe_log "warmed jest's transform cache ($((SECONDS - t))s)"
  ;;
esac

# What node loads, packed into one file the guest unpacks into its RAM.
FAST_TAR=$CACHE_DIR/fast.tar
tar -cf "$FAST_TAR" --exclude='*.map' --exclude='*.md' --exclude='*.d.ts' \
  --exclude=node_modules/typescript --exclude=node_modules/typedoc --exclude=node_modules/@shikijs \
  --exclude=node_modules/markdown-it --exclude=node_modules/node-gyp --exclude=node_modules/@types \
  -C / "${PROJECT_ROOT#/}/node_modules" "${PROJECT_ROOT#/}/dist" "${PROJECT_ROOT#/}/build/Release/rx_verbs.node" \
  $([ -d "$JEST_CACHE" ] && echo "${JEST_CACHE#/}") 2>/dev/null || rxe_die "could not pack $FAST_TAR"

{
  printf 'RXE_PROJECT=%q\n' "$PROJECT_ROOT"
  printf 'RXE_PARTS=%q\n' "$parts"
  printf 'RXE_JEST_ARGS=('; printf '%q ' "${jest_args[@]}"; printf ')\n'
  printf 'RXE_JEST_CACHE=%q\n' "$JEST_CACHE"
  printf 'RXE_NATIVE_FILES=%q\n' "${RXE_NATIVE_FILES:-}"
  printf 'RXE_INTEROP_CASES=%q\n' "${RXE_INTEROP_CASES:-$interop_cases}"
  printf 'RXE_CLI_CASES=%q\n' "${RXE_CLI_CASES:-$cli_cases}"
  printf 'RXE_FAST_TAR=%q\n' "$FAST_TAR"
} > "$OUT/guest.env"

# --- boot ----------------------------------------------------------------------
# Folders the guest must still see after it covers /tmp, /root, ... with tmpfs.
node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
keep="$PROJECT_ROOT"
case $node_prefix in /usr|/usr/local) ;; *) keep="$keep:$node_prefix" ;; esac
case $keep in *' '*) rxe_die "paths with spaces are not supported: $keep" ;; esac

rxe_log "booting $(cat "$KERNEL_DIR/KVER") under QEMU/TCG (smp ${RXE_SMP:-2}, ${RXE_MEM:-3072} MiB); parts: $parts"
console=$OUT/console.log
# -nic none: the VM has no network device; all RoCE and TCP traffic stays
# inside the guest kernel (rxe0 on lo, 127.0.0.1).
timeout --foreground -k 10 "${RXE_TIMEOUT:-900}" qemu-system-x86_64 \
  -accel tcg -cpu max -smp "${RXE_SMP:-2}" -m "${RXE_MEM:-3072}" -machine q35 \
  -nographic -serial stdio -monitor none -nic none -no-reboot \
  -kernel "$KERNEL_DIR/vmlinuz" -initrd "$INITRAMFS" \
  -append "console=ttyS0 panic=-1 quiet loglevel=3 rxe_script=$RXE_DIR/guest.sh rxe_keep=$keep" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$OUT,mount_tag=out,security_model=none,multidevs=remap" \
  < /dev/null 2>&1 | sed -u 's/\r$//' | tee "$console" | {
    if [ $verbose = 1 ]; then cat; else grep --line-buffered -E '^(GUEST|INIT|PASS|FAIL|  ●|Tests:|Test Suites:|    (server|client)\|)'; fi
  }
qemu_rc=${PIPESTATUS[0]}
rm -f "$FAST_TAR"
[ "$qemu_rc" -eq 124 ] && rxe_log "the VM ran past RXE_TIMEOUT=${RXE_TIMEOUT:-900}s and was stopped"

guest_rc=$(cat "$OUT/guest-exit" 2>/dev/null)
if [ -z "$guest_rc" ]; then
  rxe_log "the guest reported no exit status (qemu exit $qemu_rc); console: ${console#$PROJECT_ROOT/}"
  finish 1
fi
finish "$guest_rc"
