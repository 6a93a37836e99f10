#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Self-test of the guest library's pure functions (qemu/guest/lib.sh), run on
# the host by stage 0 (scripts/check-style.sh) in a few seconds: each
# check that decides what a stage accepts is fed what it must accept and what
# it must refuse.
#  - dma_faults_expected: on VT-d, the igb's not-present DMA faults (legacy
#    and scalable mode, with their "handling fault status" lines) are
#    expected; a fault of another device, a fault of another kind (reserved
#    bits set, a bad context entry) and any other report are not; on AMD-Vi
#    no line is, not even the igb's IO_PAGE_FAULT; an unknown IOMMU fails;
#  - checks_result: a result line without problems passes, one with problems
#    fails with them as its reason and marks the suite failed;
#  - ksft_problems, over crafted kselftest outputs: a clean one gives no
#    problem; a different plan, results missing, a failed test, a skip the
#    regular expression does not allow, another number of skips, no Totals
#    line, an empty output and no output file are each reported;
#  - pool_snapshot and pool_served_check, over crafted iommu_pt/stats files:
#    a clean run passes; no hit, a fallback, an alloc that was no hit,
#    outstanding not back, a zero check failure, a counter missing, empty or
#    not an integer, a snapshot missing or with a field too many fail;
#  - nr_iommu_pages_check, over a crafted vmstat file: back at the baseline
#    passes; grown, an empty baseline, a counter missing or empty fail;
#  - pool_reloads, with insmod and rmmod replaced: every reload through
#    pool_unload and pool_load; the first failure stops it and fails it;
#  - pool_refuses_params, with insmod, rmmod and dmesg replaced and a module
#    directory of ours: refusals with a message naming a parameter given pass;
#    a silent refusal (an old message naming it does not count), a message
#    naming another parameter, an accepted load and a module left loaded fail;
#  - map_start, map_next, map_end, with a stand-in for iommufd-map: the
#    states and the exit status come back; a program that dies early gives
#    an empty state and its own status;
#  - the exact page counts, over whole crafted stats files: pool_wait_quiet
#    takes still stats after POOL_QUIET_READS readings, waits for changing
#    ones to settle, fails for stats that keep changing (after its seconds)
#    and at once without a reading; pool_stats_save refuses a line that is
#    not "name integer"; stats_get refuses a line missing or repeated;
#    pool_counters_kept fails a counter gone backwards or missing on either
#    side; pool_cpu_dead_check fails pages lost, a move counted short or
#    twice, a CPU that held no page, the dead CPU's counters lost, no
#    cpu_dead_moved line; pool_spare_conserved passes pages served, freed,
#    refilled, spilled, shrunk and freed from a dead CPU, each as counted,
#    and fails a page lost, a page shrunk but kept, a counter missing;
#    pool_shrunk_check passes a refill the shrinker took too, and fails the
#    CPUs' caches left alone, shrunk one page short or over, an idle pool
#    refilled, nothing to give back; pool_spare_balance fails a page too
#    many, a dead CPU's counters counted twice, frees kept but counted as
#    freed; pool_tables_check passes tables from the pool and one freed to
#    the pool meanwhile, and fails a table either the kernel or the pool
#    counts alone, a fallback to C, an empty reading, a counter missing; and
#    pool_spare_pfns_check fails a page missing, listed twice, frame 0,
#    numbers not in lower-case hex, no list.
#  - taint_start and taint_result, over a tainted file of ours: flags
#    unchanged, or only O, E and N set (loading iommu_pt), pass; a new W, D
#    or unknown flag fails, naming it; a reading missing fails.
# And, beside the library, scripts/test.sh's --stages: a list that names no
# stage or an empty one is refused before anything is built or booted; a
# stage named twice is not.
# Exits 1 if any expectation is wrong.

set -u
. "$(dirname "$0")/../qemu/guest/lib.sh"

failed=0
# expect NAME WANT GOT: one expectation.
expect() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1"
	else
		echo "WRONG: $1: want '$2', got '$3'"
		failed=1
	fi
}

igb=0000:00:0c.0
expected='[   71.696684] DMAR: DRHD: handling fault status reg 2
[   71.697012] DMAR: [DMA Read NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x06] PTE Read access is not set
[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x05] PTE Write access is not set
[   68.777045] DMAR: [DMA Read PASID 0x0] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x71] SM: Present bit in first-level paging entry is clear'
unexpected='[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0d.0] fault addr 0x80000000 [fault reason 0x05] PTE Write access is not set
[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x0c] non-zero reserved fields in PTE
[   76.822106] DMAR: [DMA Read NO_PASID] Request device [0000:00:0c.0] fault addr 0x0 [fault reason 0x03] Invalid context entry
[   76.822106] DMAR: [DMA Read PASID 0x0] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x79] SM: Read/Write permission error in second-level paging entry
[   80.000000] WARNING: CPU: 0 PID: 1 at drivers/iommu/iommu-pages.c:60'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out
err=$work/err
printf '%s\n%s\n' "$expected" "$unexpected" | dma_faults_expected "$igb" >"$out" 2>"$err"
expect "dma_faults_expected keeps the igb's not-present faults" "$expected" "$(cat "$out")"
expect "dma_faults_expected refuses the rest" "$unexpected" "$(cat "$err")"
printf '%s\n' "$expected" | dma_faults_expected 0000:00:0d.0 >"$out" 2>"$err"
expect "dma_faults_expected refuses the igb's faults for another device" \
	"$(grep -c 'Request device' <<<"$expected")" "$(grep -c 'Request device' "$err")"
