#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: the iommu-pt pool when things go wrong, with VFIO/iommufd
# domains on the vfio-bound igb. Prints KTAP; every scenario ends by checking
# that nothing leaked: the pool's outstanding count and NR_IOMMU_PAGES are
# back to their values before it.
#
# usage: reliability.sh MODULE.ko GUEST_BIN_DIR [STRESS_SECONDS] [RELOADS]
#
# 1. Allocation failure (CONFIG_FAULT_INJECTION):
#    a. fail-nth: the N-th allocation of one 16 MiB IOMMU_IOAS_MAP fails, for
#       every N in turn, on the C allocator, on the pool, and on a pool too
#       small to serve the map (so its table allocations fall back to C and
#       fail there); each map succeeds in full or fails with ENOMEM leaving
#       nothing mapped (qemu/guest/fault-map.c);
#    b. fail-nth on module load: the N-th allocation made from the module's
#       code during its init fails, for every N in turn; the load fails with
#       ENOMEM or succeeds with a smaller pool (a refill that failed);
#    c. every allocation of the refill worker fails while a sparse map drains
#       the pool: the maps succeed (the tables come from C), the pool counts
#       fallbacks.
# 2. Memory pressure: memory is filled until kswapd reclaims; the shrinker
#    gives the spare pages back, mapping still works, no OOM kill.
# 3. Concurrency: threads map and unmap in three domains at once, owned and
#    overlapping ranges, then every recorded mapping is checked in the live
#    table and by unmapping (qemu/guest/stress-map.c). Meanwhile, lazy-mode
#    DMA-API traffic: writes to a virtio-serial port behind the IOMMU
#    (qemu/run-guest.sh --dma-port) in a DMA-FQ (flush queue) domain, so
#    buffers are mapped and unmapped with deferred IOTLB flushes.
#    b. the port's driver rebound three times under that traffic and
#       stress-map (the same domain, a new strict one, a new lazy one): no
#       kernel report, the new domains' tables from the pool.
# 4. Module churn: RELOADS unloads and loads while three domains stay alive
#    and threads keep mapping and unmapping in them (stress-map).
# 5. Bad input: module parameters that are not numbers or out of range, and
#    writes to the module's debugfs files, are refused.
# 6. Unloading a filled pool of 64 MiB gives its pages back (free pages).

set -u
. "$(dirname "$0")/lib.sh"
# The fail-nth scenarios check for ENOMEM: iommufd's own fault points, which
# fail with other errors, stay out (lib.sh, fi_reset).
# shellcheck disable=SC2034 # read by lib.sh's fault injection helpers
FI_IOMMUFD=off
ko=$1
bin=$2
STRESS_SECONDS=${3:-120}
RELOADS=${4:-100}

# check_baseline NAME PAGES0: NR_IOMMU_PAGES back to PAGES0 (after the pool
# worker settled), reported as a result; both must be integers (lib.sh's
# nr_iommu_pages_check), never two empty strings.
check_baseline() {
	local rc
	sleep 1
	nr_iommu_pages_check "$2"
	rc=$?
	echo "# $1: nr_iommu_pages $nr_iommu_pages_change"
	result "$rc" "$1"
}

# fi_modules_only: count only allocations made with module code on the stack:
# the x86_64 module mapping space (Documentation/arch/x86/x86_64/mm.rst),
# where iommu_pt is the only module. A module lands at a different address at
# each load, so the filter covers the whole space, after checking that the
# kernel's own text lies below it.
MODULES_START=ffffffffa0000000
MODULES_END=ffffffffff000000
fi_modules_only() {
	local etext
	etext=$(awk '$3 == "_etext" { print $1 }' /proc/kallsyms)
	if [ -z "$etext" ] || [[ ! "$etext" < "$MODULES_START" ]]; then
		echo "# kernel text ends at ${etext:-?}, inside the module space: no filter" >&2
		return 1
	fi
	fi_set require-start "0x$MODULES_START"
	fi_set require-end "0x$MODULES_END"
}

# Setup: the igb on vfio-pci.
bdf=$(igb_bdf)
[ -n "$bdf" ] && bind_vfio_pci "$bdf"
vfio=$(vfio_cdev "$bdf")
echo "KTAP version 1"
echo "1..21"
if [ ! -c "$vfio" ] || [ ! -d "$fi_dir/fail_page_alloc" ]; then
	echo "# setup failed: igb '$bdf' on vfio-pci: $vfio; fault injection: $fi_dir/fail_page_alloc"
	exit 1
