#!/bin/bash
# Runs INSIDE each of the two guests of the pair part (started by init,
# chrooted into the host's root file system, read-only). Makes node start
# quickly (what it loads, unpacked into RAM), then hands over to pair.js,
# which sets up the NICs and rxe0 and runs the cases (guest a serves,
# guest b drives). $RXE_OUT/guest.env (from run.js):
# RXE_PROJECT, RXE_ROLE (a|b), RXE_SELF, RXE_PEER, RXE_PAIR_CASES,
# RXE_QUICK, RXE_FAST_TAR. Exit status: pair.js's.
set -u
OUT=${RXE_OUT:?RXE_OUT is set by init}
set -a   # pair.js reads them from its environment
# shellcheck source=/dev/null
. "$OUT/guest.env"
set +a
cd "$RXE_PROJECT" || exit 90
T0=$EPOCHREALTIME
log() { printf 'GUEST[%6.1fs] %s\n' "$(awk "BEGIN{print $EPOCHREALTIME-$T0}")" "$*"; }
log "pair guest $RXE_ROLE ($RXE_SELF): kernel $(uname -r), $(nproc) vCPU"

# Every file read over 9p is slow under TCG: the cases that start node with
# the addon and rxjs would pay ~20 s a start (see guest.sh).
if [ -f "${RXE_FAST_TAR:-}" ]; then
  mkdir -p /tmp/fast && tar -xf "$RXE_FAST_TAR" -C /tmp/fast || { log "FAILED: unpacking $RXE_FAST_TAR"; exit 1; }
  for d in "$RXE_PROJECT/node_modules" "$RXE_PROJECT/dist" "$RXE_PROJECT/src/native/build"; do
    [ -d "/tmp/fast$d" ] && [ -d "$d" ] && mount --bind "/tmp/fast$d" "$d"
  done
  log "node_modules, dist, build in tmpfs"
fi

RXE_OUT=$OUT node "$RXE_PROJECT/test/rxe/pair.js" "$RXE_ROLE"
