#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Configure and build the guest kernel in $IOMMU_PT_BUILD (default
# $IOMMU_PT_CACHE/work/build) from the patched tree, inside the toolchain root.
#
# The configuration is allnoconfig plus qemu/guest.config (and any fragment
# named in $IOMMU_PT_CONFIG_EXTRA). It is regenerated only when a fragment
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
	kmake -s KCONFIG_ALLCONFIG="$merged.new" allnoconfig
	# Every option we ask for must have survived dependency resolution.
	# A later fragment overrides an earlier one: check each option's last
	# assignment only.
	missing=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n)
			opt=${line%=n}
			if grep -q "^$opt=" "$BUILD/.config"; then
				warn "$opt is set but the fragment asks for n"
				missing=1
			fi
			;;
		CONFIG_*)
			if ! grep -qx "$line" "$BUILD/.config"; then
				warn "$line did not survive: $(grep "^${line%%=*}=" "$BUILD/.config" || echo "${line%%=*} is not set")"
				missing=1
			fi
			;;
		esac
	done < <(awk -F= '/^CONFIG_/ { if (!($1 in last)) order[n++] = $1; last[$1] = $0 }
			END { for (i = 0; i < n; i++) print last[order[i]] }' "$merged.new")
	[ "$missing" -eq 0 ] || die "the kernel configuration lacks options the tests need (see warnings above)"
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