printf '%s\n' "$expected" | dma_faults_expected "$igb" vtd >"$out" 2>"$err"
expect "dma_faults_expected takes vtd as its default" "$expected" "$(cat "$out")"
# Under AMD-Vi QEMU reports no fault: nothing is expected, the igb's own
# IO_PAGE_FAULT included.
amd_faults='[   71.697012] vfio-pci 0000:00:0c.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0002 address=0x80000000 flags=0x0020]
[   71.697013] AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:00:0c.0 domain=0x0002 address=0x80000000 flags=0x0000]'
printf '%s\n%s\n' "$expected" "$amd_faults" | dma_faults_expected "$igb" amd >"$out" 2>"$err"
expect "dma_faults_expected expects no fault under AMD-Vi" "" "$(cat "$out")"
expect "dma_faults_expected refuses every line under AMD-Vi" "$expected
$amd_faults" "$(cat "$err")"
printf '%s\n' "$expected" | dma_faults_expected "$igb" arm >"$out" 2>"$err"
expect "dma_faults_expected fails on an IOMMU it does not know" "1 0 5" \
	"$? $(wc -l <"$out") $(wc -l <"$err")"

set_failed=0
expect "checks_result without problems" "    ok 2 x_checks" "$(checks_result 2 x_checks "")"
expect "checks_result without problems leaves the suite passing" 0 "$set_failed"
line=$(checks_result 4 y_checks "; one; two")
expect "checks_result with problems" "    not ok 4 y_checks # one; two" "$line"
checks_result 4 y_checks "; one" >/dev/null
expect "checks_result with problems fails the suite" 1 "$set_failed"

# A kselftest binary's output (kselftest_harness.h), as ksft_problems reads it:
# four tests, two of them skipped by design. ksft EDIT: ksft_problems's report
# on that output edited with sed EDIT, against a plan of 4 and 2 skips of
# iommufd_viommu's no_viommu variant (iommufd-tests.sh's ALLOWED_SKIP_ERE).
cat >"$work/ksft" <<'EOF'
TAP version 13
1..4
# Starting 4 tests from 2 test cases.
#  RUN           iommufd.ioas.map ...
#            OK  iommufd.ioas.map
ok 1 iommufd.ioas.map
#  RUN           iommufd.ioas.unmap ...
#            OK  iommufd.ioas.unmap
ok 2 iommufd.ioas.unmap
#  RUN           iommufd_viommu.no_viommu.alloc ...
#      SKIP      no vIOMMU
#            OK  iommufd_viommu.no_viommu.alloc
ok 3 iommufd_viommu.no_viommu.alloc # SKIP no vIOMMU
#  RUN           iommufd_viommu.no_viommu.invalidate ...
#      SKIP      no vIOMMU
#            OK  iommufd_viommu.no_viommu.invalidate
ok 4 iommufd_viommu.no_viommu.invalidate # SKIP no vIOMMU
# PASSED: 4 / 4 tests passed.
# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:2 error:0
EOF
ksft() {
	sed "$1" "$work/ksft" >"$work/ksft-edited"
	ksft_problems "$work/ksft-edited" 4 '^iommufd_viommu\.no_viommu\.' 2 2>>"$err"
}
: >"$err"
expect "ksft_problems finds no problem in a clean output" "" "$(ksft '')"
expect "ksft_problems says nothing on stderr for a clean output" "" "$(cat "$err")"
expect "ksft_problems reports a different plan" "; plan 5 (want 4)" "$(ksft 's/^1\.\.4$/1..5/')"
expect "ksft_problems reports no plan" "; plan missing (want 4)" "$(ksft '/^1\.\./d')"
expect "ksft_problems reports results missing" "; 3 results (want 4)" "$(ksft '/^ok 2 /d')"
expect "ksft_problems reports a failed test" "; 1 failed: iommufd.ioas.unmap " \
	"$(ksft 's/^ok 2 /not ok 2 /')"
expect "ksft_problems reports a skip the regular expression does not allow" \
	"; unexpected skips: iommufd.ioas.unmap " \
	"$(ksft 's/^ok 2 .*/& # SKIP no device/; s/^\(ok 4 .*\) # SKIP .*/\1/')"
expect "ksft_problems reports a skip too few" "; 1 skipped (want 2)" "$(ksft 's/^\(ok 4 .*\) # SKIP .*/\1/')"
expect "ksft_problems reports a skip too many" \
	"; unexpected skips: iommufd.ioas.unmap ; 3 skipped (want 2)" "$(ksft 's/^ok 2 .*/& # SKIP no device/')"
expect "ksft_problems reports no Totals line" "; no Totals line" "$(ksft '/^# Totals: /d')"
expect "ksft_problems reports an empty output" "; no output" "$(ksft d)"
expect "ksft_problems reports no output file" "; no output" \
	"$(ksft_problems "$work/no-such-output" 4 '^iommufd_viommu\.no_viommu\.' 2)"

# The pool's counters. stats FILE ALLOCS HITS FALLBACKS OUTSTANDING
# FREES_ZEROED ZERO_CHECK_FAILURES: an iommu_pt/stats file with those, among
# counters that pool_snapshot does not read.
stats() {
	printf 'allocs %s\nhits %s\nfallbacks %s\nfrees 7\nfrees_over_capacity 0\nfrees_zeroed %s\nzero_check_failures %s\nzeroed_on_alloc 0\noutstanding %s\nclean 250\n' \
		"$2" "$3" "$4" "$6" "$7" "$5" >"$1"
}
# snapshot ALLOCS HITS FALLBACKS OUTSTANDING FREES_ZEROED ZERO_CHECK_FAILURES:
# pool_snapshot's line for a stats file with those.
snapshot() {
	stats "$work/stats" "$@"
	POOL_STATS=$work/stats pool_snapshot
}
# served BEFORE AFTER: pool_served_check's status and problems.
served() {
	pool_served_check "$1" "$2"
	echo "$? $pool_problems"
}

