#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test command: set up the toolchain root, prepare the patched tree,
# build the guest kernel (all incremental), then boot it and run the tests.
#
# usage: scripts/test.sh [--skip-build]
#
# Stage 1, the KUnit boot: every KUnit suite the configuration builds runs
# built in at boot, before any userspace, as kunit.py does: the series'
# doctests (rust_doctests_kernel), the #[kunit_tests] suites and generic_pt's
# six suites, whose leak check needs a quiet system. The same boot then checks
# that DMAR is on in strict mode and that the igb NIC has its own IOMMU group,
# and tests the iommu-pt module: its KUnit suite, bad parameters, a real
# iommufd domain on the vfio-bound igb served from the pool, and 20 reloads
# under a live domain (qemu/guest/test-pool.sh).

. "$(dirname "$0")/lib.sh"

skip_build=0
for arg; do
	case "$arg" in
	--skip-build) skip_build=1 ;;
	-h | --help) sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "test.sh: unknown argument '$arg' (try --help)" ;;
	esac
done

need_root
t0=$(now)
if [ "$skip_build" -eq 0 ]; then
	"$REPO/scripts/setup-root.sh"
	"$REPO/scripts/prepare-tree.sh"
	"$REPO/scripts/build-kernel.sh"
	"$REPO/scripts/build-module.sh"
	"$REPO/scripts/build-guest-tools.sh"
fi
t_built=$(now)

# Stage 0: kernel style (rustfmt, clippy, checkpatch --strict on our patches).
style=0
"$REPO/scripts/check-style.sh" || style=1

# Suites the configuration must have run; a missing one is a failure.
KUNIT_SUITES=(
	rust_doctests_kernel
	amdv1_fmt_test amdv1_iommu_test
	vtdss_fmt_test vtdss_iommu_test
	x86_64_fmt_test x86_64_iommu_test
	iommu_pt_pool
)

mkdir -p "$OUT"
log="$OUT/kunit-boot.log"
log "stage 1: KUnit boot (log: $log)"
guest_status=0
"$REPO/qemu/run-guest.sh" --log "$log" --timeout 1800 --append kunit.enable=1 -- \
	qemu/guest/stage1.sh "$GUEST_WORK/module/iommu_pt.ko" "$GUEST_WORK/guest-bin" || guest_status=$?

expect=()
for s in "${KUNIT_SUITES[@]}"; do expect+=(--expect "$s"); done
verdict=0
python3 "$REPO/scripts/ktap.py" --label kunit "${expect[@]}" "$log" || verdict=1
if [ "$style" -ne 0 ]; then
	warn "style checks failed (see above)"
	verdict=1
fi
if [ "$guest_status" -ne 0 ]; then
	warn "the guest exited with status $guest_status"
	verdict=1
fi

log "times: build steps $((t_built - t0)) s, boot to verdict $(($(now) - t_built)) s"
if [ "$verdict" -ne 0 ]; then
	log "FAILED (guest log: $log)"
	exit 1
fi
log "PASSED"
