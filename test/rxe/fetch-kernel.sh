#!/usr/bin/env bash
# Fetches the Debian kernel the guest boots and keeps only what the VM needs:
#   .cache/kernel/vmlinuz, .cache/kernel/mods/<name>.ko, .cache/kernel/ORDER
#   (load order, derived from `modinfo -F depends`), .cache/kernel/VERSION.
# The kernel is whatever `linux-image-amd64` depends on today; nothing here
# names a kernel version. Needs apt lists (apt-get update) but not root.
# usage: fetch-kernel.sh [--force]
set -euo pipefail
# Under pipefail a reader that stops early (`head`, `grep -q`, `grep -m1`)
# can kill the writer with SIGPIPE and fail the pipeline by chance: take the
# first line with `sed -n 1p`, which reads its whole input.
. "$(dirname "$0")/lib.sh"

# Modules the guest loads; their dependencies are added from modinfo.
# crc32_generic: rdma_rxe asks the crypto API for "crc32" at run time, and
# without a modprobe in the guest nothing would load it (so it goes first).
# virtio_net: the pair part's two guests are joined by virtio NICs;
# rdma_ucm (and through it rdma_cm, ib_cm, iw_cm): /dev/infiniband/rdma_cm.
WANTED="virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe ib_uverbs virtio_net rdma_ucm ${RXE_EXTRA_MODULES:-}"

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && command -v modinfo >/dev/null \
  || rxe_die "fetch-kernel.sh needs apt-get, dpkg-deb and modinfo (kmod): run as root: bash test/rxe/setup.sh"

meta=linux-image-amd64
# The image package the meta package depends on, e.g. linux-image-6.1.0-57-amd64
image=$(apt-cache show --no-all-versions "$meta" 2>/dev/null \
  | sed -n 's/^Depends: //p' | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep '^linux-image-' | sed -n 1p || true)
[ -n "$image" ] || rxe_die "cannot resolve $meta (no apt lists? run: apt-get update)"
version=$(apt-cache show --no-all-versions "$image" | sed -n 's/^Version: //p' | sed -n 1p)
want_stamp="$image $version $WANTED"

if [ "${1:-}" != --force ] && [ -f "$KERNEL_DIR/VERSION" ] && [ "$(cat "$KERNEL_DIR/VERSION")" = "$want_stamp" ]; then
  rxe_log "kernel cache up to date: $image $version"
  exit 0
fi

mkdir -p "$CACHE_DIR"
work=$(mktemp -d "$CACHE_DIR/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"   # apt-get download drops to the _apt user where it can
rxe_log "downloading $image $version"
(cd "$work" && apt-get download -q "$image=$version" 2>&1 | grep -v -e '^W: Download is performed unsandboxed' -e '^Get:' >&2 || true)
deb=$(ls "$work"/*.deb 2>/dev/null | sed -n 1p)
[ -n "$deb" ] || rxe_die "apt-get download $image=$version produced no .deb"
dpkg-deb -x "$deb" "$work/root"
rm -f "$deb"

kver=$(ls "$work/root/lib/modules" | sed -n 1p)
moddir=$work/root/lib/modules/$kver
vmlinuz=$work/root/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || rxe_die "no boot/vmlinuz-$kver in $image"

# name -> file (names in depends use '_'; file names may use '-')
find "$moddir" -name '*.ko*' > "$work/files"
modfile() {
  local n=${1//-/_}
  awk -v n="$n" '{ b=$0; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b); gsub(/-/, "_", b); if (b == n) { print; exit } }' "$work/files"
}
builtin() { grep -q "/${1//_/[-_]}\.ko\$" "$moddir/modules.builtin" 2>/dev/null; }

# Depth-first, dependencies before dependants.
order=()
declare -A seen=()
visit() {
  local name=${1//-/_} file dep deps soft
  [ -n "${seen[$name]:-}" ] && return 0
  seen[$name]=1
  file=$(modfile "$name")
  if [ -z "$file" ]; then
    builtin "$name" && return 0
    rxe_die "module $name is neither in $image nor built in"
  fi
  deps=$(modinfo -F depends "$file" | tr ',' ' ')
  # "pre:" soft dependencies (e.g. crypto helpers) load first too
  soft=$(modinfo -F softdep "$file" | sed -n 's/.*pre: *\([^:]*\)\( post:.*\)\{0,1\}$/\1/p')
  for dep in $deps $soft; do visit "$dep"; done
  order+=("$name|$file")
}
for m in $WANTED; do visit "$m"; done

out=$work/kernel
mkdir -p "$out/mods"
cp "$vmlinuz" "$out/vmlinuz"
: > "$out/ORDER"
for e in "${order[@]}"; do
  name=${e%%|*} file=${e#*|}
  case $file in
    *.ko) cp "$file" "$out/mods/$name.ko" ;;
    *.ko.xz) xz -dc "$file" > "$out/mods/$name.ko" ;;
    *.ko.zst) zstd -qdc "$file" > "$out/mods/$name.ko" ;;
    *.ko.gz) gzip -dc "$file" > "$out/mods/$name.ko" ;;
    *) rxe_die "unknown module format: $file" ;;
  esac
  echo "$name" >> "$out/ORDER"
done
echo "$kver" > "$out/KVER"
echo "$want_stamp" > "$out/VERSION"
rm -rf "$KERNEL_DIR" "$INITRAMFS"
mv "$out" "$KERNEL_DIR"
rxe_log "kernel $kver cached in ${KERNEL_DIR#$PROJECT_ROOT/} ($(wc -l < "$KERNEL_DIR/ORDER") modules, $(du -sh "$KERNEL_DIR" | cut -f1)): $(tr '\n' ' ' < "$KERNEL_DIR/ORDER")"
