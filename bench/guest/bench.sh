#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: every workload under the C allocator (iommu_pt not
# loaded) and the Rust pool (iommu_pt loaded), alternating, RUNS times. Each
# run swaps the order (C first, then Rust first), so that drift over the boot
# does not favour one side.
#
# usage: bench.sh RUNS IOMMU_PT.KO BENCH.KO BENCH_BIN_DIR PROFILE_DIR RESULTS [ONLY [WARMUP [POOL_ARGS]]]
#
# ONLY: a comma-separated list of workload names to run, without the profiles
# (bench/run.sh checks the names against WORKLOADS before it boots); "all"
# (the default) runs every workload and the profiles.
# WARMUP: 1 runs each workload once, unmeasured, before each measured run of it
# (then lets the pool's worker settle). For wall time under TCG: the first run
# of code after it is loaded pays for its translation, and iommu_pt is loaded
# again for every run of the pool while C's code stays translated (k_map_sparse's
# teardown took 0.6-1.2 ms cold against 0.1 ms warm, and C's first one in the
# boot 0.75 ms too; bench/RESULTS.md, session 15). Instruction counts do not
# include translation: icount runs leave it at 0 (the default).
#
# POOL_ARGS: iommu_pt's module parameters for every load of the pool (words
# NAME=NUMBER, bench/run.sh --pool-args; empty by default), e.g. prefill=0.
#
# Writes to RESULTS (not the console, where kernel messages could cut a line)
# the environment as "# " lines and one line per workload and run:
#   BENCH run=R alloc=c|rust workload=W key=value...
# with the workload's own figures (ns from ktime or clock_gettime), the perf
# stat software counters of the command (task-clock in ms, the CPU time of the
# task, kernel and user), NR_IOMMU_PAGES before, at the end of the workload
# and after, and for the pool the deltas of its counters, including the
# refill worker's time. Then a perf record profile of the sparse workload
# under each allocator (top symbols), written to PROFILE_DIR.

set -u
runs=$1
pool_ko=$2
bench_ko=$3
bin=$4
profiles=$5
results=$6
only=${7:-all}
warmup=${8:-0}
pool_args=${9:-}
run_file=/sys/kernel/debug/iommu_pt_bench/run
. "$(dirname "$0")/../../qemu/guest/lib.sh"

# name|kind|arguments. kind k: written to the in-kernel benchmark; kind u:
# the userspace benchmark on the vfio-bound igb. k_alloc_burst takes 128 pages
# at once from a settled pool (the burst a new mapping sees); k_alloc_1 and
# k_alloc_128 cycle 8192 pages, twice the pool's capacity, so every page is
# zeroed within the workload (the steady state). k_steady_emptied maps and
# unmaps whole leaf tables, 16 a round: they come back emptied by the unmap.
# k_growth maps 131072 sparse pages, 128 times the pool's capacity, so the pool
# runs dry early; freeing the domain then frees 131072 leaf tables.
# k_concurrent_1 and _2: one and two threads at once, each on its own CPU, 32
# rounds each of a new domain, 128 sparse pages mapped into it (128 leaf
# tables) and the domain freed (the pair is for the scaling; _2 is left out on
# one vCPU, i.e. under --clock icount). k_remote_1 and k_remote_128 are
# k_alloc_1 and k_alloc_128 run on CPU 0 for the tables of another node (the
# guest has two, qemu/run-guest.sh --numa): what a CPU of one socket pays for
# the tables of an IOMMU on the other.
WORKLOADS=(
	"k_alloc_burst|k|alloc 128 128"
	"k_alloc_1|k|alloc 8192 1"
	"k_alloc_128|k|alloc 8192 128"
	"k_alloc_drain|k|alloc 4096 4096"
	"k_remote_1|k|alloc 8192 1 REMOTE"
	"k_remote_128|k|alloc 8192 128 REMOTE"
	"k_map_dense|k|map dense 16384"
	"k_map_sparse|k|map sparse 128"
	"k_map_sparse_drain|k|map sparse 4096"
	"k_growth|k|map sparse 131072"
	"k_map_huge|k|map huge 4096"
	"k_churn|k|churn 128 32"
	"k_steady_emptied|k|emptied 16 32"
	"k_concurrent_1|k|concurrent 1 128 32"
	"k_concurrent_2|k|concurrent 2 128 32"
	"u_iommufd_dense|u|iommufd dense 2048"
	"u_iommufd_sparse|u|iommufd sparse 128"
	"u_iommufd_huge|u|iommufd huge 512"
	"u_iommufd_churn|u|iommufd churn 128 8"
	"u_type1_dense|u|type1 dense 2048"
	"u_type1_sparse|u|type1 sparse 128"
	"u_type1_huge|u|type1 huge 512"
	"u_type1_churn|u|type1 churn 128 8"
)
POOL_KEYS="allocs hits fallbacks frees frees_zeroed frees_over_capacity zeroed zeroed_on_alloc refills refills_skipped quiet_waits cpu_busy_waits cache_refills cache_spills worker_runs worker_ns"

