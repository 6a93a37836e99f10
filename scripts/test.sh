#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test command: set up the toolchain root, prepare the patched tree,
# build the guest kernel (all incremental), then boot it and run the tests.
#
# usage: scripts/test.sh [--skip-build] [--skip-style] [--stages LIST]
#
# --stages takes a comma-separated subset of kunit,vfio,iommufd,reliability
# (default: all four).
#
# Stage "kunit", one boot: every KUnit suite the configuration builds runs
# built in at boot, before any userspace, as kunit.py does: the series'
# doctests (rust_doctests_kernel), the #[kunit_tests] suites and generic_pt's
# six suites, whose leak check needs a quiet system. The same boot then checks
# that DMAR is on in strict mode and that the igb NIC has its own IOMMU group,
# and tests the iommu-pt module: its KUnit suite, bad parameters, a real
# iommufd domain on the vfio-bound igb served from the pool, and 20 reloads
# under a live domain (qemu/guest/test-pool.sh).
#
# Stage "vfio", three boots, VT-d legacy mode (second-stage tables), VT-d
# scalable mode with first-stage tables and AMD-Vi with v1 tables (amdv1):
# the IOMMU checks of qemu/guest/check-iommu.sh, then the kernel's VFIO
# selftests on the vfio-bound igb, with 2 MiB and 1 GiB huge pages reserved,
# first on the C allocator and then with the iommu-pt pool, which must be
# shown to serve every table (qemu/guest/vfio-tests.sh). Prints one table:
# combination x test.
#
# Stage "iommufd", one boot: iommufd's own selftests (tools/testing/selftests/
# iommu: iommufd, 246 tests, and iommufd_fail_nth) on its mock IOMMU, whose
# domains generic_pt builds in the amdv1 format, first on the C allocator and
# then with the pool, which must serve their tables; fail_nth once more with
# page allocation failures injected only into IOMMU page allocations
# (qemu/guest/iommufd-tests.sh).
#
# Stage "reliability", one boot (legacy mode): the pool under injected
# allocation failures, memory pressure, concurrent mapping in several domains,
# 100 reloads under live domains, bad input and CPU hotplug
# (qemu/guest/reliability.sh).
#
# scripts/test-debug.sh runs the same stages on the debug kernel (KASAN,
# lockdep, kmemleak, DEBUG_PAGEALLOC) and the PREEMPT_RT one (lockdep,
# DEBUG_ATOMIC_SLEEP) through these variables:
#   IOMMU_PT_APPEND      more kernel command line for every boot
#   IOMMU_PT_APPEND_DMA  more kernel command line for the vfio and reliability
#                        boots, not the KUnit one (iommu.debug_pagealloc=1
#                        WARNs on generic_pt's KUnit suite, which maps
#                        physical address 0 on purpose)
#   IOMMU_PT_GUEST_WRAP  a guest command every test command runs under
#   IOMMU_PT_SLOW        a factor for the boot timeouts (default 1)
#   IOMMU_PT_KSFT_TIMEOUT_SCALE
#                        a factor for the VFIO selftests' timeouts, each
#                        test's (KSFT_TIMEOUT_SCALE, patch 0017: 30 s) and
#                        each binary's (600 s); default 2, see below
#   IOMMU_PT_VFIO_ALLOCATORS
#                        the VFIO stage's allocators (default "c rust")
#   IOMMU_PT_VFIO_DRIVER_MODES
#                        the IOMMU modes of vfio_pci_driver_test (default:
#                        all five; qemu/guest/vfio-tests.sh)
#   IOMMU_PT_POOL_BYPASS 1 when the kernel makes the page allocator check
#                        freed pages (KASAN, debug_pagealloc, init_on_free):
#                        the KUnit boot's pool tests then require the pool
#                        to keep no page and serve nothing (default 0: the
#                        pool must not be bypassed)
#
# Also:
#   IOMMU_PT_LANES       1 to boot the guests one after the other; by default
#                        two lanes of boots run side by side on a host with
#                        two CPUs or more (see "lanes" below)
#   IOMMU_PT_VFIO_MODES  the VFIO stage's IOMMU modes (default "legacy
#                        scalable amd"), for development

. "$(dirname "$0")/lib.sh"

