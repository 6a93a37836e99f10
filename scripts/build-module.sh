#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the iommu-pt module against the guest kernel's build directory. The
# objects go to $MODULE_OUT ($IOMMU_PT_CACHE/work/module unless
# IOMMU_PT_MODULE_OUT says otherwise), never into the repository.
#
# usage: scripts/build-module.sh [make arguments, e.g. CLIPPY=1 or rustfmtcheck]

. "$(dirname "$0")/lib.sh"

need_root
[ -f "$BUILD/Module.symvers" ] || die "no kernel build in $BUILD; run scripts/build-kernel.sh"
mkdir -p "$MODULE_OUT"
in_root make -C "$SRC" O="$BUILD" LLVM=1 M="$REPO/iommu-pt" MO="$MODULE_OUT" \
	-j"$(($(nproc) + 1))" "$@" >"$MODULE_OUT/build.log" 2>&1 || {
	cat "$MODULE_OUT/build.log" >&2
	die "module build failed (log: $MODULE_OUT/build.log)"
}
grep -E 'warning|error' "$MODULE_OUT/build.log" >&2 && die "the module build printed warnings (log: $MODULE_OUT/build.log)"
log "module built: $MODULE_OUT/iommu_pt.ko"
