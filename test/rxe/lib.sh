# Shared by the host-side scripts of the rxe VM harness (sourced, not run).
# Paths, the list of host tools, and the kernel cache layout.

RXE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT_ROOT=$(cd "$RXE_DIR/../.." && pwd)
CACHE_DIR=${RXE_CACHE_DIR:-$RXE_DIR/.cache}
KERNEL_DIR=$CACHE_DIR/kernel        # vmlinuz + the modules we need + ORDER
INITRAMFS=$CACHE_DIR/initramfs.cpio.gz

# Debian packages the harness needs on the host (the guest uses the host's
# own root file system, so the guest-side tools come from here too).
RXE_HOST_PACKAGES="qemu-system-x86 busybox-static kmod rdma-core ibverbs-utils libibverbs-dev ibverbs-providers iproute2 rdmacm-utils"

# tool -> package that provides it
RXE_HOST_TOOLS="qemu-system-x86_64:qemu-system-x86 busybox:busybox-static modinfo:kmod rdma:iproute2 ibv_rc_pingpong:ibverbs-utils ibv_devinfo:ibverbs-utils rping:rdmacm-utils rdma_server:rdmacm-utils rdma_client:rdmacm-utils dpkg-deb:dpkg apt-get:apt cpio:cpio gzip:gzip"

rxe_log() { printf 'rxe: %s\n' "$*" >&2; }
rxe_die() { printf 'rxe: %s\n' "$*" >&2; exit 1; }

# Prints "tool (package)" for each missing host tool; returns 1 if any.
rxe_missing_tools() {
  local pair tool pkg missing=0
  for pair in $RXE_HOST_TOOLS; do
    tool=${pair%%:*} pkg=${pair#*:}
    [ "$tool" = cpio ] && continue   # busybox provides cpio
    if ! command -v "$tool" >/dev/null 2>&1; then
      printf '%s (%s)\n' "$tool" "$pkg"; missing=1
    fi
  done
  # busybox must be the static one: it runs as the initramfs's /init
  if command -v busybox >/dev/null 2>&1 && ! file_is_static "$(command -v busybox)"; then
    printf 'a static busybox (busybox-static)\n'; missing=1
  fi
  [ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] || ls /usr/lib/*/libibverbs/librxe-* >/dev/null 2>&1 \
    || { printf 'the rxe provider of libibverbs (ibverbs-providers)\n'; missing=1; }
  return $missing
}

file_is_static() { ! LC_ALL=C ldd "$1" >/dev/null 2>&1; }

# The one message for a missing prerequisite.
rxe_require_tools() {
  local missing
  if ! missing=$(rxe_missing_tools); then
    {
      echo "rxe: missing on this machine:"
      echo "$missing" | sed 's/^/  - /'
      echo "rxe: install them with (as root):  bash test/rxe/setup.sh"
      echo "rxe:   (= apt-get install -y $RXE_HOST_PACKAGES, then fetches the guest kernel)"
    } >&2
    return 1
  fi
}

# Run directly (run.js does: bash lib.sh require-tools): the same check.
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = require-tools ]; then rxe_require_tools; exit; fi