skip_build=0
skip_style=0
stages=kunit,vfio,iommufd,reliability
while [ $# -gt 0 ]; do
	case "$1" in
	--skip-build) skip_build=1; shift ;;
	--skip-style) skip_style=1; shift ;;
	--stages) stages=${2:?--stages needs a list such as kunit,vfio}; shift 2 ;;
	-h | --help) awk 'NR >= 4 && !/^#/ { exit } NR >= 4 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) die "test.sh: unknown argument '$1' (try --help)" ;;
	esac
done
# Names of lower-case letters between single commas: a list that names no
# stage (",", "kunit,,vfio", " ") is refused, not run as nothing and passed.
case ",$stages," in
*,,* | *[!a-z,]*) die "test.sh: --stages '$stages' has an empty or malformed stage name (a comma-separated list of kunit, vfio, iommufd, reliability)" ;;
esac
for s in ${stages//,/ }; do
	case "$s" in
	kunit | vfio | iommufd | reliability) ;;
	*) die "test.sh: unknown stage '$s' in --stages (known: kunit, vfio, iommufd, reliability)" ;;
	esac
done
want() { case ",$stages," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
slow=${IOMMU_PT_SLOW:-1}
case "$slow" in '' | *[!0-9]* | 0*) die "IOMMU_PT_SLOW is a whole factor >= 1, not '$slow'" ;; esac
# Twice the selftests' own timeouts by default: on a fresh machine of this
# project's kind (session 16), vfio_pci_driver_test took 553 s (legacy) and
# 592 s (scalable) of its binary's 600 s with the C allocator beside the other
# lane's VFIO boot; the pool's runs were killed at 600 s, and in scalable mode
# a fixture's 1 GiB pin outlasted the 30 s of init_remove. Machines of that
# kind run guests up to 2x slower. A hang is still caught by the silence
# watchdog (600 s without output).
ksft_scale=${IOMMU_PT_KSFT_TIMEOUT_SCALE:-2}
pool_bypass=${IOMMU_PT_POOL_BYPASS:-0}
case "$pool_bypass" in 0 | 1) ;; *) die "IOMMU_PT_POOL_BYPASS is 0 or 1, not '$pool_bypass'" ;; esac
vfio_allocators=${IOMMU_PT_VFIO_ALLOCATORS:-c rust}
vfio_driver_modes=${IOMMU_PT_VFIO_DRIVER_MODES:-}
. "$REPO/qemu/guest/vfio-subset.sh"
. "$REPO/qemu/guest/test-lists.sh"
why=$(vfio_subset_check "$vfio_allocators" "$vfio_driver_modes" "$ksft_scale") ||
	die "IOMMU_PT_VFIO_ALLOCATORS, IOMMU_PT_VFIO_DRIVER_MODES or IOMMU_PT_KSFT_TIMEOUT_SCALE: $why"
extra_append=${IOMMU_PT_APPEND:-}
# A slow kernel may block a task for longer than the hung task detector
# (which panics these guests, qemu/run-guest.sh) allows by default.
hung_timeout=$(sed -n 's/^CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=//p' "$REPO/qemu/guest.config")
[ "$slow" -eq 1 ] || extra_append="sysctl.kernel.hung_task_timeout_secs=$((hung_timeout * slow)) $extra_append"
dma_append="$extra_append ${IOMMU_PT_APPEND_DMA:-}"
# A guest whose log stays still this long has hung (qemu/watch-guest.sh).
silence=${IOMMU_PT_SILENCE:-600}
case "$silence" in '' | *[!0-9]*) die "IOMMU_PT_SILENCE takes whole seconds, not '$silence'" ;; esac
export IOMMU_PT_SILENCE=$((silence * slow))
# shellcheck disable=SC2206
wrap=(${IOMMU_PT_GUEST_WRAP:-})

need_root
t0=$(now)
[ "$skip_build" -eq 1 ] || "$REPO/scripts/build-all.sh"
t_built=$(now)

# Stage 0: kernel style (rustfmt, clippy, checkpatch --strict on our patches).
style=0
[ "$skip_style" -eq 1 ] || "$REPO/scripts/check-style.sh" || style=1

