#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Configure and build the guest kernel in $IOMMU_PT_BUILD (default
# $IOMMU_PT_CACHE/work/build) from the patched tree, inside the toolchain root.
#
# The configuration is allnoconfig plus qemu/guest.config (and any fragment
# named in $IOMMU_PT_CONFIG_EXTRA, which may override it), merged by the
# kernel's scripts/kconfig/merge_config.sh. It is regenerated only when a fragment
# changes; the build itself is make's incremental build.

. "$(dirname "$0")/lib.sh"

need_root
start=$(now)
JOBS=${IOMMU_PT_JOBS:-$(($(nproc) + 1))}

[ -f "$SRC/.iommu-pt-patches" ] || die "kernel tree not prepared; run scripts/prepare-tree.sh"

fragments=("$REPO/qemu/guest.config")
for f in ${IOMMU_PT_CONFIG_EXTRA:-}; do
	[ -f "$f" ] || die "config fragment $f (from IOMMU_PT_CONFIG_EXTRA) does not exist"
	fragments+=("$f")
done

mkdir -p "$BUILD"
kmake() { in_root make -C "$SRC" O="$BUILD" LLVM=1 "$@"; }

merged=$BUILD/iommu-pt.config
cat "${fragments[@]}" >"$merged.new"
if ! cmp -s "$merged.new" "$merged" || [ ! -f "$BUILD/.config" ]; then
	log "configuring: allnoconfig + ${fragments[*]##*/}"
	kmake -s rustavailable >/dev/null ||
		die "the root's Rust toolchain cannot build this kernel (make rustavailable failed)"
	# The kernel's merge_config.sh: later fragments override earlier ones,
	# allnoconfig fills in the rest, and it warns about every option whose
	# requested value did not survive dependency resolution. Those must not.
	out=$(in_root /bin/sh -c 'cd "$1" && shift && LLVM=1 exec scripts/kconfig/merge_config.sh "$@"' \
		merge "$SRC" -n -O "$BUILD" "${fragments[@]}" 2>&1) ||
		die "merge_config.sh failed: $out"
	if grep -A2 -E '^WARNING: (Value requested for|CONFIG_[A-Za-z0-9_]+ differs)' <<<"$out" >&2; then
		die "the kernel configuration lacks options the tests need (see above)"
	fi
	mv "$merged.new" "$merged"
else
	rm -f "$merged.new"
fi

log "building the kernel in $BUILD with -j$JOBS"
kmake -j"$JOBS" -s bzImage modules >"$BUILD/build.log" 2>&1 || {
	grep -E -m 20 -B2 -A8 'error(\[E[0-9]+\])?:|Error [0-9]' "$BUILD/build.log" >&2 || tail -n 40 "$BUILD/build.log" >&2
	die "kernel build failed; full log in $BUILD/build.log"
}
log "kernel built: $BUILD/arch/x86/boot/bzImage ($(($(now) - start)) s)"
