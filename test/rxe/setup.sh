#!/usr/bin/env bash
# One-time set-up of the rxe VM harness (run as root):
#   installs the host packages the VM needs, then fetches and caches the
#   Debian kernel and modules the guest boots (see fetch-kernel.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  rxe_die "setup.sh installs Debian packages: run it as root (sudo bash test/rxe/setup.sh)"
fi
export DEBIAN_FRONTEND=noninteractive
rxe_log "apt-get install $RXE_HOST_PACKAGES"
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $RXE_HOST_PACKAGES >/dev/null
bash "$RXE_DIR/fetch-kernel.sh"
rxe_log "set-up done; run: npm run test:rxe"