verdict=0
if [ "$style" -ne 0 ]; then
	warn "style checks failed (see above)"
	verdict=1
fi
mkdir -p "$OUT"

# boot WHAT RUN-GUEST-ARGS... -- COMMAND...: one guest boot; a guest that does
# not exit 0 fails the run, and the last lines of its log are printed, since
# the log stays behind in $OUT, which a CI run does not keep. The command runs
# under IOMMU_PT_GUEST_WRAP.
TAIL_LINES=150
PANIC_LINES=400
boot() {
	local what=$1 status=0 args=() log=""
	shift
	while [ "$1" != -- ]; do
		[ "$1" != --log ] || log=$2
		args+=("$1")
		shift
	done
	shift
	# Never judge a log an earlier run left behind.
	[ -z "$log" ] || rm -f "$log"
	"$REPO/qemu/run-guest.sh" "${args[@]}" -- "${wrap[@]}" "$@" || status=$?
	if [ "$status" -ne 0 ]; then
		warn "the $what boot's guest exited with status $status"
		verdict=1
		if [ -n "$log" ] && [ -f "$log" ]; then
			# A panic (hung task, or the NMI of a guest gone quiet) prints
			# the tasks, backtraces and timers, then replays the whole log.
			if grep -q 'Kernel panic - not syncing' "$log"; then
				warn "the guest's panic and what it printed (first $PANIC_LINES lines):"
				# head closes the pipe early: SIGPIPE upstream is not a failure.
				sed -n '/Kernel panic - not syncing/,$p' "$log" | head -n "$PANIC_LINES" |
					sed 's/^/  | /' || true
			fi
			warn "the last $TAIL_LINES lines of $log:"
			tail -n "$TAIL_LINES" "$log" | sed 's/^/  | /'
		fi
	fi
}

# Leaf results the KUnit boot must reach at least: the built-in suites', the
# module's and those of generic_pt's suites rerun on the pool.
KUNIT_MIN_RESULTS=820
# Suites the configuration must have run; a missing one is a failure.
KUNIT_SUITES=(
	rust_doctests_kernel
	rust_allocator rust_kvec rust_kernel_fmt rust_kernel_kunit rust_netlink
	rust_spinlock_irq_condvar
	"${GENERIC_PT_SUITES[@]}"
	amdv1_mock_fmt_test amdv1_mock_iommu_test
	iommu_pt_pool
)

# The boots, each a job: it boots one guest and keeps its log in $OUT. The
# logs are judged (scripts/ktap.py) once every boot has ended.
# Two NUMA nodes, a vCPU on each: the pool's node cases (iommu_pt_pool) need a
# second node with memory, and stage1.sh's checks run on a two-node guest.
job_kunit() {
	log "stage kunit: KUnit boot, two NUMA nodes (log: $OUT/kunit-boot.log)"
	boot KUnit --numa --log "$OUT/kunit-boot.log" --timeout $((2100 * slow)) --append "kunit.enable=1 $extra_append" -- \
		env POOL_BYPASS="$pool_bypass" qemu/guest/stage1.sh "$GUEST_MODULE" "$GUEST_BIN"
}
# job_vfio MODE: one IOMMU mode's VFIO boot. One 1 GiB and a few 2 MiB huge
# pages, reserved at boot while memory is not fragmented, so that the hugetlb
# variants run instead of skipping.
job_vfio() {
	log "stage vfio: VFIO selftests, $1 mode (log: $OUT/vfio-$1.log)"
	boot "$1 VFIO" --mode "$1" --log "$OUT/vfio-$1.log" --timeout $((2400 * slow)) \
		--append "hugepagesz=1G hugepages=1 hugepagesz=2M hugepages=8 $dma_append" -- \
		env KSFT_TIMEOUT_SCALE="$ksft_scale" \
		VFIO_ALLOCATORS="$vfio_allocators" VFIO_DRIVER_TEST_MODES="$vfio_driver_modes" \
		qemu/guest/vfio-tests.sh "$1" "$GUEST_MODULE" \
		"$GUEST_WORK/vfio-selftests" "$GUEST_BIN"
}
# 128 MiB of 2 MiB huge pages: iommufd_dirty_tracking's largest hugepage
# variant maps 128 MiB of them.
job_iommufd() {
	log "stage iommufd: iommufd's selftests on its mock IOMMU (log: $OUT/iommufd.log)"
	boot iommufd --log "$OUT/iommufd.log" --timeout $((900 * slow)) \
		--append "hugepagesz=2M hugepages=64 $extra_append" -- \
		qemu/guest/iommufd-tests.sh "$GUEST_MODULE" "$GUEST_WORK/iommufd-selftests"
}
# Two NUMA nodes here too: tables freed on the other node's CPU go home under
# concurrency and churn, and the CPU that goes offline is its node's only one.
job_reliability() {
	log "stage reliability: failures, pressure, concurrency, churn, bad input, two NUMA nodes (log: $OUT/reliability.log)"
	boot reliability --numa --log "$OUT/reliability.log" --timeout $((2400 * slow)) --append "$dma_append" --dma-port -- \
		qemu/guest/reliability.sh "$GUEST_MODULE" "$GUEST_BIN"
}