# pool_wait_clean: the stats file above holds 250 clean pages.
stats "$work/stats" 1 1 0 0 0 0
POOL_STATS=$work/stats pool_wait_clean 250 1
expect "pool_wait_clean takes a pool holding the pages" 0 "$?"
t=$(date +%s%N)
POOL_STATS=$work/stats pool_wait_clean 251 1
expect "pool_wait_clean fails for a pool holding one page too few" 1 "$?"
expect "pool_wait_clean gives up after its seconds" 1 $((($(date +%s%N) - t) / 900000000))
POOL_STATS=$work/missing pool_wait_clean 0 1
expect "pool_wait_clean fails without a reading" 1 "$?"

before=$(snapshot 100 90 10 5 3 0)
expect "pool_snapshot reads the counters in order" "100 90 10 5 3 0" "$before"
expect "pool_snapshot reads a negative outstanding" "1 1 0 -2 0 0" "$(snapshot 1 1 0 -2 0 0)"
stats "$work/stats" 100 90 10 5 3 0
for bad in '/^hits /d' 's/^hits .*/hits/' 's/^hits .*/hits /' 's/^outstanding .*/outstanding 5x/' \
	's/^frees_zeroed .*/frees_zeroed 03/' '$a zero_check_failures 0'; do
	sed "$bad" "$work/stats" >"$work/bad"
	got=$(POOL_STATS=$work/bad pool_snapshot 2>"$err")
	expect "pool_snapshot fails on stats edited with '$bad'" "1 ''" "$? '$got'"
	expect "pool_snapshot says why on stats edited with '$bad'" 1 "$(grep -c '^pool_snapshot: ' "$err")"
done
got=$(POOL_STATS=$work/none pool_snapshot 2>/dev/null)
expect "pool_snapshot fails without a stats file" "1 ''" "$? '$got'"

pool_served_check "$before" "$(snapshot 150 140 10 5 20 0)"
expect "pool_served_check passes a clean run" "0 ''" "$? '$pool_problems'"
expect "pool_served_check's detail" \
	"pool: allocs +50, hits +50, fallbacks +0, outstanding 5 -> 5, tables freed all zero +17, zero check failures +0" \
	"$pool_detail"
expect "pool_served_check fails with no hit" "1 ; the pool served no table" \
	"$(served "$before" "$(snapshot 100 90 10 5 3 0)")"
expect "pool_served_check fails with a fallback" "1 ; 1 tables were left to C" \
	"$(served "$before" "$(snapshot 151 140 11 5 20 0)")"
expect "pool_served_check fails with an alloc that was no hit" \
	"1 ; allocs +51 but hits +50: not every request was served by the pool" \
	"$(served "$before" "$(snapshot 151 140 10 5 20 0)")"
expect "pool_served_check fails with outstanding not back" "1 ; outstanding 5 -> 6" \
	"$(served "$before" "$(snapshot 150 140 10 6 20 0)")"
expect "pool_served_check fails with a zero check failure" \
	"1 ; 1 tables freed as all zero were not (zero_check_failures)" \
	"$(served "$before" "$(snapshot 150 140 10 5 20 1)")"
missing="1 ; pool counters missing or not integers (want: $POOL_SNAPSHOT)"
expect "pool_served_check fails with a counter missing after" "$missing" "$(served "$before" "150 140 10 5 20")"
expect "pool_served_check fails with a counter missing before" "$missing" "$(served "100 90 10 5 0" "150 140 10 5 20 0")"
expect "pool_served_check fails with an empty snapshot before" "$missing" "$(served "" "150 140 10 5 20 0")"
expect "pool_served_check fails with no snapshots" "$missing" "$(served "" "")"
expect "pool_served_check fails with a field too many" "$missing" "$(served "$before" "150 140 10 5 20 0 1")"
expect "pool_served_check fails with a field not an integer" "$missing" "$(served "$before" "150 140 10 5 x 0")"

# NR_IOMMU_PAGES, from a vmstat file of ours.
VMSTAT=$work/vmstat
VMSTAT_REFRESH=$work/refresh
printf 'nr_free_pages 1000\nnr_iommu_pages 120\nnr_iommu_pages_x 5\n' >"$VMSTAT"
nr_iommu_pages_check 120
expect "nr_iommu_pages_check passes at the baseline" "0 120 -> 120" "$? $nr_iommu_pages_change"
expect "vmstat folds the per-CPU deltas in first" 1 "$(cat "$VMSTAT_REFRESH")"
nr_iommu_pages_check 118
expect "nr_iommu_pages_check fails when NR_IOMMU_PAGES grew" "1 118 -> 120" "$? $nr_iommu_pages_change"
nr_iommu_pages_check ""
expect "nr_iommu_pages_check fails with an empty baseline" 1 "$?"
printf 'nr_free_pages 1000\n' >"$VMSTAT"
nr_iommu_pages_check ""
expect "nr_iommu_pages_check fails with no counter and an empty baseline" 1 "$?"
printf 'nr_iommu_pages\n' >"$VMSTAT"
nr_iommu_pages_check 120
expect "nr_iommu_pages_check fails with an empty counter" "1 120 -> " "$? $nr_iommu_pages_change"

