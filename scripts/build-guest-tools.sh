#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the small test programs that run in the guest (qemu/guest/*.c)
# against the patched tree's UAPI headers. Output: $IOMMU_PT_CACHE/work/guest-bin.

. "$(dirname "$0")/lib.sh"

need_root
bin=$WORK/guest-bin
mkdir -p "$bin"
in_root make -s -C "$SRC" O="$BUILD" LLVM=1 headers >/dev/null ||
	die "make headers failed in $BUILD"
for src in "$REPO"/qemu/guest/*.c; do
	out=$bin/$(basename "$src" .c)
	if [ ! -x "$out" ] || [ "$src" -nt "$out" ] || [ "$BUILD/usr/include/linux/iommufd.h" -nt "$out" ]; then
		in_root gcc -O2 -Wall -Werror -isystem "$BUILD/usr/include" -o "$out" "$src" ||
			die "cannot build $src"
	fi
done
log "guest tools built in $bin"
