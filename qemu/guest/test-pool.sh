#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: the iommu-pt module with a real VT-d paging domain.
#
# usage: test-pool.sh MODULE.ko GUEST_BIN_DIR
#
# 1. Bad module parameters are refused with a message, and nothing stays loaded.
# 2. Loading the module runs its KUnit suite (iommu_pt_pool).
# 3. The igb NIC, bound to vfio-pci, is attached to an iommufd IOAS; a sparse map
#    takes its tables from the pool (hits grow by at least one table per
#    mapping), and the tables of that domain are counted exactly: the growth
#    of nr_iommu_pages is that of outstanding, with no fallback to C
#    (lib.sh's pool_tables_check); the teardown after the unmap brings every
#    page back (outstanding returns to its value before, and so does
#    nr_iommu_pages).
# 4. A dense map fills whole leaf tables; its unmap clears them entry by entry
#    and frees them, and they come back to the pool as clean pages, each
#    checked all zero (zero_check=1, as in every stage) and not zeroed again.
#    Then every spare page goes back under memory pressure (drop_caches runs
#    the shrinker), counted exactly: with the pool idle and quiet, clean and
#    dirty drop to 0, the CPUs' caches' pages included, and the spare pages
#    are conserved (shrunk grows by the spare pages there were: lib.sh's
#    pool_shrunk_check).
# 5. The module, loaded again (full), is unloaded and loaded 20 times while a
#    mapped domain with tables from the pool (counted exactly, as in 3) stays
#    alive; the domain is then
#    torn down. Tables from earlier loads go back to the page allocator:
#    nr_iommu_pages returns to its starting value, no warning is printed, and
#    the kernel's taint flags changed only by the module's load (lib.sh's
#    taint_result).
# With POOL_BYPASS=1 (scripts/test.sh's IOMMU_PT_POOL_BYPASS: the debug kernel,
# or a boot with init_on_free=1) the page allocator checks freed pages, and the
# pool must keep none: every request is left to C, so the checks of 2 to 4
# require that it was asked and served, kept, shrank and took back nothing,
# and the others that C's tables behave as before.
# Prints KTAP.

set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/test-lists.sh"
ko=$1
bin=$2
# Below the default high watermark (256): the worker refills the pool to it
# once requests pause, so the sparse map below finds a table for each mapping
# whatever the generic_pt re-runs left (with 512, the map depended on the
# tables those runs returned, and fell back to C in 2 of 7 boots).
MAPPINGS=200
CHURN=20
bypass=${POOL_BYPASS:-0}
case "$bypass" in
0 | 1) ;;
*) echo "# POOL_BYPASS is 0 or 1, not '$bypass'" >&2; exit 1 ;;
esac

# Saved stats files (lib.sh's pool_stats_save).
st=$(mktemp -d)

taint_start
echo "KTAP version 1"
echo "1..17"

# 1. Bad parameters.
pool_refuses_params "$ko" "capacity=0" "capacity=-5" "capacity=4294967295" "capacity=1000000" \
	"low_watermark=0" "low_watermark=300 high_watermark=200" "high_watermark=2048" \
	"zero_check=2" "zero_check=-1"
result $? pool_refuses_bad_parameters

# 2. Load; the KUnit suite runs now and its KTAP goes to the kernel log.
mount -t debugfs none /sys/kernel/debug 2>/dev/null
insmod "$ko" zero_check=1
result $? pool_module_loads
echo "# bypass $(pool_stat bypass), expected $bypass"
[ -r "$POOL_STATS" ] && [ "$(pool_stat bypass)" = "$bypass" ]
result $? pool_bypass_as_the_page_allocator_requires
if [ "$bypass" -eq 0 ]; then
	[ -r "$POOL_STATS" ] && grep -q '^clean [1-9]' "$POOL_STATS"
	result $? pool_prefilled
else
	[ "$(pool_stat clean)" = 0 ] && [ "$(pool_stat dirty)" = 0 ]
	result $? pool_bypassed_keeps_no_page
fi