# Reloads, with insmod and rmmod that log their calls and fail the call named
# in $fake_fail ("insmod 2": the second insmod).
insmod() { fake insmod; }
rmmod() { fake rmmod; }
fake() {
	fake_log="$fake_log $1"
	fake_calls="$fake_calls $1"
	[ "$1 $(echo "$fake_calls" | grep -o "$1" | wc -l)" != "$fake_fail" ]
}
# reloads COUNT FAIL: pool_reloads's status, output and calls.
reloads() {
	fake_log="" fake_calls="" fake_fail=$2
	pool_reloads ko "$1" >"$out"
	echo "$? '$(cat "$out")'$fake_log"
}
POOL_STATS=$work/stats
ZERO_CHECK_LOG=$work/zero-check
stats "$POOL_STATS" 100 90 10 5 3 0
expect "pool_reloads reloads" "0 '' rmmod insmod rmmod insmod rmmod insmod" "$(reloads 3 "")"
expect "pool_reloads unloads with pool_unload" 3 "$(wc -l <"$ZERO_CHECK_LOG")"
expect "pool_reloads stops at a failed load" "1 '# reload 2 failed' rmmod insmod rmmod insmod" \
	"$(reloads 3 "insmod 2")"
expect "pool_reloads stops at a failed unload" "1 '# reload 1 failed' rmmod" "$(reloads 3 "rmmod 1")"
expect "pool_reloads refuses no count" "1 '# pool_reloads: '' is no number of reloads'" "$(reloads "" "")"
expect "pool_reloads refuses a count of 0" "1 '# pool_reloads: '0' is no number of reloads'" "$(reloads 0 "")"
unset -f insmod rmmod

# Refused parameters, with a kernel log and a module directory of ours. The
# stand-in insmod does as $fake_insmod says: "names" refuses with a message
# naming the first parameter given, "other" with one naming zero_check,
# "silent" with none from iommu_pt, "stays" refuses with a message but the
# module is loaded (a load before went unnoticed), "accepts" loads it; rmmod
# unloads it.
POOL_MODULE_DIR=$work/module
dmesg() { cat "$work/dmesg"; }
insmod() {
	case $fake_insmod in
	names | stays)
		echo "[   12.000000] iommu_pt: $2 is out of range" >>"$work/dmesg"
		[ "$fake_insmod" = names ] || mkdir -p "$POOL_MODULE_DIR"
		return 1
		;;
	other)
		echo "[   12.000000] iommu_pt: zero_check=2: use 0 (off) or 1 (on)" >>"$work/dmesg"
		return 1
		;;
	silent)
		echo "[   12.000000] systemd-journald[1]: unrelated" >>"$work/dmesg"
		return 1
		;;
	accepts) mkdir -p "$POOL_MODULE_DIR" ;;
	esac
}
rmmod() { rmdir "$POOL_MODULE_DIR"; }
# refuses MODE ARGS...: pool_refuses_params's status and output, from a log
# whose only message from iommu_pt, an old one, names capacity, and no module
# loaded.
refuses() {
	fake_insmod=$1
	shift
	printf '[    1.000000] Linux version 6.18\n[    5.000000] iommu_pt: capacity=0 is out of range\n' >"$work/dmesg"
	rm -rf "$POOL_MODULE_DIR"
	pool_refuses_params ko "$@" >"$out"
	echo "$? '$(cat "$out")'"
}
expect "pool_refuses_params passes refusals naming the parameter" "0 ''" \
	"$(refuses names capacity=abc low_watermark=-1 "high_watermark=512 capacity=256")"
expect "pool_refuses_params fails a silent refusal" \
	"1 '# insmod capacity=abc was refused without a message naming the parameter:
# [   12.000000] systemd-journald[1]: unrelated'" "$(refuses silent capacity=abc)"
expect "pool_refuses_params fails a refusal naming another parameter" \
	"1 '# insmod capacity=abc was refused without a message naming the parameter:
# [   12.000000] iommu_pt: zero_check=2: use 0 (off) or 1 (on)'" "$(refuses other capacity=abc)"
expect "pool_refuses_params fails an accepted load and unloads it" "1 '# insmod capacity=abc was accepted' no" \
	"$(refuses accepts capacity=abc) $([ -e "$POOL_MODULE_DIR" ] && echo yes || echo no)"
expect "pool_refuses_params fails with the module left loaded" "1 ''" "$(refuses stays capacity=abc)"
unset -f insmod rmmod dmesg

# The map handshake, with a stand-in for iommufd-map: "ok" maps, unmaps and
# tears down at each line read; "dies" fails before mapping.
cat >"$work/map" <<'EOF'
#!/bin/bash
if [ "$1" = dies ]; then
	echo "iommufd-map: map: Cannot allocate memory" >&2
	exit 3
fi
echo mapped
read -r _ || exit 1
echo unmapped
read -r _ || exit 1
exit 0
EOF
chmod +x "$work/map"
map_start "$work/map" ok 512
expect "map_start reads the first state" mapped "$map_state"
map_next
expect "map_next reads the next state" unmapped "$map_state"
map_end
expect "map_end gets the exit status" 0 "$map_status"
map_start "$work/map" dies 512
expect "map_start reads an error as the state" "iommufd-map: map: Cannot allocate memory" "$map_state"
# Time for bash to reap the coproc: then it closes the coproc's fds.
sleep 0.2
map_next 2>/dev/null
expect "map_next after the program died gives an empty state" "" "$map_state"
map_end 2>/dev/null
expect "map_end gets the status of a program that died" 3 "$map_status"

