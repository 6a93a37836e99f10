#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build what runs in the guest against the patched tree's UAPI headers:
# the small test programs in qemu/guest/*.c and qemu/guest/*/
# ($IOMMU_PT_GUEST_BIN, default $IOMMU_PT_CACHE/work/guest-bin)
# and the kernel's VFIO selftests, tools/testing/selftests/vfio
# ($IOMMU_PT_CACHE/work/vfio-selftests), and iommufd's,
# tools/testing/selftests/iommu ($IOMMU_PT_CACHE/work/iommufd-selftests).

. "$(dirname "$0")/lib.sh"
. "$REPO/qemu/guest/test-lists.sh"

need_root
bin=$GUEST_BIN_OUT
case "$bin" in "$WORK"/*) ;; *) die "IOMMU_PT_GUEST_BIN must be under $WORK, which the guest sees" ;; esac
mkdir -p "$bin"
in_root make -s -C "$SRC" O="$BUILD" LLVM=1 headers >/dev/null ||
	die "make headers failed in $BUILD"
# A program is one file, qemu/guest/NAME.c, or a directory, qemu/guest/NAME/,
# whose .c files are built together (its headers count as its sources too).
for src in "$REPO"/qemu/guest/*.c "$REPO"/qemu/guest/*/; do
	src=${src%/}
	[ -e "$src" ] || continue
	out=$bin/$(basename "$src" .c)
	if [ -d "$src" ]; then
		srcs=("$src"/*.c)
		deps=("$src"/*)
		[ -e "${srcs[0]}" ] || die "$src has no .c file to build"
	else
		srcs=("$src")
		deps=("$src")
	fi
	stale=0
	[ -x "$out" ] || stale=1
	for f in "${deps[@]}" "$REPO/qemu/guest/iommufd-dev.h" "$BUILD/usr/include/linux/iommufd.h"; do
		[ ! "$f" -nt "$out" ] || stale=1
	done
	if [ "$stale" -eq 1 ]; then
		# Built aside and renamed into place: a guest that runs the old
		# binary meanwhile must never find a half-written file.
		in_root gcc -O2 -Wall -Werror -pthread -isystem "$BUILD/usr/include" -o "$out.new" "${srcs[@]}" ||
			die "cannot build $src"
		mv -f "$out.new" "$out"
	fi
done

# The selftests' own Makefile; make decides what is out of date.
vfio=$WORK/vfio-selftests
mkdir -p "$vfio"
in_root make -s -C "$SRC/tools/testing/selftests/vfio" O="$BUILD" OUTPUT="$vfio" \
	KHDR_INCLUDES="-isystem $BUILD/usr/include" -j3 ||
	die "cannot build the VFIO selftests (tools/testing/selftests/vfio)"
for t in "${VFIO_BINARIES[@]}"; do
	[ -x "$vfio/$t" ] || die "the VFIO selftests build did not produce $t"
done

iommufd=$WORK/iommufd-selftests
mkdir -p "$iommufd"
in_root make -s -C "$SRC/tools/testing/selftests/iommu" O="$BUILD" OUTPUT="$iommufd" \
	KHDR_INCLUDES="-isystem $BUILD/usr/include" -j3 ||
	die "cannot build the iommufd selftests (tools/testing/selftests/iommu; the root needs libcap-dev)"
for t in iommufd iommufd_fail_nth; do
	[ -x "$iommufd/$t" ] || die "the iommufd selftests build did not produce $t"
done
log "guest tools built in $bin, VFIO selftests in $vfio, iommufd selftests in $iommufd"