# generic_pt's six suites again, now with the pool as provider. They ran built
# in at boot on the C allocator. Each re-run must start (the write succeeds)
# and pass: its debugfs results end with the suite's own result line, and no
# test in them failed. Their KTAP stays off the console, where it would land
# inside this script's results with no header of its own; each suite's
# debugfs results, a KTAP document of its own, are printed instead.
hits0=$(pool_stat hits) allocs0=$(pool_stat allocs)
reruns_bad=0
console_level=$(awk '{ print $1 }' /proc/sys/kernel/printk)
quiet_console
for suite in "${GENERIC_PT_SUITES[@]}"; do
	results=/sys/kernel/debug/kunit/$suite/results
	if ! echo run >"/sys/kernel/debug/kunit/$suite/run"; then
		echo "# $suite: the re-run did not start"
		reruns_bad=1
	elif ! tail -n 1 "$results" | grep -q "^ok 1 $suite\( # SKIP.*\)\?$" || grep -q 'not ok' "$results"; then
		echo "# $suite failed on the pool:"
		grep -B5 'not ok' "$results" | head -n 40 | sed 's/^/# /'
		reruns_bad=1
	fi
	cat "$results"
done
dmesg -n "$console_level"
hits1=$(pool_stat hits) allocs1=$(pool_stat allocs)
echo "# generic_pt suites with the pool: hits $hits0 -> $hits1, requests $allocs0 -> $allocs1"
if [ "$bypass" -eq 0 ]; then
	[ "$reruns_bad" -eq 0 ] && integers "$hits0" "$hits1" && [ "$hits1" -gt "$hits0" ]
	result $? pool_serves_generic_pt_kunit
else
	# Asked (the hook works) and left every request to C.
	[ "$reruns_bad" -eq 0 ] && integers "$hits0" "$hits1" "$allocs0" "$allocs1" &&
		[ "$allocs1" -gt "$allocs0" ] && [ "$hits1" -eq 0 ]
	result $? pool_bypassed_for_generic_pt_kunit
fi

# 3. A real VT-d paging domain.
igb=$(igb_bdf)
vfio=""
[ -n "$igb" ] && bind_vfio_pci "$igb" && vfio=$(vfio_cdev "$igb")
[ -n "$vfio" ] && [ -c "$vfio" ]
result $? pool_igb_bound_to_vfio_pci

# The worker's refill after the re-runs: up to 30 s for MAPPINGS + 16 clean
# pages (the map below is checked whether it came or not).
pool_wait_clean $((MAPPINGS + 16)) 30 || true
echo "# clean spare pages before the map: $(pool_stat clean)"
# The domain is the harness's own and nothing else maps or unmaps meanwhile:
# its tables are exactly what nr_iommu_pages gains, and the pool's counters
# must account for each (pool_tables_check).
pool_stats_save "$st/map0"
hits0=$(pool_stat hits) out0=$(pool_stat outstanding) iommu0=$(vmstat nr_iommu_pages)
map_start "$bin/iommufd-map" "$vfio" "$MAPPINGS"
iommu1=$(vmstat nr_iommu_pages)
pool_stats_save "$st/map1"
hits1=$(pool_stat hits) out1=$(pool_stat outstanding)
pool_tables_check "$st/map0" "$st/map1" "$iommu0" "$iommu1"
tables_rc=$?
echo "# $map_state: hits $hits0 -> $hits1; $pool_detail"
[ -z "$pool_problems" ] || echo "# ${pool_problems#; }"
if [ "$bypass" -eq 0 ]; then
	[ "$map_state" = mapped ] && [ "$tables_rc" -eq 0 ] && [ $((hits1 - hits0)) -ge "$MAPPINGS" ]
	result $? pool_serves_domain_tables
else
	# Every request falls back, so the tables are C's and uncounted by the
	# pool (pool_tables_check fails, as it must).
	[ "$map_state" = mapped ] && integers "$hits1" "$out0" "$out1" && [ "$hits1" -eq 0 ] &&
		[ "$out1" -eq "$out0" ] && [ "$(pool_stat clean)" = 0 ] && [ "$(pool_stat dirty)" = 0 ]
	result $? pool_bypassed_for_domain_tables
fi
map_next
out2=$(pool_stat outstanding)
echo "# $map_state: outstanding $out2"
# generic_pt keeps emptied tables until the domain is freed.
[ "$map_state" = unmapped ]
result $? pool_unmap_succeeds
map_end
out3=$(pool_stat outstanding)
nr_iommu_pages_check "$iommu0"
pages_back=$?
echo "# teardown: status $map_status, outstanding $out3 (was $out0), nr_iommu_pages $nr_iommu_pages (was $iommu0)"
[ "$map_status" -eq 0 ] && [ "$out3" -eq "$out0" ]
result $? pool_teardown_returns_every_page
result "$pages_back" pool_nr_iommu_pages_back_to_baseline