fi
# Structures created once per device are not leaks: one attach first.
printf '\n\n' | "$bin/iommufd-map" "$vfio" 1 >/dev/null
fi_reset
pages0=$(vmstat nr_iommu_pages)
# The kernel log is never cleared: kernel_reports at the end counts every
# report since boot.
quiet_console

# 1a. fail-nth on the map path, three allocators.
total_tried=0
total_failed=0
for setup in c pool small_pool; do
	case $setup in
	pool) pool_load "$ko" ;;
	small_pool) pool_load "$ko" capacity=4 low_watermark=1 high_watermark=2 ;;
	esac
	f0=$(pool_stat fallbacks 2>/dev/null)
	out=$("$bin/fault-map" "$vfio" 16 5000)
	rc=$?
	if [ "$setup" != c ]; then
		echo "# fallbacks to C during the tries: $(($(pool_stat fallbacks) - f0))"
		pool_unload
	fi
	echo "# fail-nth map, $setup: $out"
	read -r _ tried _ failed _ <<<"$out"
	total_tried=$((total_tried + ${tried:-0}))
	total_failed=$((total_failed + ${failed:-0}))
	[ "$rc" -eq 0 ] && [ "${failed:-0}" -ge 1 ]
	result $? "fault_map_fail_nth_$setup"
done
check_baseline fault_map_no_leak "$pages0"

# 1b. fail-nth on module load, counting only allocations from module code
# (qemu/guest/fail-nth-insmod.c), for every point until one is not reached.
fi_modules_only || echo "# no fault filter: the insmod scenario cannot count its points"
loads_failed=0
loads_ok=0
load_bad=0
for nth in $(seq 1 400); do
	out=$("$bin/fail-nth-insmod" "$nth" "$ko" "high_watermark=16 low_watermark=4" | tr '\n' ' ')
	case "$out" in
	"loaded "*)
		loads_ok=$((loads_ok + 1))
		pool_unload || load_bad=1
		;;
	"failed ENOMEM "*) loads_failed=$((loads_failed + 1)) ;;
	*)
		echo "# fail-nth=$nth: $out"
		load_bad=1
		;;
	esac
	case "$out" in *not-reached*) break ;; esac
done
fi_reset
echo "# fail-nth insmod: $nth points tried, $loads_failed loads failed with ENOMEM, $loads_ok loaded (with a partial pool when a refill failed)"
[ "$load_bad" -eq 0 ] && [ "$loads_failed" -ge 1 ] && [ "$loads_ok" -ge 2 ] && [ "$nth" -lt 400 ]
result $? fault_insmod_fail_nth
total_tried=$((total_tried + nth))
total_failed=$((total_failed + loads_failed))
check_baseline fault_insmod_no_leak "$pages0"

# 1c. Every refill allocation of the worker fails. The worker refills a depot
# from the page allocator once requests took it below the low watermark and
# left it alone for its quiet period, unless they ran it dry (then the tables
# that come back refill it). So: a pool prefilled with 512 pages and a low
# watermark of 480, a sparse map of 64 pages (about 67 tables, taken in
# batches of 32: below the low watermark, far from dry), every module
# allocation failing meanwhile and while the worker runs, the mapping in place.
pool_load "$ko" capacity=1024 high_watermark=512 low_watermark=480
o0=$(pool_stat outstanding)
fb0=$(pool_stat fallbacks)
rf0=$(pool_stat refills)
runs0=$(pool_stat worker_runs)
# On from before the map: the worker's quiet period (10 ms) ends before this
# script could react to the map's end. The map's tables come from the pool,
# which allocates nothing on the request path.
fi_modules_only
fi_set probability 100
fi_set times 100000
map_start "$bin/iommufd-map" "$vfio" 64
# The worker's run, after its quiet period, tries to refill.
sleep 1
injected=$((100000 - $(cat "$fi_dir/fail_page_alloc/times")))
fi_reset
fb=$(($(pool_stat fallbacks) - fb0))
rf=$(($(pool_stat refills) - rf0))
runs=$(($(pool_stat worker_runs) - runs0))
echo "# refill failures: sparse map of 64 pages: $map_state; worker runs $runs, $injected refill allocations failed, $rf succeeded, $fb tables from C"
map_next
map_end
[ "$map_status" -eq 0 ] && [ "$injected" -ge 1 ] && [ "$rf" -eq 0 ] && [ "$runs" -ge 1 ] &&
	[ -n "$o0" ] && [ "$(pool_stat outstanding)" -eq "$o0" ]
