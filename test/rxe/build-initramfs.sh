#!/usr/bin/env bash
# Builds .cache/initramfs.cpio.gz: a static busybox, /init and the cached
# kernel modules in load order. Cheap (~1 s): run.js rebuilds it when the
# kernel cache or /init is newer than the image.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -f "$KERNEL_DIR/ORDER" ] || rxe_die "no kernel in ${KERNEL_DIR}: run bash test/rxe/fetch-kernel.sh"
bb=$(command -v busybox) || rxe_die "busybox missing: run as root: bash test/rxe/setup.sh"
file_is_static "$bb" || rxe_die "$bb is not static: install busybox-static (bash test/rxe/setup.sh)"

stage=$(mktemp -d "$CACHE_DIR/initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,mods,host,out,keep}
cp "$bb" "$stage/bin/busybox"
cp "$RXE_DIR/init" "$stage/init"
chmod 755 "$stage/init"
cp "$KERNEL_DIR/ORDER" "$stage/mods/ORDER"
cp "$KERNEL_DIR"/mods/*.ko "$stage/mods/"
(cd "$stage" && find . | "$bb" cpio -o -H newc 2>/dev/null | gzip -1 > "$INITRAMFS.tmp")
mv "$INITRAMFS.tmp" "$INITRAMFS"
