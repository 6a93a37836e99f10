#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: the kernel's VFIO selftests on the igb NIC bound to
# vfio-pci, first on the C allocator (iommu_pt not loaded), then on the Rust
# pool (iommu_pt loaded), in the translation mode the guest was booted with.
#
# usage: vfio-tests.sh legacy|scalable|amd MODULE.ko SELFTEST_DIR GUEST_BIN_DIR
#
# legacy and scalable are VT-d's modes, amd is AMD-Vi (QEMU's amd-iommu).
#
# Each selftest binary's own TAP output is nested under a result for the
# binary (exit 0 pass, 4 skip, anything else fail). A second result,
# <binary>_checks, asserts what the binary cannot see:
#  - nothing leaked: NR_IOMMU_PAGES is back to its value before the binary;
#  - the translation stage: a sampler (table-frames) reads the device's
#    context or PASID entry (VT-d) or device table entry (AMD-Vi) every few
#    seconds while the binary runs (second-stage tables in legacy mode,
#    first-stage in scalable mode, AMD v1 tables in amd mode, walked in memory
#    through /proc/kcore);
#  - no kernel report while the binary ran, except, on VT-d, the DMA faults
#    that vfio_pci_driver_test provokes on purpose at an IOVA it leaves
#    unmapped (lib.sh's dma_faults_expected: the igb's faults of a not-present
#    entry only); those are counted, and the final scan of the whole kernel
#    log leaves out just those lines. QEMU's amd-iommu reports no fault to the
#    guest, so in amd mode no fault line is expected and any AMD-Vi event
#    line fails the check;
#  - on the C allocator, the module is not loaded;
#  - on the Rust pool, the pool served every table (lib.sh's
#    pool_served_check): its counters show tables served (hits >= 1), no
#    request left to C (fallbacks +0), every table handed back (outstanding
#    back to its value before) and no zero check failure; and every table frame
#    the sampler found in the page table of the binary's domain is a page of
#    the pool (one of its spare pages before or after the binary). Between
#    binaries the device is back in its default DMA domain, made at boot by
#    C: a sample taken before each binary names that domain (its top table),
#    and samples of it are left out. On the C allocator
#    the sampler reads only the stage: a table walk racing with an unmap could
#    read a table already back in the page allocator.
# The binaries that keep a DMA domain for seconds (vfio_dma_mapping_test,
# vfio_pci_driver_test) must be seen by the sampler at least once, and with
# the pool, vfio_pci_driver_test's domain with at least MIN_DRIVER_FRAMES
# table frames: each of its tests maps 1 GiB of 4 KiB pages, 512 leaf tables
# and more (seen: 518 and 520), so a sampler that sees only a top table, or
# nothing it can parse, fails the check instead of passing it with no frame to
# compare. A sample that failed (table-frames exits 1 on a dump it cannot
# parse) fails the check; the first error it printed is in the detail line.
#
# Two variables make a subset, for the debug kernel, where every variant of
# vfio_pci_driver_test maps and pins 1 GiB of 4 KiB pages under KASAN:
#   VFIO_ALLOCATORS         the allocators, in order (default "c rust")
#   VFIO_DRIVER_TEST_MODES  the IOMMU modes (fixture variants) of
#                           vfio_pci_driver_test (default: all five)
#
# The pool's suite ends with iommu_pt_unloads (its rmmod), and a last result,
# MODE_no_kernel_reports, scans the whole kernel log (lib.sh's kernel_reports,
# the DMA faults accounted for left out).
#
# Prints nested KTAP; scripts/ktap.py --table turns it into the summary.

set -u
. "$(dirname "$0")/lib.sh"
mode=$1
ko=$2
tests=$3
bin=$4

. "$(dirname "$0")/test-lists.sh"
TESTS=("${VFIO_BINARIES[@]}")
# The sampler must see these with a domain: they hold one for seconds.
MUST_SAMPLE="vfio_dma_mapping_test vfio_pci_driver_test"
MIN_DRIVER_FRAMES=64
SAMPLE_EVERY=2
# KSFT_TIMEOUT_SCALE (read by the harness for each test's timeout, patch
# 0017) scales the whole binary's timeout too.
scale=${KSFT_TIMEOUT_SCALE:-1}
allocators=${VFIO_ALLOCATORS:-c rust}
. "$(dirname "$0")/vfio-subset.sh"
if ! why=$(vfio_subset_check "$allocators" "${VFIO_DRIVER_TEST_MODES:-}" "$scale"); then
	echo "vfio-tests.sh: VFIO_ALLOCATORS, VFIO_DRIVER_TEST_MODES or KSFT_TIMEOUT_SCALE: $why" >&2
	exit 2