# Exact page counts: whole iommu_pt/stats files. pstats FILE [NAME=VALUE...]:
# one with every line the module writes, from a quiet pool whose 216 spare
# pages (30 of them in the CPUs' caches) are what its counters account for
# (refills 256 + frees 60 - hits 100), with NAME set to VALUE (- drops the
# line).
pstats() {
	local f=$1
	shift
	printf '%s\n' "allocs 104" "hits 100" "fallbacks 4" "frees 60" "frees_over_capacity 0" \
		"frees_zeroed 12" "zero_check_failures 0" "zeroed_on_alloc 3" "cache_refills 5" \
		"cache_spills 2" "outstanding 40" "zeroed 16" "zeroed_freed 0" "refills 256" "refills_skipped 0" \
		"quiet_waits 7" "cpu_busy_waits 0" "worker_runs 3" "worker_ns 123456" "shrunk 0" \
		"cpu_dead_moved 0" "cpu_dead_freed 0" "clean 200" "dirty 16" "cpu_clean 20" \
		"cpu_dirty 10" "bypass 0" |
		awk -v set="$*" 'BEGIN { n = split(set, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] } }
			$1 in v { if (v[$1] != "-") print $1, v[$1]; next } { print }' >"$f"
}
# check CHECK ARGS...: a check's status and problems.
check() {
	"$@" >/dev/null
	echo "$? $pool_problems"
}
b=$work/before
a=$work/after
pstats "$b"

# pool_wait_quiet, with short intervals, and readings of ours that change:
# the Nth reading says "allocs N", up to $settle.
# quiet SECONDS: pool_wait_quiet's status and the milliseconds it took.
quiet() {
	local t
	t=$(date +%s%N)
	POOL_QUIET_MS=100 POOL_QUIET_READS=3 pool_wait_quiet "$1"
	echo "$? $((($(date +%s%N) - t) / 1000000))"
}
read -r rc ms < <(POOL_STATS=$b quiet 5)
expect "pool_wait_quiet takes a pool whose stats stay the same" 0 "$rc"
expect "pool_wait_quiet reads them POOL_QUIET_READS times first" 1 $((ms >= 200))
pool_stats_read() {
	local n
	n=$(($(cat "$work/reads") + 1))
	echo "$n" >"$work/reads"
	echo "allocs $((n < settle ? n : settle))"
}
echo 0 >"$work/reads"
settle=4
read -r rc ms < <(quiet 5)
expect "pool_wait_quiet waits until the stats stop changing" "0 6" "$rc $(cat "$work/reads")"
echo 0 >"$work/reads"
settle=1000
read -r rc ms < <(quiet 1)
expect "pool_wait_quiet fails for stats that keep changing" 1 "$rc"
expect "pool_wait_quiet gives up after its seconds" 1 $((ms / 900))
pool_stats_read() { cat "$POOL_STATS" 2>/dev/null; }
read -r rc ms < <(POOL_STATS=$work/missing quiet 5)
expect "pool_wait_quiet fails at once without a reading" "1 1" "$rc $((ms < 500))"
expect "pool_wait_quiet fails without a number of seconds" 1 "$(POOL_STATS=$b quiet "" | cut -d' ' -f1)"

# pool_stats_save.
POOL_STATS=$b pool_stats_save "$work/saved" 2>"$err"
expect "pool_stats_save copies the stats" "0 ''" "$? '$(cmp "$b" "$work/saved" && cat "$err")'"
for bad in 's/^hits .*/hits x/' 's/^hits .*/hits/' 's/^hits .*/hits 07/' '$a Hits 1'; do
	sed "$bad" "$b" >"$work/bad"
	POOL_STATS=$work/bad pool_stats_save "$work/saved" 2>"$err"
	expect "pool_stats_save fails on stats edited with '$bad', saying why" "1 1" "$? $(grep -c '^pool_stats_save: ' "$err")"
done
POOL_STATS=$work/missing pool_stats_save "$work/saved" 2>"$err"
expect "pool_stats_save fails without a reading, saying why" "1 1" "$? $(grep -c '^pool_stats_save: ' "$err")"

# stats_get.
pool_problems=""
stats_get x "$b" hits clean
expect "stats_get sets PREFIX_NAME" "0 100 200 ''" "$? $x_hits $x_clean '$pool_problems'"
sed '$a hits 1' "$b" >"$work/bad"
pool_problems=""
stats_get x "$work/bad" hits nothere clean
expect "stats_get fails on a repeated or missing line, naming each" \
	"1 0 0 200 '; x: hits '100 1' missing, repeated or not an integer; x: nothere '' missing, repeated or not an integer'" \
	"$? $x_hits $x_nothere $x_clean '$pool_problems'"

# pool_counters_kept: every counter may grow, the levels may fall.
pstats "$a" allocs=200 hits=190 worker_ns=999999 clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 outstanding=-3
expect "pool_counters_kept passes counters that grew and levels that fell" "0 " "$(check pool_counters_kept "$b" "$a")"
pstats "$a" hits=90
expect "pool_counters_kept fails a counter that went backwards (a dead CPU's, lost)" \
	"1 ; hits went backwards: 100 -> 90" "$(check pool_counters_kept "$b" "$a")"
pstats "$a" worker_runs=2 cpu_dead_freed=-
expect "pool_counters_kept fails a counter missing after" \
	"1 ; cpu_dead_freed '0' -> '': not one integer each; worker_runs went backwards: 3 -> 2" \
	"$(check pool_counters_kept "$b" "$a")"
pstats "$work/old" cpu_dead_moved=- cpu_dead_freed=-
expect "pool_counters_kept fails a counter missing before" \
	"1 ; cpu_dead_freed '' -> '0': not one integer each; cpu_dead_moved '' -> '0': not one integer each" \
	"$(check pool_counters_kept "$work/old" "$b")"
