#!/bin/bash
# Runs INSIDE the rxe VM (started by init, chrooted into the host's root file
# system, read-only). Creates the Soft-RoCE device rxe0 on the guest's
# loopback, then runs the parts asked for in $RXE_OUT/guest.env:
#   jest     the native test suite on rxe0, in ONE node process (jest --runInBand)
#   interop  rx-verbs pingpong against rdma-core's ibv_rc_pingpong, both roles
#   bench    the benchmark suites on rxe0 (npm run bench:rxe), after the others
# Everything it learns goes to $RXE_OUT (the writable results share):
#   device.txt, jest.json, jest.log, interop.tsv, interop/*.log, bench.json,
#   bench.log, status
# and a compact log goes to the console. Exit status: 0 if every part passed.
set -u
OUT=${RXE_OUT:?RXE_OUT is set by init}
# shellcheck source=/dev/null
. "$OUT/guest.env"   # RXE_PROJECT, RXE_PARTS, RXE_JEST_ARGS (array), RXE_JEST_TIMEOUT, RXE_NATIVE_FILES,
                     # RXE_INTEROP_CASES, RXE_CLI_CASES, RXE_FAST_TAR, RXE_JEST_CACHE,
                     # RXE_BENCH_SCALE, RXE_BENCH_SUITES
cd "$RXE_PROJECT" || exit 90

T0=$EPOCHREALTIME
log() { printf 'GUEST[%6.1fs] %s\n' "$(awk "BEGIN{print $EPOCHREALTIME-$T0}")" "$*"; }
elapsed() { awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME-$1}"; }
status() { echo "$*" >> "$OUT/status"; }   # "<part> <rc> <seconds>" lines for the host

log "kernel $(uname -r), $(nproc) vCPUs; parts: $RXE_PARTS"

# --- the device -------------------------------------------------------------
ip link set lo up
if ! rdma link add rxe0 type rxe netdev lo; then
  log "FAILED: rdma link add rxe0 type rxe netdev lo"; status "device 1 0"; exit 1
fi
GIDS=/sys/class/infiniband/rxe0/ports/1/gids
# The RoCE v2 GID of 127.0.0.1 (IPv4-mapped ::ffff:127.0.0.1); one grep.
GID_FILE=$(grep -l '^0000:0000:0000:0000:0000:ffff:7f00:0001$' "$GIDS"/* | head -1)
if [ -z "$GID_FILE" ]; then
  log "FAILED: no ::ffff:127.0.0.1 GID on rxe0"; (cd "$GIDS" && grep -H . ./*) | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'
  status "device 1 0"; exit 1
fi
GID_IDX=${GID_FILE##*/}
{ ibv_devinfo -v -d rxe0; echo "gid index of ::ffff:127.0.0.1: $GID_IDX"; } > "$OUT/device.txt" 2>&1
log "rxe0 on lo: $(rdma link show rxe0/1 | sed 's/.*state/state/'), GID index $GID_IDX"
status "device 0 0"
echo "$GID_IDX" > "$OUT/gid-index"

# Every file read over 9p costs a round trip through the emulated virtio
# device: a node start that loads rxjs takes ~20 s from 9p, ~6 s from tmpfs.
# run.js packed what node loads (node_modules, dist, the addon, jest's warm
# transform cache) into one tar: unpack it into the guest's RAM and mount it
# over the project's folders.
if [ -f "${RXE_FAST_TAR:-}" ]; then
  t=$EPOCHREALTIME
  mkdir -p /tmp/fast && tar -xf "$RXE_FAST_TAR" -C /tmp/fast || { log "FAILED: unpacking $RXE_FAST_TAR"; exit 1; }
  for d in "$RXE_PROJECT/node_modules" "$RXE_PROJECT/dist" "$RXE_PROJECT/src/native/build" "$RXE_JEST_CACHE"; do
    [ -d "/tmp/fast$d" ] && [ -d "$d" ] && mount --bind "/tmp/fast$d" "$d"
  done
  log "node_modules, dist, build in tmpfs ($(du -sm /tmp/fast | cut -f1) MB, $(elapsed "$t")s)"
fi