fi
TEST_TIMEOUT=$((600 * scale))
driver_args=()
for m in ${VFIO_DRIVER_TEST_MODES:-}; do driver_args+=(-v "$m"); done
spare=/sys/kernel/debug/iommu_pt/spare_pfns
tmp=$(mktemp -d)
# Kernel log lines a binary accounted for: the DMA faults it provokes.
accepted=$tmp/accepted
: >"$accepted"

case "$mode" in
legacy) want_stage=second iommu=vtd ;;
scalable) want_stage=first iommu=vtd ;;
amd) want_stage=amdv1 iommu=amd ;;
*)
	echo "vfio-tests.sh: mode is legacy, scalable or amd, not '$mode'" >&2
	exit 2
	;;
esac

# sampler FILE [--stage-only]: what table-frames reports, every few seconds; a
# sample that failed is an "error STATUS" line, with what it printed in
# FILE.err.
sampler() {
	local out=$1
	shift
	while :; do
		"$bin/table-frames" "$@" "$bdf" >>"$out" 2>>"$out.err" || echo "error $?" >>"$out"
		sleep "$SAMPLE_EVERY"
	done
}

# A device reset at every open and close would log to the console.
quiet_console

# Setup: find the igb, bind it to vfio-pci, check the huge pages.
bdf=$(igb_bdf)
setup_error=""
if [ -z "$bdf" ]; then
	setup_error="no igb device ($IGB_ID)"
elif ! bind_vfio_pci "$bdf"; then
	setup_error="cannot bind $bdf to vfio-pci"
fi
for size in 2048kB 1048576kB; do
	n=$(cat "/sys/kernel/mm/hugepages/hugepages-$size/nr_hugepages" 2>/dev/null || echo 0)
	echo "# huge pages of $size: $n"
	[ "$n" -ge 1 ] || setup_error="${setup_error:+$setup_error; }no $size huge page reserved"
done
# What table-frames reads: VT-d's table dump, or AMD-Vi's device table entry
# and the tables themselves in /proc/kcore (an ELF core: "\177ELF").
if [ "$iommu" = vtd ]; then
	[ -r /sys/kernel/debug/iommu/intel/dmar_translation_struct ] ||
		setup_error="${setup_error:+$setup_error; }no Intel IOMMU debugfs"
else
	if [ ! -w /sys/kernel/debug/iommu/amd/devid ] || [ ! -r /sys/kernel/debug/iommu/amd/devtbl ]; then
		setup_error="${setup_error:+$setup_error; }no AMD IOMMU debugfs (CONFIG_AMD_IOMMU_DEBUGFS)"
	fi
	[ "$(head -c 4 /proc/kcore 2>/dev/null | tail -c 3)" = ELF ] ||
		setup_error="${setup_error:+$setup_error; }/proc/kcore cannot be read (CONFIG_PROC_KCORE)"
fi
if [ -n "$setup_error" ]; then
	echo "KTAP version 1"
	echo "1..1"
	echo "not ok 1 vfio_${mode}_setup # $setup_error"
	exit 1
fi
echo "# device $bdf ($(basename "$(readlink "/sys/bus/pci/devices/$bdf/iommu_group")" | sed 's/^/iommu group /')), $mode mode, expecting stage $want_stage"
echo "# timeouts: each test's x$scale (KSFT_TIMEOUT_SCALE), ${TEST_TIMEOUT} s per binary"
echo "# allocators: $allocators; vfio_pci_driver_test modes: ${VFIO_DRIVER_TEST_MODES:-all}"

# One attach and map before measuring: structures the IOMMU driver creates
# once per device and keeps (a scalable-mode PASID table) are not leaks.
printf '\n\n' | "$bin/iommufd-map" "$(vfio_cdev "$bdf")" 1 >/dev/null