result $? fault_refill_worker
total_tried=$((total_tried + injected))
total_failed=$((total_failed + injected))
pool_unload
check_baseline fault_refill_no_leak "$pages0"
echo "# injected failures: $total_failed of $total_tried points tried"

# 2. Memory pressure: kswapd wakes 10% of memory above the minimum.
pool_load "$ko"
sleep 1
wsf=$(cat /proc/sys/vm/watermark_scale_factor)
echo 1000 >/proc/sys/vm/watermark_scale_factor
clean0=$(pool_stat clean)
shrunk0=$(pool_stat shrunk)
total_mb=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
coproc HOG { "$bin/mem-hog" $((total_mb / 20)) 2>&1; }
hog_pid=$HOG_PID
read -r hog <&"${HOG[0]}"
sleep 3
shrunk=$(($(pool_stat shrunk) - shrunk0))
clean1=$(pool_stat clean)
out=$(printf '\n\n' | "$bin/iommufd-map" "$vfio" 64 2>&1; echo "exit ${PIPESTATUS[1]}")
out=$(echo "$out" | tr '\n' ' ')
echo >&"${HOG[1]}"
wait "$hog_pid"
echo "$wsf" >/proc/sys/vm/watermark_scale_factor
echo "# memory pressure: $hog; pool clean $clean0 -> $clean1, shrunk +$shrunk; map of 64 under pressure: $out"
oom=$(dmesg | grep -c 'Out of memory\|oom-kill')
echo "# OOM kills: $oom"
map_ok=1
case "$out" in *"exit 0 ") map_ok=0 ;; esac
[ "$shrunk" -ge 1 ] && [ "$map_ok" -eq 0 ] && [ "$oom" -eq 0 ]
result $? memory_pressure_shrinker
pool_unload
check_baseline memory_pressure_no_leak "$pages0"

# 3. Concurrency, with lazy-mode DMA-API traffic on the virtio-serial port.
#
# stress-map in three domains while DMA-API writes go to the port in lazy
# mode: its group's default domain, the one it booted with, gets a flush queue
# in place (allowed with the driver bound). Tables that the traffic grows
# under it come from the pool and stay in that domain, which lives on after
# the module is unloaded: the baseline grows by them.
# dma_state WHEN: the pool's counters and NR_IOMMU_PAGES at a step.
dma_state() {
	echo "# $1: outstanding $(pool_stat outstanding), hits $(pool_stat hits)," \
		"frees $(pool_stat frees), nr_iommu_pages $(vmstat nr_iommu_pages)"
}

pool_load "$ko"
dma_ok=0
dma_writes=0
dma_bdf=
dma_state "module loaded"
h0=$(pool_stat hits)
fb0=$(pool_stat fallbacks)
if port=$(dma_port); then
	# /sys/class/virtio-ports/vportNpM/device is the virtio device, whose
	# parent is the PCI function.
	dma_bdf=$(basename "$(dirname "$(readlink -f "/sys/class/virtio-ports/$port/device")")")
	echo DMA-FQ >"/sys/bus/pci/devices/$dma_bdf/iommu_group/type" &&
		[ "$(cat "/sys/bus/pci/devices/$dma_bdf/iommu_group/type")" = DMA-FQ ] && dma_ok=1
	echo "# DMA-API traffic: /dev/$port on $dma_bdf, group type" \
		"$(cat "/sys/bus/pci/devices/$dma_bdf/iommu_group/type")"
else
	echo "# no iommu-pt.dma port: boot with qemu/run-guest.sh --dma-port"
fi
# Each write maps a buffer of 32 KiB for the device and unmaps it.
[ "$dma_ok" -eq 1 ] && dma_writer_start "$port"
out=$("$bin/stress-map" "$vfio" 3 8 "$STRESS_SECONDS" 2>&1)
rc=$?
if [ "$dma_ok" -eq 1 ]; then
	dma_writer_stop || dma_ok=0
	dma_writes=$dma_writer_count
