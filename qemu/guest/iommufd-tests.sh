#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: iommufd's own selftests (tools/testing/selftests/iommu,
# CONFIG_IOMMUFD_TEST) on the C allocator (iommu_pt not loaded), then on the
# Rust pool. Their mock IOMMU builds its domains with generic_pt's amdv1
# format, so every table of theirs goes through the provider hook: a second
# page-table format, and a suite written by the IOMMU maintainers.
#
# usage: iommufd-tests.sh MODULE.ko SELFTEST_DIR
#
# Per allocator, one suite of six results (seven on the pool, whose last,
# iommu_pt_unloads, is its unload):
#  - iommufd: the binary; its own KTAP nested below. It must run all of its
#    IOMMUFD_TESTS tests, fail none, and skip only the tests that do not apply
#    to a fixture variant (ALLOWED_SKIPS, counted);
#  - iommufd_checks: NR_IOMMU_PAGES back at its value; on the pool, tables
#    served (hits >= 1), none left to C, every table handed back, no table
#    freed as all zero that was not (lib.sh's pool_served_check);
#  - iommufd_fail_nth: the binary (FAIL_NTH_TESTS tests, none skipped). It
#    makes the nth fault-injection point of each ioctl fail, for n = 1, 2, ...
#    until the ioctl succeeds. Order-0 page allocations are made injectable
#    first (fail_page_alloc's min-order defaults to 1, which would leave every
#    page table out);
#  - iommufd_fail_nth_checks: as iommufd_checks, and the number of failures
#    injected into page and slab allocations (fault-injection "times" counts
#    down on each);
#  - iommufd_fail_nth_tables: the binary again, with page allocation failures
#    injected only where iommu-pages.c allocates (the stack filter of
#    fail_page_alloc set to its two allocation functions);
#  - iommufd_fail_nth_tables_checks: as iommufd_checks, and at least one
#    failure injected there: a page table of a mock domain failed and its
#    error path ran, on the pool as on C (patch 0026 makes a table the
#    provider serves fail like one from the page allocator).
# Then no_kernel_reports, the kernel log's reports (lib.sh's kernel_reports),
# and kernel_not_tainted: the kernel's taint flags changed only by the
# module's load (lib.sh's taint_result).
#
# Prints nested KTAP; scripts/ktap.py reads it.

set -u
. "$(dirname "$0")/lib.sh"
ko=$1
tests=$2

IOMMUFD_TESTS=246
# Tests that skip by design: iommufd_viommu's tests of a vIOMMU object in its
# no_viommu variant.
ALLOWED_SKIP_ERE='^iommufd_viommu\.no_viommu\.'
ALLOWED_SKIPS=5
FAIL_NTH_TESTS=8
TEST_TIMEOUT=600
# fault-injection "times" before a run; what is left after it tells how many
# failures were injected.
TIMES=1000000
tmp=$(mktemp -d)