status=0
# The IOMMU this boot was given is on, strict, and the igb alone in its
# group (a KTAP document of its own, before the matrix's).
"$(dirname "$0")/check-iommu.sh" || status=1

# run_one ALLOCATOR INDEX TEST: one binary and its checks, as two results.
run_one() {
	local alloc=$1 idx=$2 name=$3
	local samples=$tmp/samples-$alloc-$name
	local pages0 pages1 stages problems="" frames foreign seen rc sp idle_top t0 args=()
	local log0 faults errors pool0="" pool1

	: >"$samples"
	: >"$samples.err"
	pages0=$(vmstat nr_iommu_pages)
	log0=$(dmesg | wc -l)
	# The domain the device is in between binaries.
	idle_top=$("$bin/table-frames" "$bdf" 2>/dev/null | awk '$1 == "top" { print $2 }')
	if [ "$alloc" = rust ]; then
		pool0=$(pool_snapshot)
		sort -u "$spare" >"$tmp/spare"
	fi
	if [ "$alloc" = c ]; then
		sampler "$samples" --stage-only &
	else
		sampler "$samples" &
	fi
	sp=$!
	[ "$name" != vfio_pci_driver_test ] || args=("${driver_args[@]}")
	echo "        # Subtest: $name"
	t0=$(date +%s)
	VFIO_SELFTESTS_BDF=$bdf timeout "$TEST_TIMEOUT" "$tests/$name" "${args[@]}" 2>&1 |
		sed -u 's/^/        /'
	rc=${PIPESTATUS[0]}
	kill "$sp"
	wait "$sp" 2>/dev/null
	nr_iommu_pages_check "$pages0" || problems="$problems; nr_iommu_pages $nr_iommu_pages_change"
	pages1=$nr_iommu_pages
	# The binary's kernel reports: only vfio_pci_driver_test provokes some,
	# DMA faults at the IOVA it leaves unmapped (none under AMD-Vi); any
	# other fails the check.
	dmesg | tail -n +$((log0 + 1)) | grep -Ef "$KERNEL_REPORT_FILE" >"$tmp/reports"
	if [ "$name" = vfio_pci_driver_test ]; then
		dma_faults_expected "$bdf" "$iommu" <"$tmp/reports" >"$tmp/expected" 2>"$tmp/unexpected"
		cat "$tmp/expected" >>"$accepted"
	else
		: >"$tmp/expected"
		cp "$tmp/reports" "$tmp/unexpected"
	fi
	faults=$(grep -c 'Request device' "$tmp/expected")
	[ ! -s "$tmp/unexpected" ] ||
		problems="$problems; kernel reports during the binary: $(head -n 2 "$tmp/unexpected" | tr '\n' ' ')"

	case $rc in
	0) echo "    ok $((2 * idx - 1)) $name" ;;
	4) echo "    ok $((2 * idx - 1)) $name # SKIP the whole binary skipped" ;;
	*)
		echo "    not ok $((2 * idx - 1)) $name # exit status $rc"
		set_failed=1
		;;
	esac

	seen=$(grep -c '^stage \(first\|second\|passthrough\|amdv1\|amdv2\)' "$samples")
	stages=$(grep '^stage ' "$samples" | grep -v '^stage none' | sort -u | cut -d' ' -f2 | tr '\n' ' ')
	if [ -n "$stages" ] && [ "$stages" != "$want_stage " ]; then
		problems="$problems; stage seen: $stages(want $want_stage)"
	fi
	case " $MUST_SAMPLE " in
	*" $name "*) [ "$seen" -ge 1 ] || problems="$problems; the sampler never saw a domain" ;;
	esac
	# Table frames of the binary's own domains: samples of the idle domain left out.
	awk -v idle="$idle_top" '$1 == "stage" { top = "" } $1 == "top" { top = $2 }
		$1 == "table" && top != idle { print $2 }' "$samples" | sort -u >"$tmp/frames"
	frames=$(wc -l <"$tmp/frames")
	if [ "$alloc" = rust ]; then
		seen=$(awk -v idle="$idle_top" '$1 == "top" && $2 != idle { n++ } END { print n + 0 }' "$samples")
	fi
	errors=$(grep -c '^error ' "$samples")
	[ "$errors" -eq 0 ] || problems="$problems; $errors samples of table-frames failed"
	local detail
	detail="$(($(date +%s) - t0)) s, nr_iommu_pages $pages0 -> $pages1, $seen samples with a domain (stage ${stages:-none}), $frames table frames, idle domain top ${idle_top:-none}, $errors failed samples$(head -n 1 "$samples.err" 2>/dev/null | sed 's/^/: /'), $faults DMA faults at unmapped IOVAs"

	if [ "$alloc" = c ]; then
		[ ! -e /sys/module/iommu_pt ] || problems="$problems; iommu_pt is loaded"
	else
		if [ ! -r "$POOL_STATS" ]; then
			problems="$problems; iommu_pt is not loaded"
		else
			pool1=$(pool_snapshot)
			sort -u "$spare" "$tmp/spare" >"$tmp/pool"
			foreign=$(comm -23 "$tmp/frames" "$tmp/pool" | wc -l)
			pool_served_check "$pool0" "$pool1"
			detail="$detail, $foreign not from the pool; $pool_detail"
			problems="$problems$pool_problems"
			[ "$foreign" -eq 0 ] || problems="$problems; frames not from the pool: $(comm -23 "$tmp/frames" "$tmp/pool" | head -n 5 | tr '\n' ' ')"
			if [ "$name" = vfio_pci_driver_test ] && [ "$frames" -lt "$MIN_DRIVER_FRAMES" ]; then
				problems="$problems; only $frames table frames of its domain seen (at least $MIN_DRIVER_FRAMES: it maps 1 GiB of 4 KiB pages)"
			fi
		fi
	fi
	echo "    # $name: $detail"
	checks_result $((2 * idx)) "${name}_checks" "$problems"
}