fi
dma_state "traffic and stress done"
echo "# concurrency, 3 domains, 8 threads, $STRESS_SECONDS s on $(nproc) vCPUs: $(echo "$out" | tail -n 1)"
echo "$out" | head -n -1 | head -n 10 | sed 's/^/# /'
echo "# DMA-API traffic meanwhile: $dma_writes writes of 32 KiB to the DMA-FQ port"
echo "# pool: hits +$(($(pool_stat hits) - h0)), fallbacks to C +$(($(pool_stat fallbacks) - fb0))"
[ "$rc" -eq 0 ] && [ "$dma_ok" -eq 1 ] && [ "$(pool_stat hits)" -gt "$h0" ]
result $? concurrency_stress

# What stays: the tables the traffic grew in the port's domain, from the pool
# or from C (a request the pool could not serve on a CPU, or one in the same
# tick: patch 0025). stress-map's domains are gone. A leak of theirs would be
# thousands of pages; the port's 32 KiB buffers need a handful of tables.
sleep 1
grown=$(($(vmstat nr_iommu_pages) - pages0))
echo "# tables grown in the port's domain (stay there): $grown, $(pool_stat outstanding) of them from the pool"
pool_unload
if [ "$grown" -ge 0 ] && [ "$grown" -le 16 ]; then
	pages0=$((pages0 + grown))
	check_baseline concurrency_no_leak "$pages0"
else
	echo "# concurrency_no_leak: $grown table pages more than before, not just the port's domain"
	result 1 concurrency_no_leak
fi

# 3b. The port's driver rebound under traffic: stress-map maps and unmaps in
# three domains all along, the pool loaded, while the port's driver is
# rebound three times, each followed by REBIND_SECONDS of DMA-API writes: to
# the same domain (R), to a new strict domain (D), to a new lazy one (F). The
# new domains take their tables from the pool. No kernel report may appear.
# (On QEMU 10.0.13 this corrupted guest memory with a split ring: QEMU wrote
# half of a page-crossing used element to the wrong guest page; the port now
# uses a packed ring, qemu/run-guest.sh; issue 16, docs/port-rebind/.)
REBIND_SECONDS=20
rebind_ok=0
rebind_log=""
if [ -n "$dma_bdf" ]; then
	pool_load "$ko"
	h0=$(pool_stat hits)
	r0=$(dmesg | grep -cEf "$KERNEL_REPORT_FILE")
	coproc STRESS { "$bin/stress-map" "$vfio" 3 4 0 2>&1; }
	stress_pid=$STRESS_PID
	sleep 2
	rebind_ok=1
	for phase in "R" "D DMA-FQ DMA" "F DMA-FQ DMA DMA-FQ"; do
		# shellcheck disable=SC2086
		set -- $phase
		shift
		if ! pci_rebind "$dma_bdf" "$@" || ! port=$(dma_port); then
			rebind_log="$rebind_log ${phase%% *}: rebind failed;"
			rebind_ok=0
			break
		fi
		dma_writer_start "$port"
		sleep "$REBIND_SECONDS"
		dma_writer_stop || rebind_ok=0
		rebind_log="$rebind_log ${phase%% *}: $(cat "/sys/bus/pci/devices/$dma_bdf/iommu_group/type"), $dma_writer_count writes;"
	done
	echo >&"${STRESS[1]}"
	out=$(cat <&"${STRESS[0]}")
	wait "$stress_pid"
	rc=$?
	r1=$(dmesg | grep -cEf "$KERNEL_REPORT_FILE")
	echo "# port rebinds under traffic:$rebind_log stress-map: $(echo "$out" | tail -n 1)"
	echo "# pool: hits +$(($(pool_stat hits) - h0)); kernel reports +$((r1 - r0))"
	[ "$rebind_ok" -eq 1 ] && [ "$rc" -eq 0 ] && [ "$r1" -eq "$r0" ] && [ "$(pool_stat hits)" -gt "$h0" ]
	result $? port_rebind_under_traffic
	sleep 1
	grown=$(($(vmstat nr_iommu_pages) - pages0))
	pool_unload
	# The port's last domain replaced the one scenario 3 left: a handful of
	# tables either way.
	echo "# tables of the port's new domain against its old one: $grown"
	if [ "$grown" -ge -16 ] && [ "$grown" -le 16 ]; then
		pages0=$((pages0 + grown))
		check_baseline port_rebind_no_leak "$pages0"
	else
		result 1 port_rebind_no_leak
	fi