expect "pool_counters_kept fails without stats after" "1 ; no stats before or after" \
	"$(check pool_counters_kept "$b" "$work/missing")"
: >"$work/empty"
expect "pool_counters_kept fails with empty stats before" "1 ; no stats before or after" \
	"$(check pool_counters_kept "$work/empty" "$b")"

# pool_cpu_dead_check: CPU 1 held the caches' 30 pages when it went offline.
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=30
pool_cpu_dead_check "$b" "$a"
expect "pool_cpu_dead_check passes a cache moved to the depot" "0 ''" "$? '$pool_problems'"
expect "pool_cpu_dead_check's detail" \
	"pool: spare pages 216 -> 216, in the CPUs' caches 30 -> 0; cpu_dead_moved +30, cpu_dead_freed +0, refills +0, shrunk +0, outstanding 40 -> 40" \
	"$pool_detail"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=10 cpu_dead_freed=20 clean=180
expect "pool_cpu_dead_check passes a cache partly freed, the depot full" "0 " "$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=30 refills=266 clean=210
expect "pool_cpu_dead_check counts the worker's refills meanwhile" "0 " "$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=30 clean=190
expect "pool_cpu_dead_check fails pages lost" \
	"1 ; spare pages not conserved: 216 before, 206 after + 0 freed + 0 shrunk - 0 refilled = 206" \
	"$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=20 clean=190
expect "pool_cpu_dead_check fails pages freed but not counted" \
	"1 ; cpu_dead_moved + cpu_dead_freed +20, but 30 pages left the CPUs' caches; spare pages not conserved: 216 before, 206 after + 0 freed + 0 shrunk - 0 refilled = 206" \
	"$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=29
expect "pool_cpu_dead_check fails a move counted short" \
	"1 ; cpu_dead_moved + cpu_dead_freed +29, but 30 pages left the CPUs' caches" \
	"$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=30 clean=170 cpu_dead_freed=30
expect "pool_cpu_dead_check fails a move counted as a free too" \
	"1 ; cpu_dead_moved + cpu_dead_freed +60, but 30 pages left the CPUs' caches" \
	"$(check pool_cpu_dead_check "$b" "$a")"
expect "pool_cpu_dead_check fails when no page left the caches" \
	"1 ; no page left the CPUs' caches (30 -> 30): the CPU that went offline held none" \
	"$(check pool_cpu_dead_check "$b" "$b")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=30 outstanding=0 hits=60 allocs=64
expect "pool_cpu_dead_check fails the dead CPU's counters lost" \
	"1 ; allocs went backwards: 104 -> 64; hits went backwards: 100 -> 60; outstanding 40 -> 0" \
	"$(check pool_cpu_dead_check "$b" "$a")"
pstats "$a" cpu_clean=0 cpu_dirty=0 cpu_dead_moved=-
expect "pool_cpu_dead_check fails without cpu_dead_moved" \
	"1 ; cpu_dead_moved '0' -> '': not one integer each; after: cpu_dead_moved '' missing, repeated or not an integer; cpu_dead_moved + cpu_dead_freed +0, but 30 pages left the CPUs' caches" \
	"$(check pool_cpu_dead_check "$b" "$a")"

# pool_spare_conserved: from the 216 spare pages of $b.
pstats "$a" hits=110 allocs=114 frees=70
pool_spare_conserved "$b" "$a"
expect "pool_spare_conserved passes pages served and freed back" "0 ''" "$? '$pool_problems'"
expect "pool_spare_conserved's detail" \
	"spare pages 216 + refills 0 + frees 10 - frees_over_capacity 0 - hits 10 - shrunk 0 - cpu_dead_freed 0 - zeroed_freed 0 = 216, 216 after" \
	"$pool_detail"
pstats "$a" refills=288 frees=63 frees_over_capacity=34 hits=101 allocs=105 shrunk=16 cpu_dead_freed=5 clean=185 dirty=10
expect "pool_spare_conserved passes refills, a spill to the page allocator, a shrink and a dead CPU's pages" "0 " \
	"$(check pool_spare_conserved "$b" "$a")"
pstats "$a" zeroed=48 zeroed_freed=3 clean=197
expect "pool_spare_conserved passes zeroed pages the depot had no room for" "0 " \
	"$(check pool_spare_conserved "$b" "$a")"
pstats "$a" zeroed=48 clean=197
expect "pool_spare_conserved fails zeroed pages freed uncounted" \
	"1 ; spare pages not conserved: the counters account for 216, the pool holds 213" \
	"$(check pool_spare_conserved "$b" "$a")"
pstats "$a" clean=199
expect "pool_spare_conserved fails a page lost" \
	"1 ; spare pages not conserved: the counters account for 216, the pool holds 215" \
	"$(check pool_spare_conserved "$b" "$a")"
pstats "$a" shrunk=1
expect "pool_spare_conserved fails a page counted as shrunk and kept" \
	"1 ; spare pages not conserved: the counters account for 215, the pool holds 216" \
	"$(check pool_spare_conserved "$b" "$a")"
pstats "$a" refills=-
expect "pool_spare_conserved fails without refills" \
	"1 ; a: refills '' missing, repeated or not an integer; spare pages not conserved: the counters account for -40, the pool holds 216" \
	"$(check pool_spare_conserved "$b" "$a")"