rc_all=0
has_part() { case " $RXE_PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# --- jest: the native suite on rxe0, one node process ------------------------
if has_part jest; then
  log "jest: ${RXE_JEST_ARGS[*]}"
  t=$EPOCHREALTIME
  # --ci: no snapshot writes. The cache folder is the one run.js warmed on
  # the host (same path, so the same transform cache keys), now in tmpfs.
  # dist/ was built and checked on the host before packing (the guest has
  # no compiler packed): RX_VERBS_DIST_PREBUILT tells the set-up so.
  RX_VERBS_DIST_PREBUILT=1 RX_VERBS_TEST_DEVICE=rxe0 RX_VERBS_TEST_GID_INDEX=$GID_IDX RXE_NATIVE_FILES=${RXE_NATIVE_FILES:-} \
    timeout "${RXE_JEST_TIMEOUT:-780}" node node_modules/jest/bin/jest.js \
      --runInBand --ci --forceExit --cacheDirectory="$RXE_JEST_CACHE" \
      --json --outputFile="$OUT/jest.json" "${RXE_JEST_ARGS[@]}" > "$OUT/jest.log" 2>&1
  rc=$?
  # the compact part of jest's log: file verdicts, failures, totals
  grep -E '^(PASS|FAIL) |●|^Tests:|^Test Suites:|^Time:' "$OUT/jest.log" | grep -v '● Console' | head -80
  log "jest: exit $rc in $(elapsed "$t")s"
  status "jest $rc $(elapsed "$t")"
  [ $rc -eq 0 ] || rc_all=1
fi

# --- interop: rx-verbs pingpong <-> ibv_rc_pingpong --------------------------
# The matrix (ours vs theirs, both roles) runs in ONE node process
# (interop.js, our side in-process with the CLI's code); the CLI itself runs
# as a process in the few cases of $RXE_CLI_CASES (exit statuses of real
# `rx-verbs pingpong` processes, and ours against ours across two processes).
OURS=(node "$RXE_PROJECT/dist/cli/main.js" pingpong --timeout 60)
THEIRS=(ibv_rc_pingpong)

# Waits until something listens on TCP port $1 (<= $2 s), without connecting
# (the servers accept one client only).
wait_listen() {
  local hex deadline
  hex=$(printf '%04X' "$1")
  deadline=$(( EPOCHSECONDS + $2 ))
  while [ "$EPOCHSECONDS" -le "$deadline" ]; do
    # state 0A = LISTEN; the local address column ends in :PORT
    grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# The report lines both implementations print, with the right figures.
check_report() { # file size iters
  local f=$1 size=$2 iters=$3
  grep -qE "^$((size * iters * 2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$f" &&
    grep -qE "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$f"
}

# One pingpong run with real processes: server in the background, client in
# the foreground. args: server client size iters events(0|1) tcp-port
cli_case() {
  local server=$1 client=$2 size=$3 iters=$4 events=$5 port=$6
  local name="cli-$server-$client-$size-$([ "$events" = 1 ] && echo ev || echo poll)"
  local args=(-d rxe0 -g "$GID_IDX" -s "$size" -n "$iters" -p "$port")
  [ "$events" = 1 ] && args+=(-e)
  local srv cli
  if [ "$server" = ours ]; then srv=("${OURS[@]}"); else srv=("${THEIRS[@]}"); fi
  if [ "$client" = ours ]; then cli=("${OURS[@]}"); else cli=("${THEIRS[@]}"); fi
  local slog="$OUT/interop/$name.server.log" clog="$OUT/interop/$name.client.log"
  local t=$EPOCHREALTIME
  timeout 180 "${srv[@]}" "${args[@]}" > "$slog" 2>&1 &
  local spid=$!
  local crc=125
  if wait_listen "$port" 90; then
    timeout 180 "${cli[@]}" "${args[@]}" 127.0.0.1 > "$clog" 2>&1
    crc=$?
  else
    echo "not started: the server did not listen on port $port within 90 s" > "$clog"
    kill "$spid" 2>/dev/null
  fi
  wait "$spid"
  local src=$?
  local ok=PASS
  { [ $src -eq 0 ] && [ $crc -eq 0 ] && check_report "$slog" "$size" "$iters" && check_report "$clog" "$size" "$iters"; } || ok=FAIL
  local mbit
  mbit=$(sed -n 's/.* = \([0-9.]*\) Mbit\/sec$/\1/p' "$clog" | head -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$server" "$client" "$size" "$iters" \
    "$([ "$events" = 1 ] && echo events || echo poll)" "$src" "$crc" "$ok" "$(elapsed "$t")" "${mbit:--}" >> "$OUT/interop.tsv"
  log "interop $(printf '%-28s' "$name") server=$server rc=$src client=$client rc=$crc  $ok ($(elapsed "$t")s)"
  if [ $ok = FAIL ]; then
    sed 's/^/    server| /' "$slog" | tail -8
    sed 's/^/    client| /' "$clog" | tail -8
    return 1
  fi
}

if has_part interop; then
  mkdir -p "$OUT/interop"
  printf 'name\tserver\tclient\tsize\titers\tmode\tserver_rc\tclient_rc\tresult\tseconds\tclient_mbit\n' > "$OUT/interop.tsv"
  t=$EPOCHREALTIME
  irc=0
  if [ ! -f "$RXE_PROJECT/dist/cli/main.js" ]; then
    log "interop: dist/cli/main.js missing (build with npx tsc -p tsconfig.build.json)"; irc=1
  else
    # the matrix, in one process
    if [ -n "$RXE_INTEROP_CASES" ]; then
      RXE_OUT=$OUT node "$RXE_PROJECT/test/rxe/interop.js" "$GID_IDX" 18600 <<< "$RXE_INTEROP_CASES" || irc=1
    fi
    # the CLI as processes
    port=18515
    while read -r server client size iters events; do
      [ -n "$server" ] || continue
      cli_case "$server" "$client" "$size" "$iters" "$events" "$port" || irc=1
      port=$((port + 1))
    done <<< "$RXE_CLI_CASES"
    # and --loopback on rxe0: both roles in one process, two contexts
    for dev in rxe0; do
      t1=$EPOCHREALTIME
      lb=(-d "$dev" -p 0 -s 4096 -n 200 -e)
      [ "$dev" = rxe0 ] && lb+=(-g "$GID_IDX")
      "${OURS[@]}" --loopback "${lb[@]}" > "$OUT/interop/loopback-$dev.log" 2>&1
      lrc=$?
      ok=PASS
      { [ $lrc -eq 0 ] && [ "$(grep -cE '^\[(server|client)\] (1638400 bytes|200 iters) in ' "$OUT/interop/loopback-$dev.log")" = 4 ]; } || ok=FAIL
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "loopback-$dev" ours ours 4096 200 events "$lrc" "$lrc" "$ok" "$(elapsed "$t1")" - >> "$OUT/interop.tsv"
      log "interop $(printf '%-28s' "loopback-$dev") one process, rc=$lrc  $ok ($(elapsed "$t1")s)"
      [ $ok = PASS ] || { irc=1; sed 's/^/    loopback| /' "$OUT/interop/loopback-$dev.log" | tail -8; }
    done
  fi
  log "interop: exit $irc in $(elapsed "$t")s"
  status "interop $irc $(elapsed "$t")"
  [ $irc -eq 0 ] || rc_all=1
fi

# --- bench: the throughput, event-rate and latency suites on rxe0 -----------
# bench/build (the suites) and the bench addon were built on the host; the
# native baselines run on rxe0 in the same process and run. Always the
# suites' quick shape: under TCG rxe0 moves ~10k WC/s, soft0 millions;
# RXE_BENCH_SCALE (from run.js: 0.5, 0.1 when quick) sizes the work.
if has_part bench; then
  t=$EPOCHREALTIME
  bargs=(--quick --scale "${RXE_BENCH_SCALE:-1}" --only "${RXE_BENCH_SUITES:-throughput,eventRate,latency}" -d rxe0 -g "$GID_IDX" --out "$OUT/bench.json")
  timeout "${RXE_BENCH_TIMEOUT:-900}" node --expose-gc "$RXE_PROJECT/bench/build/main.js" "${bargs[@]}" > "$OUT/bench.log" 2>&1
  rc=$?
  grep -E '^  .*(round|chunk) ' "$OUT/bench.log" | tail -4
  log "bench: exit $rc in $(elapsed "$t")s"
  status "bench $rc $(elapsed "$t")"
  [ $rc -eq 0 ] || { rc_all=1; tail -20 "$OUT/bench.log"; }
fi

log "done, exit $rc_all"
exit $rc_all