# fi_table_allocs_only: fail_page_alloc injects only with iommu-pages.c's
# iommu_alloc_pages_node_sz() or iommu_alloc_table_pages_node_sz() on the
# stack: the range from the first to the end of the second, which the
# compiler places next to each other. Fails if they are not in that order.
fi_table_allocs_only() {
	local range
	range=$(sort /proc/kallsyms | awk '
		$3 == "iommu_alloc_pages_node_sz" { start = $1 }
		found { print start, $1; exit }
		$3 == "iommu_alloc_table_pages_node_sz" { found = start != "" }')
	[ -n "$range" ] || return 1
	echo "0x${range% *}" >"$fi_dir/fail_page_alloc/require-start"
	echo "0x${range#* }" >"$fi_dir/fail_page_alloc/require-end"
	echo "# fail_page_alloc limited to iommu-pages.c's allocations: 0x${range% *}-0x${range#* }"
}

# run_one ALLOCATOR INDEX NAME BINARY PLAN SKIP_ERE SKIPS [tables]: one run of
# a binary and its checks, as two results.
run_one() {
	local alloc=$1 idx=$2 name=$3 binary=$4 plan=$5 skip_ere=$6 skips=$7 filter=${8:-}
	local out=$tmp/$alloc-$name pages0 pages1 rc problems="" detail t0
	local pool0="" pages_back pages_injected slab_injected

	fi_reset
	fi_set times "$TIMES"
	if [ -n "$filter" ] && ! fi_table_allocs_only; then
		echo "    not ok $((2 * idx - 1)) $name # cannot find iommu-pages.c's allocation functions in /proc/kallsyms"
		echo "    not ok $((2 * idx)) ${name}_checks # not run"
		set_failed=1
		return
	fi
	pages0=$(vmstat nr_iommu_pages)
	[ "$alloc" = c ] || pool0=$(pool_snapshot)
	echo "        # Subtest: $name"
	t0=$(date +%s)
	timeout "$TEST_TIMEOUT" "$tests/$binary" >"$out" 2>&1
	rc=$?
	sed 's/^/        /' "$out"
	pages_injected=$((TIMES - $(cat "$fi_dir/fail_page_alloc/times")))
	slab_injected=$((TIMES - $(cat "$fi_dir/failslab/times")))
	fi_reset
	nr_iommu_pages_check "$pages0"
	pages_back=$?
	pages1=$nr_iommu_pages

	problems=$(ksft_problems "$out" "$plan" "$skip_ere" "$skips")
	if [ "$rc" -eq 0 ] && [ -z "$problems" ]; then
		echo "    ok $((2 * idx - 1)) $name"
	else
		echo "    not ok $((2 * idx - 1)) $name # exit status $rc$problems"
		set_failed=1
	fi

	problems=""
	detail="$(($(date +%s) - t0)) s, nr_iommu_pages $pages0 -> $pages1, failures injected: $pages_injected page, $slab_injected slab"
	[ "$pages_back" -eq 0 ] || problems="$problems; nr_iommu_pages $nr_iommu_pages_change"
	if [ "$binary" = iommufd_fail_nth ] && [ "$pages_injected" -lt 1 ]; then
		problems="$problems; no page allocation failure injected${filter:+ in iommu-pages.c}"
	fi
	if [ "$alloc" = c ]; then
		[ ! -e /sys/module/iommu_pt ] || problems="$problems; iommu_pt is loaded"
	elif [ ! -r "$POOL_STATS" ]; then
		problems="$problems; iommu_pt is not loaded"
	else
		pool_served_check "$pool0" "$(pool_snapshot)"
		detail="$detail; $pool_detail"
		problems="$problems$pool_problems"
	fi
	echo "    # $name: $detail"
	checks_result $((2 * idx)) "${name}_checks" "$problems"
}

# run_set ALLOCATOR INDEX: both binaries on one allocator, as one suite; the
# pool's ends with its unload.
run_set() {
	local alloc=$1 idx=$2 t0 unload=""
	t0=$(date +%s)
	set_failed=0
	echo "    KTAP version 1"
	echo "    # Subtest: iommufd_${alloc}"
	echo "    1..$([ "$alloc" = c ] && echo 6 || echo 7)"
	run_one "$alloc" 1 iommufd iommufd "$IOMMUFD_TESTS" "$ALLOWED_SKIP_ERE" "$ALLOWED_SKIPS"
	run_one "$alloc" 2 iommufd_fail_nth iommufd_fail_nth "$FAIL_NTH_TESTS" '^$' 0
	run_one "$alloc" 3 iommufd_fail_nth_tables iommufd_fail_nth "$FAIL_NTH_TESTS" '^$' 0 tables
	if [ "$alloc" = rust ]; then
		pool_unload || unload="; rmmod iommu_pt failed"
		checks_result 7 iommu_pt_unloads "$unload"
	fi
	echo "    # iommufd_${alloc}: $(($(date +%s) - t0)) s"
	if [ "$set_failed" -eq 0 ]; then
		echo "ok $idx iommufd_${alloc}"
	else
		echo "not ok $idx iommufd_${alloc}"
		status=1
	fi
}

quiet_console
status=0
taint_start
echo "KTAP version 1"
echo "1..4"
if [ ! -c /dev/iommu ] || [ ! -d "$fi_dir/fail_page_alloc" ] || [ ! -x "$tests/iommufd" ]; then
	echo "# setup failed: /dev/iommu, $fi_dir/fail_page_alloc or $tests/iommufd missing"
	echo "not ok 1 iommufd_c # setup"
	echo "not ok 2 iommufd_rust # setup"
	exit 1
fi
run_set c 1
if pool_load "$ko" capacity=4096 high_watermark=1024; then
	run_set rust 2
else
	echo "not ok 2 iommufd_rust # insmod $ko failed"
	status=1
fi
rm -rf "$tmp"
# After the two suites: the script's own results.
# shellcheck disable=SC2034 # read by lib.sh's result
ktap_n=2
kernel_reports
result $? no_kernel_reports
taint_result kernel_not_tainted
[ "$ktap_failures" -eq 0 ] || status=1
exit $status