# pool_shrunk_check: the 216 spare pages, 30 in the CPUs' caches.
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=216
pool_shrunk_check "$b" "$a"
expect "pool_shrunk_check passes every spare page given back" "0 ''" "$? '$pool_problems'"
expect "pool_shrunk_check's detail" \
	"pool: clean 200 -> 0, dirty 16 -> 0 (in the CPUs' caches 30 -> 0), shrunk +216; spare pages 216 + refills 0 + frees 0 - frees_over_capacity 0 - hits 0 - shrunk 216 - cpu_dead_freed 0 - zeroed_freed 0 = 0, 0 after" \
	"$pool_detail"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=226 refills=266 worker_runs=4
expect "pool_shrunk_check passes a refill meanwhile that the shrinker took too" "0 " \
	"$(check pool_shrunk_check "$b" "$a")"
pstats "$a" clean=20 dirty=10 shrunk=186
expect "pool_shrunk_check fails the CPUs' caches left alone" \
	"1 ; spare pages left: clean 20, dirty 10" "$(check pool_shrunk_check "$b" "$a")"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=215
expect "pool_shrunk_check fails shrunk one page short (a page lost)" \
	"1 ; spare pages not conserved: the counters account for 1, the pool holds 0" \
	"$(check pool_shrunk_check "$b" "$a")"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=217
expect "pool_shrunk_check fails shrunk one page over" \
	"1 ; spare pages not conserved: the counters account for -1, the pool holds 0" \
	"$(check pool_shrunk_check "$b" "$a")"
pstats "$a" clean=256 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=216 refills=512 worker_runs=4
expect "pool_shrunk_check fails an idle pool refilled after" "1 ; spare pages left: clean 256, dirty 0" \
	"$(check pool_shrunk_check "$b" "$a")"
pstats "$work/nocache" cpu_clean=0 cpu_dirty=0
expect "pool_shrunk_check fails when the CPUs' caches held nothing before" \
	"1 ; the CPUs' caches held no page before: their drain is not shown" \
	"$(check pool_shrunk_check "$work/nocache" "$(pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=216; echo "$a")")"
pstats "$work/none" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0
expect "pool_shrunk_check fails with no spare page before" \
	"1 ; no spare page before: nothing to give back; the CPUs' caches held no page before: their drain is not shown" \
	"$(check pool_shrunk_check "$work/none" "$a")"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=216 frees=50
expect "pool_shrunk_check fails a counter gone backwards" \
	"1 ; frees went backwards: 60 -> 50; spare pages not conserved: the counters account for -10, the pool holds 0" \
	"$(check pool_shrunk_check "$b" "$a")"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0 shrunk=-
expect "pool_shrunk_check fails without shrunk" \
	"1 ; shrunk '0' -> '': not one integer each; a: shrunk '' missing, repeated or not an integer; spare pages not conserved: the counters account for 216, the pool holds 0; after: shrunk '' missing, repeated or not an integer" \
	"$(check pool_shrunk_check "$b" "$a")"

# pool_spare_balance.
pool_spare_balance "$b"
expect "pool_spare_balance passes spare pages the counters account for" "0 ''" "$? '$pool_problems'"
expect "pool_spare_balance's detail" \
	"pool: 216 spare pages; refills 256 + frees 60 - frees_over_capacity 0 - hits 100 - shrunk 0 - cpu_dead_freed 0 - zeroed_freed 0 = 216" \
	"$pool_detail"
pstats "$a" clean=180 cpu_dead_freed=20 shrunk=16 dirty=0 frees_over_capacity=0
expect "pool_spare_balance counts the pages shrunk and freed from dead CPUs" "0 " \
	"$(check pool_spare_balance "$a")"
pstats "$a" clean=201
expect "pool_spare_balance fails a page too many" "1 ; 217 spare pages, but the counters account for 216" \
	"$(check pool_spare_balance "$a")"
pstats "$a" hits=130 allocs=134
expect "pool_spare_balance fails a dead CPU's counters counted twice" \
	"1 ; 216 spare pages, but the counters account for 186" "$(check pool_spare_balance "$a")"
pstats "$a" frees_over_capacity=5
expect "pool_spare_balance fails frees kept and counted as freed" \
	"1 ; 216 spare pages, but the counters account for 211" "$(check pool_spare_balance "$a")"
pstats "$a" cpu_dead_freed=-
expect "pool_spare_balance fails without cpu_dead_freed" \
	"1 ; s: cpu_dead_freed '' missing, repeated or not an integer" "$(check pool_spare_balance "$a")"

# pool_tables_check: $b has outstanding 40 and fallbacks 4; a map of 200
# mappings needs 203 tables.
pstats "$a" hits=303 allocs=307 outstanding=243
pool_tables_check "$b" "$a" 300 503
expect "pool_tables_check passes every table from the pool" "0 ''" "$? '$pool_problems'"
expect "pool_tables_check's detail" \
	"tables: nr_iommu_pages 300 -> 503 (+203), outstanding 40 -> 243 (+203), fallbacks +0" "$pool_detail"
pstats "$a" hits=300 allocs=307 fallbacks=7 outstanding=240
expect "pool_tables_check fails tables left to C, even when they add up" \
	"1 ; 3 requests fell back to C: the tables cannot be counted exactly; nr_iommu_pages +203, but the pool handed out 200 tables more than it got back" \
	"$(check pool_tables_check "$b" "$a" 300 503)"
pstats "$a" hits=303 allocs=307 frees=61 outstanding=242
expect "pool_tables_check passes a table freed to the pool meanwhile" "0 " \
	"$(check pool_tables_check "$b" "$a" 300 502)"
pstats "$a" hits=303 allocs=307 outstanding=243
expect "pool_tables_check fails a table the pool counts out and the kernel does not" \
	"1 ; nr_iommu_pages +202, but the pool handed out 203 tables more than it got back" \
	"$(check pool_tables_check "$b" "$a" 300 502)"