# Tables that the unmap emptied come back clean: 1024 pages back to back fill
# two leaf tables of 512 entries.
z0=$(pool_stat frees_zeroed) zf0=$(pool_stat zero_check_failures) zo0=$(pool_stat zeroed_on_alloc)
printf '\n\n' | "$bin/iommufd-map" "$vfio" 1024 dense >/dev/null
rc=$?
z1=$(pool_stat frees_zeroed) zf1=$(pool_stat zero_check_failures) zo1=$(pool_stat zeroed_on_alloc)
echo "# dense map of 1024 pages: exit $rc, tables freed all zero $z0 -> $z1, zero check failures $zf0 -> $zf1, zeroed on request $zo0 -> $zo1"
if [ "$bypass" -eq 0 ]; then
	[ "$rc" -eq 0 ] && [ -n "$z0" ] && [ -n "$zf0" ] && [ $((z1 - z0)) -ge 2 ] && [ "$zf1" -eq 0 ]
	result $? pool_takes_emptied_tables_back_clean
else
	# The emptied tables were C's: they went back to the page allocator.
	[ "$rc" -eq 0 ] && integers "$z0" "$z1" "$zf1" && [ "$z1" -eq 0 ] && [ "$zf1" -eq 0 ]
	result $? pool_bypassed_takes_no_table_back
fi

# Memory pressure: dropping caches runs every shrinker, the pool's among them.
# The pool idle and quiet before and after: the shrinker gives every spare
# page back, those the teardowns above left in the CPUs' caches too, and
# nothing refills an idle pool.
pool_wait_quiet 30
pool_stats_save "$st/drop0"
echo 2 >/proc/sys/vm/drop_caches
pool_wait_quiet 30
pool_stats_save "$st/drop1"
pool_shrunk_check "$st/drop0" "$st/drop1"
shrunk_rc=$?
echo "# drop_caches: $pool_detail"
if [ "$bypass" -eq 0 ]; then
	[ -z "$pool_problems" ] || echo "# pool_shrinker_gives_spare_pages_back: ${pool_problems#; }"
	result "$shrunk_rc" pool_shrinker_gives_spare_pages_back
else
	# A bypassed pool has nothing to give back.
	shrunk1=$(pool_stat shrunk) clean1=$(pool_stat clean) dirty1=$(pool_stat dirty)
	integers "$shrunk1" "$clean1" "$dirty1" && [ "$shrunk1" -eq 0 ] && [ $((clean1 + dirty1)) -eq 0 ]
	result $? pool_bypassed_has_nothing_to_shrink
fi

# 4. Module churn with a live, mapped domain. The shrinker emptied the pool:
# loaded again, it is full, and the domain's tables come from it.
reloaded=0
pool_reloads "$ko" 1 && reloaded=1
pool_stats_save "$st/churn0"
hits0=$(pool_stat hits) churn_iommu0=$(vmstat nr_iommu_pages)
map_start "$bin/iommufd-map" "$vfio" "$MAPPINGS"
churn_iommu1=$(vmstat nr_iommu_pages)
pool_stats_save "$st/churn1"
hits1=$(pool_stat hits)
pool_tables_check "$st/churn0" "$st/churn1" "$churn_iommu0" "$churn_iommu1"
tables_rc=$?
echo "# before the churn: reloaded $reloaded, $map_state, hits $hits0 -> $hits1; $pool_detail"
[ -z "$pool_problems" ] || echo "# ${pool_problems#; }"
if [ "$bypass" -eq 0 ]; then
	[ "$reloaded" -eq 1 ] && [ "$map_state" = mapped ] && [ "$tables_rc" -eq 0 ] &&
		integers "$hits0" "$hits1" && [ $((hits1 - hits0)) -ge "$MAPPINGS" ]
else
	[ "$reloaded" -eq 1 ] && [ "$map_state" = mapped ]
fi
result $? pool_domain_mapped_before_churn
pool_reloads "$ko" "$CHURN"
result $? pool_reloads_with_live_domain
rmmod iommu_pt
map_next
map_end
nr_iommu_pages_check "$iommu0"
pages_back=$?
echo "# after churn and teardown: status $map_status, nr_iommu_pages $nr_iommu_pages (was $iommu0)"
[ "$map_status" -eq 0 ] && [ "$map_state" = unmapped ] && [ "$pages_back" -eq 0 ]
result $? pool_churn_leaks_nothing
kernel_reports
result $? pool_no_kernel_warnings
taint_result pool_kernel_not_tainted
exit $((ktap_failures > 0))