die() {
	echo "bench.sh: $*" >&2
	exit 1
}
# The node the remote workloads ask for: one with memory, not CPU 0's.
cpu0_node=$(basename /sys/devices/system/cpu/cpu0/node[0-9]* | sed 's/^node//')
remote_node=""
for n in /sys/devices/system/node/node[0-9]*; do
	id=${n##*/node}
	[ "$id" != "$cpu0_node" ] || continue
	awk '/MemTotal:/ { exit !($4 > 0) }' "$n/meminfo" && { remote_node=$id; break; }
done
if [ -z "$remote_node" ] && { [ "$only" = all ] || [[ ",$only," == *,k_remote_* ]]; }; then
	die "the k_remote_* workloads need a second NUMA node with memory (bench/run.sh boots two)"
fi
bdf=$(igb_bdf)
[ -n "$bdf" ] || die "no igb device ($IGB_ID)"
bind_vfio_pci "$bdf" || die "cannot bind $bdf to vfio-pci"
: >"$results" || die "cannot write $results"
exec 3>>"$results"
quiet_console
insmod "$bench_ko" || die "cannot load $bench_ko"
[ -e /sys/module/iommu_pt ] && rmmod iommu_pt

echo >&3 "# guest: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(uname -r)"
echo >&3 "# NUMA: CPU 0 on node $cpu0_node, remote workloads for node ${remote_node:-none}; nodes with memory: $(cat /sys/devices/system/node/has_memory)"
echo >&3 "# iommu_pt parameters: ${pool_args:-the defaults}"
echo >&3 "# clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo >&3 "# perf events: $(perf stat -x, -e cycles,instructions,task-clock true 2>&1 >/dev/null |
	awk -F, '{ printf "%s=%s ", $3, $1 }')"
# Hardware counters where the guest has them (KVM with a PMU); TCG has none.
EVENTS="task-clock"
if perf stat -x, -e cycles,instructions true 2>&1 >/dev/null | grep -q '^[0-9]'; then
	EVENTS="task-clock,cycles,instructions"
fi
echo >&3 "# perf stat events used: $EVENTS"

# run_workload RUN ALLOC NAME KIND ARGS...
run_workload() {
	local run=$1 alloc=$2 name=$3 kind=$4
	shift 4
	local before after peak out perf_out line extra k v0 v1 task
	local -A p0

	before=$(vmstat nr_iommu_pages)
	if [ "$alloc" = rust ]; then
		for k in $POOL_KEYS; do p0[$k]=$(pool_stat "$k"); done
	fi
	perf_out=$(mktemp)
	local remote=0 pin=()
	if [[ " $* " == *" REMOTE "* ]]; then
		# On CPU 0, for the tables of a node other than its own.
		set -- "${@/#REMOTE/$remote_node}"
		remote=1 pin=(taskset -c 0)
	fi
	if [ "$kind" = k ]; then
		perf stat -x, -o "$perf_out" -e "$EVENTS" -- \
			"${pin[@]}" sh -c "echo '$*' >$run_file" || die "$name: '$*' failed"
		out=$(cat "$run_file")
		# What was measured: every page of the node asked for, from a CPU of another.
		[ "$remote" -eq 0 ] || echo "$out" | awk -v want="$remote_node" '
			{ v[$1] = $2 }
			END { exit !(v["node"] == want && v["cpu_node"] != want && v["pages_on_node"] == v["pages"]) }' ||
			die "$name: not every page was of node $remote_node, or CPU 0 is on it: $(echo $out)"
	else
		out=$(perf stat -x, -o "$perf_out" -e "$EVENTS" -- \
			"$bin/vfio-map-bench" "$1" "$bdf" "${@:2}") || die "$name: vfio-map-bench $* failed"
	fi
	peak=$(vmstat nr_iommu_pages)
	task=$(awk -F, '$3 == "task-clock" { print $1 }' "$perf_out")
	extra=$(awk -F, '($3 == "cycles" || $3 == "instructions") && $1 ~ /^[0-9]/ {
		printf " %s=%s", $3, $1 }' "$perf_out")
	rm -f "$perf_out"
	if [ "$alloc" = rust ]; then
		for k in $POOL_KEYS; do
			v1=$(pool_stat "$k")
			v0=${p0[$k]}
			extra="$extra pool_$k=$((v1 - v0))"
		done
		extra="$extra pool_clean=$(pool_stat clean) pool_dirty=$(pool_stat dirty)"
	fi
	line="BENCH run=$run alloc=$alloc workload=$name task_clock_ms=$task"
	line="$line $(echo "$out" | awk '$1 != "op" && $1 != "pattern" { printf "%s=%s ", $1, $2 }')"
	# Let the pool's worker catch up between workloads, and count it.
	sleep 1
	after=$(vmstat nr_iommu_pages)
	if [ "$alloc" = rust ]; then
		extra="$extra pool_worker_ns_total=$(($(pool_stat worker_ns) - p0[worker_ns]))"
	fi
	echo >&3 "$line nr_iommu_pages_before=$before nr_iommu_pages_end=$peak nr_iommu_pages_after=$after$extra"
	echo "$name ($alloc, run $run) done"
}