expect "pool_tables_check fails a table the kernel counts and the pool does not" \
	"1 ; nr_iommu_pages +204, but the pool handed out 203 tables more than it got back" \
	"$(check pool_tables_check "$b" "$a" 300 504)"
expect "pool_tables_check fails an empty reading" "1 ; nr_iommu_pages '300' -> '': not integers" \
	"$(check pool_tables_check "$b" "$a" 300 "")"
pstats "$a" outstanding=-
expect "pool_tables_check fails without outstanding" \
	"1 ; a: outstanding '' missing, repeated or not an integer; nr_iommu_pages +203, but the pool handed out -40 tables more than it got back" \
	"$(check pool_tables_check "$b" "$a" 300 503)"

# pool_spare_pfns_check: 3 spare pages.
pstats "$a" clean=2 dirty=1
printf '0x1a2b\n0x100\n0x7ffff\n' >"$work/pfns"
pool_spare_pfns_check "$work/pfns" "$a"
expect "pool_spare_pfns_check passes a list of every spare page" "0 ''" "$? '$pool_problems'"
expect "pool_spare_pfns_check's detail" "spare_pfns: 3 pages listed, stats count 3 (clean 2 + dirty 1)" "$pool_detail"
for bad in '$d' '$a 0x80000' '$s/.*/0x100/' '$s/.*/0x0/' '$s/.*/0x/' '$s/.*/524287/' '$s/.*/0x7FFFF/'; do
	sed "$bad" "$work/pfns" >"$work/bad"
	expect "pool_spare_pfns_check fails a list edited with '$bad'" 1 "$(check pool_spare_pfns_check "$work/bad" "$a" | cut -d' ' -f1)"
done
sed '$s/.*/0x100/' "$work/pfns" >"$work/bad"
expect "pool_spare_pfns_check names a page listed twice" "1 ; 1 frame numbers listed twice" \
	"$(check pool_spare_pfns_check "$work/bad" "$a")"
sed '$d' "$work/pfns" >"$work/bad"
expect "pool_spare_pfns_check names a page missing" "1 ; spare_pfns lists 2 pages, stats count 3" \
	"$(check pool_spare_pfns_check "$work/bad" "$a")"
sed '$s/.*/0x0/' "$work/pfns" >"$work/bad"
expect "pool_spare_pfns_check names a frame 0" "1 ; 1 lines of spare_pfns are no frame number" \
	"$(check pool_spare_pfns_check "$work/bad" "$a")"
expect "pool_spare_pfns_check fails without a list" "1 ; no spare_pfns" \
	"$(check pool_spare_pfns_check "$work/missing" "$a")"
pstats "$a" clean=0 dirty=0 cpu_clean=0 cpu_dirty=0
expect "pool_spare_pfns_check passes an empty list of an empty pool" "0 " \
	"$(check pool_spare_pfns_check "$work/empty" "$a")"
expect "pool_spare_pfns_check fails the list of an empty pool with a page" "1 ; spare_pfns lists 3 pages, stats count 0" \
	"$(check pool_spare_pfns_check "$work/pfns" "$a")"

# Kernel taint, from a tainted file of ours, O already set at the start.
# taint FLAGS: taint_result's output (result 1: each runs in a subshell), the
# flags FLAGS now.
TAINTED=$work/tainted
taint() {
	echo "$1" >"$TAINTED"
	taint_result t
}
echo 4096 >"$TAINTED"
taint_start
expect "taint_result passes unchanged flags" "# t: kernel taint 4096 -> 4096
ok 1 t" "$(taint 4096)"
expect "taint_result passes the flags loading iommu_pt sets" "# t: kernel taint 4096 -> 274432, flags changed: E (bit 13) N (bit 18)
ok 1 t" "$(taint $((4096 | 8192 | 262144)))"
expect "taint_result fails a warning, naming its flag" "# t: kernel taint 4096 -> 4608, flags changed: W (bit 9)
not ok 1 t" "$(taint $((4096 | 512)))"
expect "taint_result fails an Oops and a flag it has no letter for" "# t: kernel taint 4096 -> 1052800, flags changed: D (bit 7) ? (bit 20)
not ok 1 t" "$(taint $((4096 | 128 | 1048576)))"
expect "taint_result fails a change it cannot read" "not ok 1 t" "$(taint "" | tail -n 1)"
rm "$TAINTED"
taint_start
echo 4096 >"$TAINTED"
expect "taint_result fails without a reading at the start" "not ok 1 t" "$(taint_result t | tail -n 1)"

# scripts/test.sh's stage list. stages LIST: its exit status and which check
# stopped it. IOMMU_PT_SLOW=stop makes it die at the check after the stage
# list's, before it builds or boots: a test.sh without the stage check stops
# there too.
stages() {
	local msg rc
	msg=$(IOMMU_PT_SLOW=stop "$(dirname "$0")/test.sh" --skip-build --skip-style --stages "$1" 2>&1)
	rc=$?
	case "$msg" in
	*"has an empty or malformed stage name"*) echo "$rc refused" ;;
	*"IOMMU_PT_SLOW is a whole factor"*) echo "$rc taken" ;;
	*) echo "$rc '$msg'" ;;
	esac
}
for bad in ',' 'kunit,,vfio' 'kunit,' ' '; do
	expect "test.sh refuses --stages '$bad'" "1 refused" "$(stages "$bad")"
done
expect "test.sh takes a stage named twice" "1 taken" "$(stages kunit,vfio,kunit)"

[ "$failed" -eq 0 ] && echo "guest library self-test: every expectation met"
exit "$failed"