# run_set ALLOCATOR INDEX: every binary on one allocator, as one suite; the
# pool's ends with iommu_pt's unload.
run_set() {
	local alloc=$1 idx=$2 i=0 name t0 unload="" plan=$((2 * ${#TESTS[@]}))
	t0=$(date +%s)
	set_failed=0
	[ "$alloc" = c ] || plan=$((plan + 1))
	echo "    KTAP version 1"
	echo "    # Subtest: vfio_${mode}_${alloc}"
	echo "    1..$plan"
	for name in "${TESTS[@]}"; do
		i=$((i + 1))
		run_one "$alloc" "$i" "$name"
	done
	if [ "$alloc" = rust ]; then
		rmmod iommu_pt || unload="; rmmod iommu_pt failed"
		checks_result "$plan" iommu_pt_unloads "$unload"
	fi
	echo "    # vfio_${mode}_${alloc}: $(($(date +%s) - t0)) s"
	if [ "$set_failed" -eq 0 ]; then
		echo "ok $idx vfio_${mode}_${alloc}"
	else
		echo "not ok $idx vfio_${mode}_${alloc}"
		status=1
	fi
}

echo "KTAP version 1"
echo "1..$(($(echo $allocators | wc -w) + 1))"
idx=0
for a in $allocators; do
	idx=$((idx + 1))
	if [ "$a" = c ]; then
		if [ -e /sys/module/iommu_pt ] && ! rmmod iommu_pt; then
			echo "not ok $idx vfio_${mode}_c # cannot unload iommu_pt"
			status=1
			continue
		fi
		run_set c "$idx"
	# The pool sized for the binaries' domains, since the checks want every
	# table from the pool and every table frame among its spare pages before
	# or after: prefilled with 1024 pages, because vfio_dma_mapping_test
	# builds 517 tables at once and the pool refills from the page allocator
	# only when requests pause and did not run it dry (with the default 256,
	# 4 tables once went to C); room for 4096, so that the tables coming back
	# at a binary's end are kept, not freed past a full depot (with
	# capacity=1024, 22 frames of vfio_pci_driver_test were in neither list).
	elif insmod "$ko" zero_check=1 capacity=4096 high_watermark=1024; then
		run_set rust "$idx"
	else
		echo "not ok $idx vfio_${mode}_rust # insmod $ko failed"
		status=1
	fi
done
# After the allocators' suites, the whole kernel log's scan as a result.
# shellcheck disable=SC2034 # read by lib.sh's result
ktap_n=$idx
kernel_reports "$accepted"
result $? "${mode}_no_kernel_reports"
[ "$ktap_failures" -eq 0 ] || status=1
rm -rf "$tmp"
exit $status