# run_set RUN ALLOC: every workload on one allocator.
run_set() {
	local run=$1 alloc=$2 w name kind args
	if [ "$alloc" = rust ]; then
		# shellcheck disable=SC2086 # words NAME=NUMBER
		insmod "$pool_ko" $pool_args || die "cannot load $pool_ko $pool_args"
		# Start from a full pool: the load fills it to the high watermark.
		sleep 1
		if [ -n "$remote_node" ]; then
			# And the other node's depot: the pool sets a node's depot up
			# when a request for the node first falls back, and fills it.
			taskset -c 0 sh -c "echo 'alloc 1 1 $remote_node' >$run_file" ||
				die "cannot ask for node $remote_node's depot"
			sleep 1
		fi
	fi
	for w in "${WORKLOADS[@]}"; do
		IFS='|' read -r name kind args <<<"$w"
		[ "$only" = all ] || [[ ",$only," == *",$name,"* ]] || continue
		# More threads than CPUs would measure time slicing, not scaling.
		if [[ $args == concurrent\ * ]] && [ "$(echo "$args" | cut -d' ' -f2)" -gt "$(nproc)" ]; then
			[ "$run" -ne 1 ] || [ "$alloc" != c ] || echo >&3 "# $name left out: $(nproc) CPU"
			continue
		fi
		if [ "$warmup" = 1 ]; then
			# The same run, its result line thrown away (fd 3 is RESULTS).
			# shellcheck disable=SC2086
			run_workload "$run" "$alloc" "$name (warm-up)" "$kind" $args 3>/dev/null
		fi
		# shellcheck disable=SC2086
		run_workload "$run" "$alloc" "$name" "$kind" $args
	done
	if [ "$alloc" = rust ]; then
		echo >&3 "# pool after run $run: $(tr '\n' ' ' <"$POOL_STATS")"
		rmmod iommu_pt || die "cannot unload iommu_pt"
	fi
}

t0=$(date +%s)
for run in $(seq 1 "$runs"); do
	if [ $((run % 2)) -eq 1 ]; then
		run_set "$run" c
		run_set "$run" rust
	else
		run_set "$run" rust
		run_set "$run" c
	fi
	echo "# run $run done after $(($(date +%s) - t0)) s"
done

[ "$only" = all ] || exit 0

# Profiles of the sparse workload that drains the pool, under each allocator.
mkdir -p "$profiles"
for alloc in c rust; do
	# shellcheck disable=SC2086 # words NAME=NUMBER
	[ "$alloc" = rust ] && insmod "$pool_ko" $pool_args && sleep 1
	# perf record cannot write its data file to the 9p share: /tmp, then the report.
	# Ten times the sparse map, for enough samples.
	perf record -q -e cpu-clock -F 4000 -g -o "/tmp/perf-$alloc.data" -- \
		sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do echo 'map sparse 4096' >$run_file; done" \
		2>"$profiles/record-$alloc.err"
	perf report -i "/tmp/perf-$alloc.data" --stdio --no-children \
		--sort symbol --percent-limit 1.5 2>"$profiles/report-$alloc.err" |
		grep '%\|^# Samples' | head -n 21 >"$profiles/top-$alloc.txt"
	echo >&3 "# profile, 10 x map sparse 4096, $alloc allocator: top symbols (self %)"
	sed 's/^/#   /' "$profiles/top-$alloc.txt" >&3
	[ "$alloc" = rust ] && rmmod iommu_pt
done
rmmod iommu_pt_bench
echo >&3 "# bench done after $(($(date +%s) - t0)) s"
kernel_reports
