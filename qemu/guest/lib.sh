# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # its functions set variables for their callers
# Helpers the guest scripts share. Source it, do not run it.

# The emulated 82576 NIC (QEMU's igb) that the VFIO tests use.
IGB_ID=0x8086:0x10c9
POOL_STATS=/sys/kernel/debug/iommu_pt/stats
# What the kernel log may not contain (warnings, oopses, KASAN, UBSAN,
# kmemleak, lockdep and might_sleep reports, hung tasks, RCU stalls, lockups):
# the extended regular expressions of scripts/kernel-report.ere, which
# scripts/ktap.py uses too. grep -E -f "$KERNEL_REPORT_FILE".
KERNEL_REPORT_FILE=$(dirname "${BASH_SOURCE[0]}")/../../scripts/kernel-report.ere
[ -s "$KERNEL_REPORT_FILE" ] || { echo "lib.sh: no $KERNEL_REPORT_FILE" >&2; exit 1; }

# Prints the PCI address of the igb, or nothing.
igb_bdf() {
	local d
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor"):$(cat "$d/device")" = "$IGB_ID" ]; then
			basename "$d"
			return
		fi
	done
}

# bind_vfio_pci BDF: binds the device to vfio-pci unless it already is.
bind_vfio_pci() {
	local dev=/sys/bus/pci/devices/$1
	[ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" = vfio-pci ] && return 0
	[ -e "$dev/driver" ] && echo "$1" >"$dev/driver/unbind"
	echo vfio-pci >"$dev/driver_override"
	echo "$1" >/sys/bus/pci/drivers/vfio-pci/bind 2>/dev/null
	[ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" = vfio-pci ]
}

# vfio_cdev BDF: the device's VFIO cdev, /dev/vfio/devices/vfioN.
vfio_cdev() {
	echo "/dev/vfio/devices/$(ls "/sys/bus/pci/devices/$1/vfio-dev" 2>/dev/null | head -n 1)"
}

# pool_stat NAME: one counter of the iommu_pt module.
pool_stat() { awk -v k="$1" '$1 == k { print $2 }' "$POOL_STATS"; }

# integers VALUE...: succeeds if every VALUE is an integer (digits, an
# optional minus, no leading zero), so that an empty or missing reading is
# never compared as a number.
integers() {
	local v
	[ "$#" -gt 0 ] || return 1
	for v in "$@"; do
		[[ "$v" =~ ^-?(0|[1-9][0-9]*)$ ]] || return 1
	done
}

# pool_snapshot: the pool's counters that pool_served_check compares, on one
# line, in the order of POOL_SNAPSHOT. Fails, printing nothing and saying why
# on stderr, if one is missing, empty or not an integer.
POOL_SNAPSHOT="allocs hits fallbacks outstanding frees_zeroed zero_check_failures"
pool_snapshot() {
	local k v line=""
	for k in $POOL_SNAPSHOT; do
		v=$(pool_stat "$k" 2>/dev/null)
		if ! integers "$v"; then
			echo "pool_snapshot: $k in $POOL_STATS: '$v', not an integer" >&2
			return 1
		fi
		line="$line${line:+ }$v"
	done
	echo "$line"
}

# pool_served_check BEFORE AFTER: whether the pool served every table between
# two pool_snapshot lines: hits grew (at least one table served), every
# request was a hit (allocs and hits grew alike, fallbacks did not), every
# table came back (outstanding as before) and no table freed as all zero was
# not (zero_check_failures as before). Not from a $(...) subshell: sets
# pool_detail ("pool: allocs +N, ...") and pool_problems, a list of
# "; problem" items for checks_result, empty if none; fails if there are
# any. A snapshot missing, with a field missing or not an integer fails.
pool_served_check() {
	local a0 h0 f0 o0 z0 zf0 rest0 a1 h1 f1 o1 z1 zf1 rest1
	pool_detail=""
	pool_problems=""
	read -r a0 h0 f0 o0 z0 zf0 rest0 <<<"$1"
	read -r a1 h1 f1 o1 z1 zf1 rest1 <<<"$2"
	if [ -n "$rest0$rest1" ] ||
		! integers "$a0" "$h0" "$f0" "$o0" "$z0" "$zf0" "$a1" "$h1" "$f1" "$o1" "$z1" "$zf1"; then
		pool_detail="pool: counters before '$1', after '$2'"
		pool_problems="; pool counters missing or not integers (want: $POOL_SNAPSHOT)"
		return 1
	fi
	pool_detail="pool: allocs +$((a1 - a0)), hits +$((h1 - h0)), fallbacks +$((f1 - f0)), outstanding $o0 -> $o1, tables freed all zero +$((z1 - z0)), zero check failures +$((zf1 - zf0))"
	[ $((h1 - h0)) -ge 1 ] || pool_problems="$pool_problems; the pool served no table"
	if [ "$f1" -ne "$f0" ]; then
		pool_problems="$pool_problems; $((f1 - f0)) tables were left to C"
	elif [ $((a1 - a0)) -ne $((h1 - h0)) ]; then
		pool_problems="$pool_problems; allocs +$((a1 - a0)) but hits +$((h1 - h0)): not every request was served by the pool"
	fi
	[ "$o1" -eq "$o0" ] || pool_problems="$pool_problems; outstanding $o0 -> $o1"
	[ "$zf1" -eq "$zf0" ] ||
		pool_problems="$pool_problems; $((zf1 - zf0)) tables freed as all zero were not (zero_check_failures)"
	[ -z "$pool_problems" ]
}

# pool_load KO [PARAM=VALUE...]: loads iommu_pt with zero_check=1, so that
# every table generic_pt frees as all zero is checked before the pool reuses
# it (a failure counts in zero_check_failures).
pool_load() {
	local ko=$1
	shift
	insmod "$ko" zero_check=1 "$@"
}

# pool_refuses_params KO ARGS...: each ARGS, a string of PARAM=VALUE words,
# must make insmod KO fail, with a kernel message from iommu_pt naming one of
# its parameters (a refusal for any other reason proves nothing); what went
# wrong is printed as comments. Fails if one was accepted or refused
# silently, or if the module is left loaded (POOL_MODULE_DIR exists).
# POOL_MODULE_DIR is set here, not taken from the environment; the host's
# self-test of this library (scripts/test-guest-lib.sh) points it at a
# directory of its own.
POOL_MODULE_DIR=/sys/module/iommu_pt
pool_refuses_params() {
	local ko=$1 args names seen bad=0
	shift
	for args in "$@"; do
		names=$(echo "$args" | grep -o '[a-z_]*=' | tr -d '=' | paste -sd '|')
		# Only the messages of this insmod: the log is never cleared.
		seen=$(dmesg | wc -l)
		# shellcheck disable=SC2086
		if insmod "$ko" $args 2>/dev/null; then
			echo "# insmod $args was accepted"
			rmmod iommu_pt
			bad=1
		elif ! dmesg | tail -n +$((seen + 1)) | grep -Eq "iommu_pt: .*($names)"; then
			echo "# insmod $args was refused without a message naming the parameter:"
			dmesg | tail -n +$((seen + 1)) | sed 's/^/# /'
			bad=1
		fi
	done
	[ "$bad" -eq 0 ] && [ ! -e "$POOL_MODULE_DIR" ]
}

# pool_wait_clean PAGES SECONDS: waits, up to SECONDS, until the loaded pool
# holds at least PAGES clean spare pages (its worker refills after a load, or
# once requests pause); fails if it never did, or if there is no reading.
pool_wait_clean() {
	local i
	for i in $(seq $(($2 * 4))); do
		[ "$(pool_stat clean)" -ge "$1" ] 2>/dev/null && return 0
		sleep 0.25
	done
	return 1
}

# pool_wait_quiet SECONDS: waits, up to SECONDS, until iommu_pt/stats reads
# the same POOL_QUIET_READS times in a row, POOL_QUIET_MS apart (1 s by
# default): no request, free, worker run or wait, shrink or CPU hotplug
# callback changed a line in that time, so the counters and the spare pages
# can be compared exactly. Fails if that never happened, or at once if there
# is no reading. POOL_QUIET_READS and POOL_QUIET_MS are set here, not taken
# from the environment; the host's self-test (scripts/test-guest-lib.sh)
# shortens them, and gives pool_stats_read readings of its own.
POOL_QUIET_READS=5
POOL_QUIET_MS=250
pool_stats_read() { cat "$POOL_STATS" 2>/dev/null; }
pool_wait_quiet() {
	local last="" now same=0 i tries pause
	integers "$1" || return 1
	pause=$(printf '%d.%03d' $((POOL_QUIET_MS / 1000)) $((POOL_QUIET_MS % 1000)))
	tries=$(($1 * 1000 / POOL_QUIET_MS))
	for ((i = 0; i <= tries; i++)); do
		now=$(pool_stats_read)
		[ -n "$now" ] || return 1
		if [ "$now" = "$last" ]; then
			same=$((same + 1))
		else
			same=1
			last=$now
		fi
		[ "$same" -lt "$POOL_QUIET_READS" ] || return 0
		sleep "$pause"
	done
	return 1
}

# pool_stats_save FILE: copies iommu_pt/stats to FILE, for the checks below,
# which compare the pool at two moments. Fails, saying why on stderr, if there
# is no reading or a line is not "name integer".
pool_stats_save() {
	local bad
	if ! cat "$POOL_STATS" >"$1" 2>/dev/null || [ ! -s "$1" ]; then
		echo "pool_stats_save: no reading of $POOL_STATS" >&2
		return 1
	fi
	bad=$(grep -vE '^[a-z_]+ -?(0|[1-9][0-9]*)$' "$1" | head -n 1)
	if [ -n "$bad" ]; then
		echo "pool_stats_save: '$bad' in $POOL_STATS is not 'name integer'" >&2
		return 1
	fi
}

# stats_get PREFIX FILE NAME...: sets PREFIX_NAME to NAME's value in FILE, a
# saved stats file, for each NAME (to 0 if it has none); for one missing,
# repeated or not an integer, adds "; PREFIX: NAME ..." to pool_problems and
# fails. The caller declares the PREFIX_NAME variables local.
stats_get() {
	local prefix=$1 file=$2 name v rc=0 values
	shift 2
	# One awk for every NAME: each one's values, a space between repeats.
	values=$(awk -v names="$*" '
		{ v[$1] = c[$1]++ ? v[$1] " " $2 : $2 }
		END { n = split(names, k, " "); for (i = 1; i <= n; i++) printf "%s|", v[k[i]] }' "$file" 2>/dev/null)
	for name in "$@"; do
		v=${values%%|*}
		values=${values#*|}
		if integers "$v"; then
			printf -v "${prefix}_$name" '%s' "$v"
		else
			printf -v "${prefix}_$name" '%s' 0
			pool_problems="$pool_problems; $prefix: $name '$v' missing, repeated or not an integer"
			rc=1
		fi
	done
	return "$rc"
}

# The lines of iommu_pt/stats that are levels, which go up and down. Every
# other line is a counter, which never goes backwards while the module stays
# loaded, CPUs going offline and online included.
POOL_LEVELS="outstanding clean dirty cpu_clean cpu_dirty bypass"

# pool_counters_kept BEFORE AFTER: whether no counter went backwards between
# two saved stats files (pool_stats_save) of one load: every line of either
# that is not in POOL_LEVELS is in both, an integer, and no smaller after.
# Not from a $(...) subshell: sets pool_detail and pool_problems, a list of
# "; problem" items, empty if none; fails if there are any. An empty or
# missing file fails.
pool_counters_kept() {
	local name b a n=0
	pool_problems=""
	pool_detail="counters: none compared"
	if [ ! -s "$1" ] || [ ! -s "$2" ]; then
		pool_problems="; no stats before or after"
		return 1
	fi
	# One line per counter of either file: "name|before|after", empty where
	# a file lacks it, a space between repeats.
	while IFS='|' read -r name b a; do
		n=$((n + 1))
		if ! integers "$b" "$a"; then
			pool_problems="$pool_problems; $name '$b' -> '$a': not one integer each"
		elif [ "$a" -lt "$b" ]; then
			pool_problems="$pool_problems; $name went backwards: $b -> $a"
		fi
	done < <(awk -v levels=" $POOL_LEVELS " '
		FNR == 1 { f++ }
		index(levels, " " $1 " ") { next }
		f == 1 { b[$1] = nb[$1]++ ? b[$1] " " $2 : $2 }
		f == 2 { a[$1] = na[$1]++ ? a[$1] " " $2 : $2 }
		{ names[$1] }
		END { for (k in names) print k "|" b[k] "|" a[k] }' "$1" "$2" | sort)
	pool_detail="counters: $n compared"
	[ -z "$pool_problems" ]
}

# pool_cpu_dead_check BEFORE AFTER: whether a CPU going offline between two
# saved stats files, the pool otherwise idle, kept every count exact: no
# counter went backwards (pool_counters_kept: the dead CPU's counters were
# folded in, not lost), outstanding is unchanged, pages left the CPUs'
# caches (the dead CPU held some, or nothing was shown), and each page that
# left them was moved into a depot (cpu_dead_moved) or freed to the page
# allocator (cpu_dead_freed), so that the spare pages after, plus those freed,
# are those before (the worker's refills and the shrinker's pages, if any,
# accounted for). Not from a $(...) subshell: sets pool_detail and
# pool_problems (as pool_served_check); fails if there are problems.
POOL_CPU_DEAD_STATS="clean dirty cpu_clean cpu_dirty outstanding cpu_dead_moved cpu_dead_freed refills shrunk"
pool_cpu_dead_check() {
	local problems spare0 spare1 cache0 cache1 moved freed refilled shrunk left
	local before_clean before_dirty before_cpu_clean before_cpu_dirty before_outstanding \
		before_cpu_dead_moved before_cpu_dead_freed before_refills before_shrunk \
		after_clean after_dirty after_cpu_clean after_cpu_dirty after_outstanding \
		after_cpu_dead_moved after_cpu_dead_freed after_refills after_shrunk
	pool_counters_kept "$1" "$2"
	problems=$pool_problems
	pool_problems=""
	# shellcheck disable=SC2086 # a list of names
	stats_get before "$1" $POOL_CPU_DEAD_STATS
	# shellcheck disable=SC2086
	stats_get after "$2" $POOL_CPU_DEAD_STATS
	pool_problems="$problems$pool_problems"
	spare0=$((before_clean + before_dirty)) spare1=$((after_clean + after_dirty))
	cache0=$((before_cpu_clean + before_cpu_dirty)) cache1=$((after_cpu_clean + after_cpu_dirty))
	moved=$((after_cpu_dead_moved - before_cpu_dead_moved))
	freed=$((after_cpu_dead_freed - before_cpu_dead_freed))
	refilled=$((after_refills - before_refills)) shrunk=$((after_shrunk - before_shrunk))
	left=$((cache0 - cache1))
	pool_detail="pool: spare pages $spare0 -> $spare1, in the CPUs' caches $cache0 -> $cache1; cpu_dead_moved +$moved, cpu_dead_freed +$freed, refills +$refilled, shrunk +$shrunk, outstanding $before_outstanding -> $after_outstanding"
	[ "$left" -ge 1 ] ||
		pool_problems="$pool_problems; no page left the CPUs' caches ($cache0 -> $cache1): the CPU that went offline held none"
	[ $((moved + freed)) -eq "$left" ] ||
		pool_problems="$pool_problems; cpu_dead_moved + cpu_dead_freed +$((moved + freed)), but $left pages left the CPUs' caches"
	[ $((spare1 + freed + shrunk - refilled)) -eq "$spare0" ] ||
		pool_problems="$pool_problems; spare pages not conserved: $spare0 before, $spare1 after + $freed freed + $shrunk shrunk - $refilled refilled = $((spare1 + freed + shrunk - refilled))"
	[ "$after_outstanding" -eq "$before_outstanding" ] ||
		pool_problems="$pool_problems; outstanding $before_outstanding -> $after_outstanding"
	[ -z "$pool_problems" ]
}

# pool_spare_conserved BEFORE AFTER: whether the spare pages (clean + dirty,
# the CPUs' caches included) went from BEFORE to AFTER, two saved stats files
# of one load, exactly as the counters say. Every way a spare page comes or
# goes is counted (iommu-pt/):
#  + refills: pages the worker allocated and kept (refill.rs, fill: the pages
#    file_clean kept; those it had no room for are freed uncounted);
#  + frees - frees_over_capacity: each table taken back is one spare page
#    more (pool.rs, free: frees += 1); the pages that free sent to the page
#    allocator, the table itself or a batch spilled from a full cache to a
#    full depot, are counted in frees_over_capacity (+= spill.len());
#  - hits: each request served takes one (pool.rs, alloc);
#  - shrunk: the pages the shrinker took out of a depot or a CPU's cache and
#    dropped (shrinker.rs, scan: freed, drain_cpu_caches' count);
#  - cpu_dead_freed: a dead CPU's pages that its depot had no room for
#    (pool.rs, cpu_dead);
#  - zeroed_freed: dirty pages the worker zeroed outside the depot's lock
#    that the depot, filled by frees meanwhile, had no room for (refill.rs,
#    zero_dirty).
# Zeroing (dirty to clean), a cache taking a batch from its depot or spilling
# one into it, and a dead CPU's pages moved into a depot (cpu_dead_moved)
# move pages without changing their number. So, whatever ran in between:
#   spare(AFTER) = spare(BEFORE) + refills + frees - frees_over_capacity
#                  - hits - shrunk - cpu_dead_freed - zeroed_freed
#                  (each counter's growth)
# pool_spare_balance is the same law counted from the load. One way to keep
# it while losing pages: a shrinker that counts pages in shrunk and takes them
# out of the pool but never frees them: the counters cannot tell that from a
# shrink, and free memory is too noisy to count it exactly. Not from a $(...)
# subshell: sets pool_detail and pool_problems; fails if there are problems.
POOL_CONSERVED_STATS="clean dirty refills frees frees_over_capacity hits shrunk cpu_dead_freed zeroed_freed"
pool_spare_conserved() {
	local spare0 spare1 kept
	local b_clean b_dirty b_refills b_frees b_frees_over_capacity b_hits b_shrunk b_cpu_dead_freed \
		b_zeroed_freed a_clean a_dirty a_refills a_frees a_frees_over_capacity a_hits a_shrunk \
		a_cpu_dead_freed a_zeroed_freed
	local d_refills d_frees d_frees_over_capacity d_hits d_shrunk d_cpu_dead_freed d_zeroed_freed
	pool_problems=""
	# shellcheck disable=SC2086 # a list of names
	stats_get b "$1" $POOL_CONSERVED_STATS
	# shellcheck disable=SC2086
	stats_get a "$2" $POOL_CONSERVED_STATS
	d_refills=$((a_refills - b_refills)) d_frees=$((a_frees - b_frees))
	d_frees_over_capacity=$((a_frees_over_capacity - b_frees_over_capacity))
	d_hits=$((a_hits - b_hits)) d_shrunk=$((a_shrunk - b_shrunk))
	d_cpu_dead_freed=$((a_cpu_dead_freed - b_cpu_dead_freed))
	d_zeroed_freed=$((a_zeroed_freed - b_zeroed_freed))
	spare0=$((b_clean + b_dirty)) spare1=$((a_clean + a_dirty))
	kept=$((spare0 + d_refills + d_frees - d_frees_over_capacity - d_hits - d_shrunk - d_cpu_dead_freed - d_zeroed_freed))
	pool_detail="spare pages $spare0 + refills $d_refills + frees $d_frees - frees_over_capacity $d_frees_over_capacity - hits $d_hits - shrunk $d_shrunk - cpu_dead_freed $d_cpu_dead_freed - zeroed_freed $d_zeroed_freed = $kept, $spare1 after"
	[ "$spare1" -eq "$kept" ] ||
		pool_problems="$pool_problems; spare pages not conserved: the counters account for $kept, the pool holds $spare1"
	[ -z "$pool_problems" ]
}

# pool_shrunk_check BEFORE AFTER: whether the shrinker gave every spare page
# back between two saved stats files, both of a quiet pool (drop_caches=2 in
# between: drop_slab, mm/vmscan.c, asks each shrinker at priority 0 to scan
# everything it counts, until a round frees almost nothing): there were spare
# pages, some of them in the CPUs' caches (which the shrinker drains once the
# depot is empty: shrinker.rs); after, clean and dirty are both 0, the floor:
# the shrinker counts every spare page (count: the depot's and the caches'
# hints) and takes them all, and nothing kicks the worker to refill an idle
# pool; the spare pages went exactly where the counters say
# (pool_spare_conserved: with nothing else moving, shrunk grew by the spare
# pages there were); no counter went backwards. Not from a $(...) subshell:
# sets pool_detail and pool_problems; fails if there are problems.
pool_shrunk_check() {
	local problems spare0 cache0 conserved
	local before_clean before_dirty before_cpu_clean before_cpu_dirty before_shrunk \
		after_clean after_dirty after_cpu_clean after_cpu_dirty after_shrunk
	pool_counters_kept "$1" "$2"
	problems=$pool_problems
	pool_spare_conserved "$1" "$2"
	problems="$problems$pool_problems"
	conserved=$pool_detail
	pool_problems=""
	stats_get before "$1" clean dirty cpu_clean cpu_dirty shrunk
	stats_get after "$2" clean dirty cpu_clean cpu_dirty shrunk
	pool_problems="$problems$pool_problems"
	spare0=$((before_clean + before_dirty)) cache0=$((before_cpu_clean + before_cpu_dirty))
	pool_detail="pool: clean $before_clean -> $after_clean, dirty $before_dirty -> $after_dirty (in the CPUs' caches $cache0 -> $((after_cpu_clean + after_cpu_dirty))), shrunk +$((after_shrunk - before_shrunk)); $conserved"
	[ "$spare0" -ge 1 ] || pool_problems="$pool_problems; no spare page before: nothing to give back"
	[ "$cache0" -ge 1 ] ||
		pool_problems="$pool_problems; the CPUs' caches held no page before: their drain is not shown"
	if [ "$after_clean" -ne 0 ] || [ "$after_dirty" -ne 0 ]; then
		pool_problems="$pool_problems; spare pages left: clean $after_clean, dirty $after_dirty"
	fi
	[ -z "$pool_problems" ]
}

# pool_spare_balance STATS: whether the spare pages in a saved stats file
# (clean + dirty) are exactly those its counters account for since the load:
# the worker's refills, plus the tables freed to the pool (frees, less
# frees_over_capacity), less the tables it served (hits), the pages the
# shrinker gave back (shrunk), those of dead CPUs' caches freed
# (cpu_dead_freed) and the zeroed pages the worker found no room for
# (zeroed_freed). A counter lost or counted twice (a dead CPU's counters
# folded in and kept on its coming back, say) breaks it. Meant for a quiet
# pool (pool_wait_quiet). Not from a $(...) subshell: sets pool_detail and
# pool_problems; fails if there are problems.
POOL_BALANCE_STATS="clean dirty refills frees frees_over_capacity hits shrunk cpu_dead_freed zeroed_freed"
pool_spare_balance() {
	local spare kept
	local s_clean s_dirty s_refills s_frees s_frees_over_capacity s_hits s_shrunk s_cpu_dead_freed \
		s_zeroed_freed
	pool_problems=""
	# shellcheck disable=SC2086 # a list of names
	stats_get s "$1" $POOL_BALANCE_STATS
	spare=$((s_clean + s_dirty))
	kept=$((s_refills + s_frees - s_frees_over_capacity - s_hits - s_shrunk - s_cpu_dead_freed - s_zeroed_freed))
	pool_detail="pool: $spare spare pages; refills $s_refills + frees $s_frees - frees_over_capacity $s_frees_over_capacity - hits $s_hits - shrunk $s_shrunk - cpu_dead_freed $s_cpu_dead_freed - zeroed_freed $s_zeroed_freed = $kept"
	[ "$spare" -eq "$kept" ] ||
		pool_problems="$pool_problems; $spare spare pages, but the counters account for $kept"
	[ -z "$pool_problems" ]
}

# pool_tables_check BEFORE AFTER NR0 NR1: whether the tables that live
# domains gained between two saved stats files of one load are exactly those
# the pool handed out, with the pool serving every request meanwhile. The
# kernel counts each table in NR_IOMMU_PAGES once, whoever gave it; the
# pool's tables out are outstanding (hits - frees, stats.rs), and a table
# freed to the pool lowers both. So while no other table is freed (one of C's
# or of an earlier load, which go to the page allocator: as in a map into the
# harness's own domain, nothing torn down) and the pool served every request
# (fallbacks +0), NR_IOMMU_PAGES grows from NR0 to NR1 by exactly the growth
# of outstanding. A fallback is a failure here, not a table to add: after one,
# C serves the rest of the tick without asking the pool (iommu-pages.c, patch
# "Leave a provider that ran dry alone until the next tick"), and those
# tables are counted nowhere in the pool. A table counted by the kernel and
# not by the pool, or the reverse, breaks it. Not from a $(...) subshell:
# sets pool_detail and pool_problems; fails if there are problems.
pool_tables_check() {
	local grown out fb
	local b_outstanding b_fallbacks a_outstanding a_fallbacks
	pool_problems=""
	stats_get b "$1" outstanding fallbacks
	stats_get a "$2" outstanding fallbacks
	if ! integers "$3" "$4"; then
		pool_detail="tables: nr_iommu_pages '$3' -> '$4'"
		pool_problems="$pool_problems; nr_iommu_pages '$3' -> '$4': not integers"
		return 1
	fi
	grown=$(($4 - $3)) out=$((a_outstanding - b_outstanding)) fb=$((a_fallbacks - b_fallbacks))
	pool_detail="tables: nr_iommu_pages $3 -> $4 (+$grown), outstanding $b_outstanding -> $a_outstanding (+$out), fallbacks +$fb"
	[ "$fb" -eq 0 ] ||
		pool_problems="$pool_problems; $fb requests fell back to C: the tables cannot be counted exactly"
	[ "$grown" -eq "$out" ] ||
		pool_problems="$pool_problems; nr_iommu_pages +$grown, but the pool handed out $out tables more than it got back"
	[ -z "$pool_problems" ]
}

# pool_spare_pfns_check PFNS STATS: whether PFNS, a copy of
# iommu_pt/spare_pfns, lists exactly the spare pages that STATS, a saved stats
# file of the same quiet moment, counts (clean + dirty lines), each a
# nonzero frame number in hex, none twice. Not from a $(...) subshell: sets
# pool_detail and pool_problems; fails if there are problems.
pool_spare_pfns_check() {
	local lines bad dups
	local s_clean s_dirty
	pool_problems=""
	stats_get s "$2" clean dirty
	if [ ! -r "$1" ]; then
		pool_detail="spare_pfns: no reading"
		pool_problems="$pool_problems; no spare_pfns"
		return 1
	fi
	lines=$(wc -l <"$1")
	bad=$(grep -cvE '^0x[0-9a-f]*[1-9a-f][0-9a-f]*$' "$1")
	dups=$(sort "$1" | uniq -d | wc -l)
	pool_detail="spare_pfns: $lines pages listed, stats count $((s_clean + s_dirty)) (clean $s_clean + dirty $s_dirty)"
	[ "$lines" -eq $((s_clean + s_dirty)) ] ||
		pool_problems="$pool_problems; spare_pfns lists $lines pages, stats count $((s_clean + s_dirty))"
	[ "$bad" -eq 0 ] || pool_problems="$pool_problems; $bad lines of spare_pfns are no frame number"
	[ "$dups" -eq 0 ] || pool_problems="$pool_problems; $dups frame numbers listed twice"
	[ -z "$pool_problems" ]
}

# pool_reloads KO COUNT: unloads and loads iommu_pt COUNT times (pool_unload,
# pool_load), meant while domains with tables from the pool stay alive; stops
# at the first unload or load that fails, saying which as a comment, and
# fails then.
pool_reloads() {
	local i
	if ! integers "$2" || [ "$2" -lt 1 ]; then
		echo "# pool_reloads: '$2' is no number of reloads"
		return 1
	fi
	for i in $(seq "$2"); do
		if ! pool_unload || ! pool_load "$1"; then
			echo "# reload $i failed"
			return 1
		fi
	done
}

# pool_unload: unloads iommu_pt, first adding its frees_zeroed and
# zero_check_failures to $ZERO_CHECK_LOG (the counters die with the module).
ZERO_CHECK_LOG=/tmp/iommu-pt-zero-check
pool_unload() {
	if [ -r "$POOL_STATS" ]; then
		echo "$(pool_stat frees_zeroed) $(pool_stat zero_check_failures)" >>"$ZERO_CHECK_LOG"
	fi
	rmmod iommu_pt
}

# zero_check_result NAME: one result, failed if a table freed as all zero was
# not, over every load pool_unload saw, or if no load reported counters.
zero_check_result() {
	local checked failed loads
	loads=$(wc -l <"$ZERO_CHECK_LOG" 2>/dev/null || echo 0)
	read -r checked failed < <(awk '{ c += $1; f += $2 } END { print c + 0, f + 0 }' "$ZERO_CHECK_LOG" 2>/dev/null)
	echo "# zero check over $loads loads: ${checked:-0} tables freed all zero checked, ${failed:-0} were not"
	[ "$loads" -gt 0 ] && [ "${failed:-1}" -eq 0 ]
	result $? "$1"
}

# vmstat NAME: a /proc/vmstat counter, with the per-CPU deltas folded in first
# (/proc/vmstat alone drifts by the stat threshold). VMSTAT and VMSTAT_REFRESH
# are set here, not taken from the environment; the host's self-test of this
# library (scripts/test-guest-lib.sh) points them at files of its own.
VMSTAT=/proc/vmstat
VMSTAT_REFRESH=/proc/sys/vm/stat_refresh
vmstat() {
	echo 1 >"$VMSTAT_REFRESH"
	awk -v k="$1" '$1 == k { print $2 }' "$VMSTAT"
}

# nr_iommu_pages_check BEFORE: whether NR_IOMMU_PAGES is back at BEFORE, a
# reading of vmstat nr_iommu_pages taken earlier. Not from a $(...) subshell:
# sets nr_iommu_pages to the reading now and nr_iommu_pages_change to
# "BEFORE -> NOW" for the caller's message. Fails unless both are integers and
# equal: two empty readings are no match.
nr_iommu_pages_check() {
	nr_iommu_pages=$(vmstat nr_iommu_pages)
	nr_iommu_pages_change="$1 -> $nr_iommu_pages"
	integers "$1" "$nr_iommu_pages" && [ "$nr_iommu_pages" -eq "$1" ]
}

# Keeps kernel messages in the log buffer, off the console, where they could
# cut a result line in two; kernel_reports prints the reports among them.
quiet_console() { dmesg -n 1; }

# kernel_reports [ACCEPTED]: prints the kernel log's reports as KTAP comments
# (which scripts/ktap.py also scans) and fails if there is any, except the
# lines in the file ACCEPTED, whole lines of the log that a test accounted for
# (dma_faults_expected).
kernel_reports() {
	local accepted=${1:-/dev/null} count
	count=$(dmesg | grep -Ef "$KERNEL_REPORT_FILE" | grep -cvxFf "$accepted")
	echo "# kernel log: $count warnings or reports$([ "$accepted" = /dev/null ] ||
		echo ", besides $(wc -l <"$accepted") lines accounted for by a test")"
	dmesg | grep -A20 -Ef "$KERNEL_REPORT_FILE" | grep -vxFf "$accepted" | head -n 80 |
		sed 's/^/# kernel: /'
	[ "$count" -eq 0 ]
}

# taint_start records the kernel's taint flags; taint_result NAME is one
# result, failed if a flag changed since, other than those that loading
# iommu_pt sets by design (TAINT_EXPECTED: O, an out-of-tree module; E,
# unsigned; N, KUnit tests), or if a reading is not an integer. The flags
# that changed are named (Documentation/admin-guide/tainted-kernels.rst). It
# sees a WARN, Oops or soft lockup that kernel_reports misses: scrolled out of
# the log buffer, or not matched by kernel-report.ere. TAINTED is set here;
# the host's self-test (scripts/test-guest-lib.sh) points it at a file.
TAINTED=/proc/sys/kernel/tainted
TAINT_LETTERS=PFSRMBUDAWCIOELKXTNJ
TAINT_EXPECTED=$(((1 << 12) | (1 << 13) | (1 << 18)))
taint_start() { taint0=$(cat "$TAINTED" 2>/dev/null); }
taint_result() {
	local now changed bit letter flags=""
	now=$(cat "$TAINTED" 2>/dev/null)
	if integers "${taint0:-}" "$now"; then
		changed=$((taint0 ^ now))
		for ((bit = 0; bit < 63; bit++)); do
			[ $((changed >> bit & 1)) -eq 1 ] || continue
			letter=${TAINT_LETTERS:bit:1}
			flags="$flags ${letter:-?} (bit $bit)"
		done
		echo "# $1: kernel taint $taint0 -> $now${flags:+, flags changed:$flags}"
		[ $((changed & ~TAINT_EXPECTED)) -eq 0 ]
	else
		echo "# $1: kernel taint '${taint0:-}' -> '$now': not integers"
		false
	fi
	result $? "$1"
}

# dma_faults_expected BDF [IOMMU]: reads kernel log lines and splits off the
# DMA faults that a test provokes on purpose (vfio_pci_driver_test's
# memcpy_from_unmapped_iova and memcpy_to_unmapped_iova make the device read
# and write an IOVA with nothing mapped). IOMMU is vtd (the default) or amd.
# On VT-d: faults of device BDF for an entry that is not present or lacks the
# access (legacy mode), or a first-level entry that is not present (scalable
# mode), and the "handling fault status" line before each. On AMD-Vi: none,
# since QEMU's amd-iommu (10.0) never writes its event log, so the guest sees
# no fault; an AMD-Vi event line means something else went wrong. The faults
# expected are printed; anything else on the input is printed on stderr. A
# fault of any other kind (a reserved bit set, a bad context entry: what a
# corrupted table would cause) or of another device is never expected.
dma_faults_expected() {
	local bdf=${1//./\.}
	case ${2:-vtd} in
	vtd) ;;
	amd)
		cat >&2
		return
		;;
	*)
		echo "dma_faults_expected: the IOMMU is vtd or amd, not '$2'" >&2
		cat >&2
		return 1
		;;
	esac
	awk -v ok="DMAR: (DRHD: handling fault status reg [0-9a-f]+|\\[DMA (Read|Write) (NO_PASID|PASID 0x0)\\] Request device \\[$bdf\\] fault addr 0x[0-9a-f]+ \\[fault reason 0x0[56]\\] PTE (Read|Write) access is not set|\\[DMA (Read|Write) (NO_PASID|PASID 0x0)\\] Request device \\[$bdf\\] fault addr 0x[0-9a-f]+ \\[fault reason 0x[0-9a-f][0-9a-f]\\] SM: Present bit in first-level paging entry is clear)$" \
		'$0 ~ ok { print; next } { print > "/dev/stderr" }'
}

# map_start PROGRAM VFIO MAPPINGS [dense]: PROGRAM, the guest's iommufd-map
# (qemu/guest/iommufd-map.c), run as coproc MAP up to its first pause; sets
# map_state to the line it printed ("mapped", or its error). map_next lets it
# go on to its next pause and sets map_state to that line ("unmapped"), empty
# if it printed nothing; map_end lets it tear down, waits for it and sets
# map_status to its exit status. Not from $(...) subshells. The coproc's fds
# and pid are kept here: bash unsets MAP once the coproc exits. A program
# that died early makes map_state empty and map_status its own, never this
# shell's end: the line to it is written with SIGPIPE ignored.
map_start() {
	coproc MAP { "$@" 2>&1; }
	map_pid=${MAP_PID:-}
	map_out=${MAP[0]:-}
	map_in=${MAP[1]:-}
	map_state=""
	read -r map_state <&"$map_out"
}
map_send() {
	trap '' PIPE
	echo >&"$map_in"
	trap - PIPE
}
map_next() {
	map_state=""
	map_send
	read -r map_state <&"$map_out"
}
map_end() {
	map_send
	wait "$map_pid"
	map_status=$?
}

# result STATUS NAME: one KTAP result line, numbered; a failure counts in
# $ktap_failures.
ktap_n=0
ktap_failures=0
result() {
	ktap_n=$((ktap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $ktap_n $2"
	else
		echo "not ok $ktap_n $2"
		ktap_failures=$((ktap_failures + 1))
	fi
}

# checks_result NUMBER NAME PROBLEMS: one nested result ("    ok NUMBER NAME"),
# failed with PROBLEMS, a list of "; problem" items, as its reason if there
# are any; a failure sets set_failed=1 for the suite around it.
checks_result() {
	if [ -z "$3" ]; then
		echo "    ok $1 $2"
	else
		echo "    not ok $1 $2 # ${3#; }"
		set_failed=1
	fi
}

# ksft_problems OUT PLAN SKIP_ERE SKIPS: what is wrong with a kselftest
# binary's output OUT against its expected plan: a different plan, results
# missing or failed, skips other than SKIPS tests matching SKIP_ERE. Prints
# "; problem" for each, nothing if none.
ksft_problems() {
	local out=$1 plan=$2 skip_ere=$3 skips=$4 got results failed skipped bad
	if [ ! -s "$out" ]; then
		echo -n "; no output"
		return
	fi
	got=$(sed -n 's/^1\.\.\([0-9]\{1,\}\)$/\1/p' "$out" | head -n 1)
	[ "$got" = "$plan" ] || echo -n "; plan ${got:-missing} (want $plan)"
	results=$(grep -cE '^(not )?ok [0-9]+ ' "$out")
	[ "$results" -eq "$plan" ] || echo -n "; $results results (want $plan)"
	failed=$(grep -cE '^not ok [0-9]+ ' "$out")
	[ "$failed" -eq 0 ] || echo -n "; $failed failed: $(grep -E '^not ok [0-9]+ ' "$out" | head -n 5 | cut -d' ' -f4 | tr '\n' ' ')"
	grep -E '^ok [0-9]+ .* # SKIP' "$out" | cut -d' ' -f3 >"$out.skipped"
	skipped=$(wc -l <"$out.skipped")
	bad=$(grep -vcE "$skip_ere" "$out.skipped")
	[ "$bad" -eq 0 ] || echo -n "; unexpected skips: $(grep -vE "$skip_ere" "$out.skipped" | head -n 5 | tr '\n' ' ')"
	[ "$skipped" -eq "$skips" ] || echo -n "; $skipped skipped (want $skips)"
	grep -q '^# Totals: ' "$out" || echo -n "; no Totals line"
}

# dma_port: the virtio port named iommu-pt.dma (vportNpM), once udev made
# its device node; empty if there is none.
dma_port() {
	local n p i
	for i in $(seq 1 20); do
		for n in /sys/class/virtio-ports/*/name; do
			[ "$(cat "$n" 2>/dev/null)" = iommu-pt.dma ] || continue
			p=$(basename "$(dirname "$n")")
			[ -c "/dev/$p" ] && { echo "$p"; return 0; }
		done
		sleep 0.5
	done
	return 1
}

# pci_rebind BDF [TYPE...]: unbinds the driver of PCI function BDF, writes
# each TYPE to its IOMMU group's type and binds the driver again. With no
# driver bound, writing "DMA" to a DMA-FQ group gives it a new default domain;
# "DMA-FQ" on a DMA group only starts a flush queue on the same domain; with
# no TYPE, the device comes back to the same domain.
pci_rebind() {
	local dev=/sys/bus/pci/devices/$1 drv t
	shift
	drv=$(basename "$(readlink -f "$dev/driver")")
	[ -n "$drv" ] && [ "$drv" != driver ] || return 1
	echo "${dev##*/}" >"/sys/bus/pci/drivers/$drv/unbind" || return 1
	for t in "$@"; do
		echo "$t" >"$dev/iommu_group/type" || return 1
	done
	echo "${dev##*/}" >"/sys/bus/pci/drivers/$drv/bind"
}

# dma_writer_start PORT: lazy DMA-API traffic, in the background: writes of
# 64 x 32 KiB to /dev/PORT (each 32 KiB write maps a buffer for the device and
# unmaps it), each write bounded by 60 s, until dma_writer_stop. Counted in a
# file, not a pipe: what a pipe held is lost when bash reaps its writer.
dma_writer_start() {
	dma_writer_stopfile=$(mktemp -u)
	dma_writer_log=$(mktemp)
	(
		while [ ! -e "$dma_writer_stopfile" ]; do
			timeout 60 dd if=/dev/zero of="/dev/$1" bs=32k count=64 status=none ||
				{ echo failed; break; }
			echo 64
		done >>"$dma_writer_log"
	) &
	dma_writer_pid=$!
}

# dma_writer_stop: stops the writer after its current dd and waits for it
# (no write outlives this call, so the port can be unbound next); sets
# dma_writer_count to the number of 32 KiB writes. Fails if a write failed
# or none completed. Not from a $(...) subshell: only this shell can wait.
dma_writer_stop() {
	local out
	touch "$dma_writer_stopfile"
	wait "$dma_writer_pid"
	out=$(cat "$dma_writer_log")
	rm -f "$dma_writer_stopfile" "$dma_writer_log"
	dma_writer_count=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }')
	case "$out" in *failed*) return 1 ;; esac
	[ "$dma_writer_count" -gt 0 ]
}

# Fault injection (CONFIG_FAULT_INJECTION_DEBUG_FS): fi_set KNOB VALUE sets a
# knob of both fail_page_alloc and failslab; fi_reset puts every knob back to
# "inject nothing", with order-0 page allocations (every page table)
# injectable and nothing filtered by stack.
fi_dir=/sys/kernel/debug
fi_set() {
	local a
	for a in fail_page_alloc failslab; do
		echo "$2" >"$fi_dir/$a/$1"
	done
}
fi_reset() {
	fi_set probability 0
	fi_set times -1
	fi_set interval 1
	fi_set verbose 0
	fi_set task-filter N
	fi_set ignore-gfp-wait N
	fi_set require-start 0
	fi_set require-end 0xffffffffffffffff
	echo 0 >"$fi_dir/fail_page_alloc/min-order"
	echo N >"$fi_dir/fail_page_alloc/ignore-gfp-highmem"
	fi_iommufd_points
}
# iommufd's own fault points (fail_iommufd, CONFIG_IOMMUFD_TEST) count in
# fail-nth like page and slab allocations, and fail with other errors (ENOENT,
# ...). FI_IOMMUFD=off leaves them out, for checks that expect the ENOMEM of a
# failed allocation (reliability.sh): a stack filter with an empty range
# matches no stack, and fail-nth passes over a point whose filter does not
# match. The default, on, is iommufd_fail_nth's setting.
FI_IOMMUFD=${FI_IOMMUFD:-on}
fi_iommufd_points() {
	local d=$fi_dir/fail_iommufd
	[ -d "$d" ] || return 0
	echo 0 >"$d/require-start"
	if [ "$FI_IOMMUFD" = on ]; then
		echo 0xffffffffffffffff >"$d/require-end"
	else
		echo 0 >"$d/require-end"
	fi
}
