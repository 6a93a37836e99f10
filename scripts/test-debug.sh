#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The debug-kernel check: builds the guest kernel again, with more checking,
# in directories of its own, and runs test stages on it (scripts/test.sh).
# Two kernels, each qemu/guest.config plus a fragment:
#
#   rt     PREEMPT_RT with lockdep (PROVE_LOCKING) and DEBUG_ATOMIC_SLEEP
#          (qemu/rt.config). A spinlock_t sleeps there and leaves interrupts
#          on: one taken with interrupts disabled or in hard interrupt
#          context is reported. The page allocator checks no freed page, so
#          the pool is not bypassed and serves the tables. Built in
#          $IOMMU_PT_CACHE/work/build-rt, module in work/module-rt, logs in
#          work/out-rt. Default stages: kunit,reliability. No transparent
#          huge pages on PREEMPT_RT, which iommufd's selftests need: the
#          iommufd stage is refused.
#   debug  KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak, DEBUG_PAGEALLOC and
#          IOMMU_DEBUG_PAGEALLOC (qemu/debug.config); every test command runs
#          under qemu/guest/kmemleak-check.sh. The page allocator checks freed
#          pages, so the pool keeps none (IOMMU_PT_POOL_BYPASS=1). Built in
#          work/build-debug, module in work/module-debug, logs in
#          work/out-debug. Default stage: kunit.
#
# Any KASAN, lockdep, sleep-in-atomic or kmemleak report fails the run.
#
# usage: scripts/test-debug.sh [--kernel debug|rt|all] [--stages LIST]
#                              [--skip-build] [--skip-style]
#
# --kernel      the kernel (default all: rt, then debug, each built and
#               tested in turn; the run fails if either fails)
# --stages      a comma-separated subset of kunit,vfio,iommufd,reliability,
#               for each kernel (default: each kernel's own, above)
# --skip-build, --skip-style
#               as in scripts/test.sh; with all, the style checks run once,
#               with the rt kernel

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kernels.sh"

kernel=all
stages=""
skip_style=0
test_args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)
		[ $# -ge 2 ] || die "test-debug.sh: --kernel needs debug, rt or all"
		kernel=$2
		shift 2
		;;
	--kernel=*) kernel=${1#--kernel=}; shift ;;
	--stages)
		stages=${2:-}
		[ -n "${stages//,/}" ] || die "test-debug.sh: --stages needs a list such as kunit,reliability"
		shift 2
		;;
	--skip-build) test_args+=(--skip-build); shift ;;
	--skip-style) skip_style=1; shift ;;
	-h | --help) awk 'NR >= 4 && !/^#/ { exit } NR >= 4 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) die "test-debug.sh: unknown argument '$1' (try --help)" ;;
	esac
done
case "$kernel" in
rt) kernels=(rt) ;;
debug) kernels=(debug) ;;
all) kernels=(rt debug) ;;
*) die "test-debug.sh: --kernel takes debug, rt or all, not '$kernel'" ;;
esac
for s in ${stages//,/ }; do
	case "$s" in
	kunit | vfio | iommufd | reliability) ;;
	*) die "test-debug.sh: unknown stage '$s' in --stages (known: kunit, vfio, iommufd, reliability)" ;;
	esac
done
case ",$stages,:$kernel" in
*,iommufd,*:debug) ;;
*,iommufd,*)
	die "test-debug.sh: the rt kernel cannot run the iommufd stage: iommufd's selftests" \
		"need transparent huge pages, which PREEMPT_RT excludes (qemu/rt.config); use --kernel debug"
	;;
esac
need_root

# default_stages KERNEL: the stages KERNEL runs when --stages is not given.
default_stages() {
	case "$1" in
	rt) echo kunit,reliability ;;
	debug) echo kunit ;;
	esac
}


# The kernels' test.sh runs in the background, one after the other, so that a
# signal is acted on at once (bash runs a trap only once the foreground
# command ends). A background command of a script ignores SIGINT, which it
# cannot trap then: test.sh is sent TERM, on which it takes its guests down
# and ends; then this script dies of the signal it got.
child=""
on_signal() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	trap - "$1"
	kill -s "$1" "$$"
}
for sig in INT TERM HUP; do
	# shellcheck disable=SC2064 # $sig is expanded now, on purpose
	trap "on_signal $sig" "$sig"
done

failed=()
first=1
for k in "${kernels[@]}"; do
	args=("${test_args[@]}" --stages "${stages:-$(default_stages "$k")}")
	# The style checks do not depend on the kernel: once.
	if [ "$skip_style" -eq 1 ] || [ "$first" -eq 0 ]; then
		args+=(--skip-style)
	fi
	first=0
	log "test-debug.sh: the $k kernel (qemu/$k.config; test.sh ${args[*]}; logs in $WORK/out-$k)"
	(
		kernel_settings "$k"
		exec "$REPO/scripts/test.sh" "${args[@]}"
	) &
	child=$!
	status=0
	wait "$child" || status=$?
	child=""
	[ "$status" -eq 0 ] || failed+=("$k")
done
trap - INT TERM HUP

if [ ${#kernels[@]} -gt 1 ]; then
	for k in "${kernels[@]}"; do
		case " ${failed[*]} " in
		*" $k "*) log "the $k kernel: FAILED (guest logs in $WORK/out-$k)" ;;
		*) log "the $k kernel: PASSED" ;;
		esac
	done
fi
[ ${#failed[@]} -eq 0 ] || exit 1