# Two lanes of boots run side by side when the host has two CPUs or more
# (IOMMU_PT_LANES=1: one after the other). A guest runs all its vCPUs in one
# TCG thread (qemu/run-guest.sh), so two guests keep two host CPUs busy; a
# VFIO boot took 548-560 s beside another against 511-530 s alone (issue 16's
# repeated boots). The guests share nothing but the read-only root and work
# directory; each writes its own log. The first lane prints as it goes, the
# second when it ends.
lanes=${IOMMU_PT_LANES:-$(($(nproc) >= 2 ? 2 : 1))}
case "$lanes" in 1 | 2) ;; *) die "IOMMU_PT_LANES is 1 or 2, not '$lanes'" ;; esac
# IOMMU_PT_VFIO_MODES: a subset of the modes, for development.
read -r -a vfio_modes <<<"${IOMMU_PT_VFIO_MODES:-legacy scalable amd}"
seen=" "
for m in "${vfio_modes[@]}"; do
	case "$m" in
	legacy | scalable | amd) ;;
	*) die "IOMMU_PT_VFIO_MODES takes legacy, scalable and amd, not '$m'" ;;
	esac
	case "$seen" in *" $m "*) die "IOMMU_PT_VFIO_MODES names $m twice" ;; esac
	seen="$seen$m "