else
	echo "# no port to rebind (scenario 3 found none)"
	result 1 port_rebind_under_traffic
	result 1 port_rebind_no_leak
fi

# 4. Module churn: stress-map keeps three domains alive and maps and unmaps
# in them all along, while the module is loaded and unloaded RELOADS times.
pool_load "$ko"
coproc STRESS { "$bin/stress-map" "$vfio" 3 4 0 2>&1; }
stress_pid=$STRESS_PID
sleep 2
pool_reloads "$ko" "$RELOADS"
reload_bad=$?
echo >&"${STRESS[1]}"
out=$(cat <&"${STRESS[0]}")
wait "$stress_pid"
rc=$?
echo "# module churn: $RELOADS reloads under stress-map (3 domains, 4 threads): $(echo "$out" | tail -n 1)"
[ "$reload_bad" -eq 0 ] && [ "$rc" -eq 0 ]
result $? module_churn
pool_unload
check_baseline module_churn_no_leak "$pages0"

# 5. Bad input.
pool_refuses_params "$ko" "capacity=abc" "low_watermark=-1" "high_watermark=0" "capacity=99999999999" \
	"capacity=0x" "high_watermark=512 capacity=256"
result $? bad_parameters
loaded=0
pool_load "$ko" && [ -r "$POOL_STATS" ] && loaded=1
before=$(cat "$POOL_STATS" 2>/dev/null)
bad=0
for f in stats spare_pfns; do
	if echo 1 >"/sys/kernel/debug/iommu_pt/$f" 2>/dev/null; then
		echo "# a write to iommu_pt/$f was accepted"
		bad=1
	fi
done
after=$(cat "$POOL_STATS" 2>/dev/null)
# Only with the module loaded: without it there is nothing to write to.
[ "$loaded" -eq 1 ] && [ "$bad" -eq 0 ] && [ -n "$before" ] && [ "$before" = "$after" ]
result $? debugfs_read_only
pool_unload
check_baseline bad_input_no_leak "$pages0"

# 6. Unloading gives the spare pages back. NR_IOMMU_PAGES counts only pages
# in tables, so a pool that kept its spare pages at unload would pass every
# baseline above. Free memory must come back instead, counted as the buddy
# allocator's free pages plus those on the per-CPU lists (/proc/zoneinfo's
# pageset counts), which MemFree leaves out and where a burst of frees lands
# first; with a pool of 64 MiB (16384 pages), so that the signal dwarfs the
# noise. The page cache is dropped before each reading, but not the slab
# caches: dropping those (drop_caches=2 or 3) runs every shrinker, the
# pool's too, which would empty the pool before it is counted.
free_kib() {
	sync
	echo 1 >/proc/sys/vm/drop_caches
	sleep 1
	echo 1 >/proc/sys/vm/stat_refresh
	awk 'FILENAME == "/proc/vmstat" && $1 == "nr_free_pages" ||
		FILENAME == "/proc/zoneinfo" && $1 == "count:" { n += $2 } END { print n * 4 }' \
		/proc/vmstat /proc/zoneinfo
}
free0=$(free_kib)
filled=0
free1=
if pool_load "$ko" capacity=16384 high_watermark=16384 low_watermark=8192; then
	# The worker fills the pool to its high watermark after the load.
	! pool_wait_clean 16384 60 || filled=1
	free1=$(free_kib)
	pool_unload
fi
free2=$(free_kib)
echo "# free pages: $free0 KiB before the load, ${free1:-?} KiB with the pool filled" \
	"(filled $filled), $free2 KiB after the unload"
# Filled: at least 48 MiB gone; unloaded: at least 48 MiB back.
[ "$filled" -eq 1 ] && [ -n "$free0" ] && [ -n "$free1" ] && [ -n "$free2" ] &&
	[ $((free0 - free1)) -ge 49152 ] && [ $((free2 - free1)) -ge 49152 ]
result $? unload_frees_spare_pages

zero_check_result zero_check_no_failures

kernel_reports || ktap_failures=$((ktap_failures + 1))
exit $((ktap_failures > 0))
