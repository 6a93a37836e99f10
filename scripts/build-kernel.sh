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

# merge_fragments DIR FRAGMENT...: the kernel's merge_config.sh into DIR's
# .config (later fragments override earlier ones, allnoconfig fills in the
# rest); prints its output, which warns about every option whose requested
# value did not survive dependency resolution.
merge_fragments() {
	local dir=$1
	shift
	in_root /bin/sh -c 'cd "$1" && shift && LLVM=1 exec scripts/kconfig/merge_config.sh "$@"' \
		merge "$SRC" -n -O "$dir" "$@" 2>&1
}

# What EXPERT may change: itself, the helpers it is there for, and the flag
# that shows the ZONE_DMA option (qemu/guest.config).
EXPERT_CHANGES="EXPERT RUST_INLINE_HELPERS ARCH_HAS_ZONE_DMA_SET"

# check_expert_pins: qemu/guest.config turns EXPERT on and pins every option
# that allnoconfig would then turn off to its value without EXPERT. The pins are
# derived from the kernel's Kconfig, so derive them again: the same fragments
# with EXPERT off must give $BUILD/.config but for $EXPERT_CHANGES. (An option
# that is not set and one that is not shown count the same.)
check_expert_pins() {
	local plain=$BUILD/without-expert out changed
	mkdir -p "$plain"
	printf '# CONFIG_EXPERT is not set\n# CONFIG_RUST_INLINE_HELPERS is not set\n' >"$plain/off.config"
	out=$(merge_fragments "$plain" "${fragments[@]}" "$plain/off.config") ||
		die "merge_config.sh without EXPERT failed: $out"
	changed=$(diff <(grep '^CONFIG_' "$BUILD/.config" | sort) <(grep '^CONFIG_' "$plain/.config" | sort) |
		sed -n 's/^[<>] CONFIG_\([A-Za-z0-9_]*\)=.*/\1/p' | sort -u |
		grep -v -x -F -f <(tr ' ' '\n' <<<"$EXPERT_CHANGES")) || true
	[ -z "$changed" ] ||
		die "EXPERT changes options other than $EXPERT_CHANGES:" \
			"$(tr '\n' ' ' <<<"$changed")- pin each in qemu/guest.config to its value without EXPERT" \
			"($plain/.config)"
}

cat "${fragments[@]}" >"$merged.new"
if ! cmp -s "$merged.new" "$merged" || [ ! -f "$BUILD/.config" ]; then
	log "configuring: allnoconfig + ${fragments[*]##*/}"
	kmake -s rustavailable >/dev/null ||
		die "the root's Rust toolchain cannot build this kernel (make rustavailable failed)"
	# Every requested value must survive.
	out=$(merge_fragments "$BUILD" "${fragments[@]}") || die "merge_config.sh failed: $out"
	if grep -A2 -E '^WARNING: (Value requested for|CONFIG_[A-Za-z0-9_]+ differs)' <<<"$out" >&2; then
		die "the kernel configuration lacks options the tests need (see above)"
	fi
	# The pins are qemu/guest.config's: checked on the normal kernel. An
	# extra fragment may ask for what only EXPERT allows (qemu/rt.config:
	# PREEMPT_RT), which no configuration without EXPERT can hold.
	if [ ${#fragments[@]} -eq 1 ]; then
		check_expert_pins
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