done
[ ${#vfio_modes[@]} -gt 0 ] || die "IOMMU_PT_VFIO_MODES names no mode"
# Each job to the lane with less work so far, by its boot time here (s):
# KUnit 292, a VFIO boot 511-589, reliability 487, iommufd 101. Three VFIO
# modes: KUnit, scalable, reliability; legacy, amd, iommufd (1254 s and 1132 s
# in the clean-clone run of ac1f123).
lane1=() lane2=() lane1_s=0 lane2_s=0
add_job() {
	if [ "$lanes" -eq 1 ] || [ "$lane1_s" -le "$lane2_s" ]; then
		lane1+=("$1")
		lane1_s=$((lane1_s + $2))
	else
		lane2+=("$1")
		lane2_s=$((lane2_s + $2))
	fi
}
! want kunit || add_job job_kunit 300
if want vfio; then
	for m in "${vfio_modes[@]}"; do add_job "job_vfio $m" 580; done
fi
! want reliability || add_job job_reliability 490
! want iommufd || add_job job_iommufd 100

# run_lane JOB...: the jobs in turn; fails if a boot failed.
run_lane() {
	local job
	for job in "$@"; do
		$job
	done
	[ "$verdict" -eq 0 ]
}
# kill_tree PID: PID and every process under it (a lane's guests), each
# stopped first so that it starts nothing new while its children go.
kill_tree() {
	local child
	kill -STOP "$1" 2>/dev/null || return 0
	for child in $(pgrep -P "$1" || true); do
		kill_tree "$child"
	done
	kill "$1" 2>/dev/null || true
	kill -CONT "$1" 2>/dev/null || true
}
# on_signal SIG: takes down the lanes still running (children of this shell
# only: a lane already waited for may have passed its pid on), then dies of
# SIG, so that a script running this one stops too.
on_signal() {
	local p
	for p in $lane1_pid $lane2_pid; do
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" != "$$" ] || kill_tree "$p"
	done
	trap - "$1"
	kill -s "$1" "$$"
}
# Both lanes in the background, so that a signal is acted on at once (bash
# runs a trap only once the foreground command ends): an interrupted run
# takes its guests down with it.
lane1_pid="" lane2_pid=""
for sig in INT TERM HUP; do
	# shellcheck disable=SC2064 # $sig is expanded now, on purpose
	trap "on_signal $sig" "$sig"
done
if [ ${#lane2[@]} -gt 0 ]; then
	log "second lane, beside the first: ${lane2[*]} (its output follows when it ends: $OUT/lane2.out)"
	run_lane "${lane2[@]}" >"$OUT/lane2.out" 2>&1 &
	lane2_pid=$!
fi
run_lane "${lane1[@]}" &
lane1_pid=$!
wait "$lane1_pid" || verdict=1
lane1_pid=""
if [ -n "$lane2_pid" ]; then
	wait "$lane2_pid" || verdict=1
	lane2_pid=""
	log "second lane's output:"
	cat "$OUT/lane2.out"
fi
trap - INT TERM HUP

if want kunit; then
	expect=()
	for s in "${KUNIT_SUITES[@]}"; do expect+=(--expect "$s"); done
	# Skips allowed: a test KUnit's own selftest disables on purpose, and
	# generic_pt's configurations a test does not apply to (it says why).
	python3 "$REPO/scripts/ktap.py" --label kunit "${expect[@]}" --min-results "$KUNIT_MIN_RESULTS" \
		--allow-skip '^rust_kernel_kunit/rust_test_kunit_always_disabled_test$' \
		--allow-skip '^amdv1(_mock)?_iommu_test/test_increase_level/amdv1(_mock)?_cfg_1$' \
		--allow-skip '^amdv1(_mock)?_iommu_test/test_mixed(/amdv1(_mock)?_cfg_[01])?$' \
		--allow-skip '^amdv1_mock_iommu_test/test_pgsize_boundary/amdv1_mock_cfg_[01]$' \
		--allow-skip '^vtdss_iommu_test/test_increase_level(/vtdss_cfg_[0-2])?$' \
		--allow-skip '^x86_64_iommu_test/test_increase_level(/x86_64_cfg_[0-3])?$' \
		"$OUT/kunit-boot.log" || verdict=1
fi

if want vfio; then
	matrix="$OUT/vfio-matrix.log"
	: >"$matrix"
	expect=()
	for mode in "${vfio_modes[@]}"; do
		for a in $vfio_allocators; do expect+=(--expect "vfio_${mode}_$a"); done
		# A boot that never started leaves no log: its suites are missing.
		[ ! -f "$OUT/vfio-$mode.log" ] || cat "$OUT/vfio-$mode.log" >>"$matrix"
	done
	# At least 48 leaf results per suite (allocator and mode; a full one has
	# 96): the binaries' own tests, and a result and a check per binary.
	python3 "$REPO/scripts/ktap.py" --label vfio --quiet --table '^vfio_' \
		--min-results $((48 * ${#expect[@]})) "${expect[@]}" "$matrix" || verdict=1
fi

if want iommufd; then
	# Per allocator: 246 + 8 + 8 tests and 3 checks; the pool's unload, and
	# the kernel log's and taint's results.
	python3 "$REPO/scripts/ktap.py" --label iommufd --expect iommufd_c --expect iommufd_rust \
		--allow-skip '^iommufd_(c|rust)/iommufd/iommufd_viommu\.no_viommu\.' --min-results 533 \
		"$OUT/iommufd.log" || verdict=1
fi

if want reliability; then
	# 33 results; the CPU hotplug scenario's skips (cpu_hotplug_*, a guest
	# without a second CPU to take offline) are not allowed: it boots 2 vCPUs.
	python3 "$REPO/scripts/ktap.py" --label reliability --min-results 33 "$OUT/reliability.log" || verdict=1
fi

log "times: build steps $((t_built - t0)) s, boot to verdict $(($(now) - t_built)) s ($lanes lanes)"
if [ "$verdict" -ne 0 ]; then
	log "FAILED (guest logs in $OUT)"
	exit 1
fi
log "PASSED"
