#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmarks: the iommu-pt pool against the C allocator, side by side in one
# boot (bench/guest/bench.sh alternates them, RUNS times). Each boot's raw
# results, their summary as JSON, the Markdown table, a plot of the Rust/C
# ratios (SVG) and the profiles go to bench/results/<UTC timestamp>/<clock>/
# (bench/report.py); the tables are printed at the end.
#
# usage: bench/run.sh [--runs N] [--clock wall|icount|both] [--mode MODE] [--only LIST]
#                     [--pool-args 'NAME=NUMBER ...'] [--skip-build]
#
# --runs N       runs per workload and allocator (default 5, at least 2)
# --clock wall   multi-threaded TCG (or KVM), 2 vCPUs: times are emulated wall time;
#                each workload runs once unmeasured before each measured run, so
#                that TCG has translated the code (iommu_pt is loaded anew for
#                every run of the pool)
# --clock icount single-threaded TCG with -icount shift=0 and one vCPU: guest
#                time counts instructions, so ratios repeat from boot to boot
#                (TCG only). One vCPU, because icount has one instruction
#                clock for all vCPUs: with two, an interval measured on one
#                would include what the other executed meanwhile.
# --clock both   both boots, icount first (default; under KVM only wall)
# --only LIST    only these workloads (comma-separated names, e.g.
#                k_alloc_burst,k_growth), and no profiles: for a quick look;
#                the results of a full run are what RESULTS.md quotes
# --mode MODE    the IOMMU (qemu/run-guest.sh --mode): legacy (VT-d second-stage
#                tables, vtdss format; the default), scalable (first-stage, x86_64)
#                or amd (AMD-Vi v1 tables, amdv1); the results go to
#                bench/results/<timestamp>/<clock>-<mode>/ for a mode other than legacy
# --pool-args    iommu_pt's module parameters for each load of the pool, e.g.
#                'prefill=0' (no pre-fill and no pre-zeroing: the pool keeps only
#                the tables given back); the results go to a directory named
#                after them too (icount-prefill_0/)

. "$(dirname "$0")/../scripts/lib.sh"

runs=5
clock=both
skip_build=0
only=all
mode=legacy
pool_args=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs=${2:?--runs needs a number}; shift 2 ;;
	--clock) clock=${2:?--clock needs wall, icount or both}; shift 2 ;;
	--only) only=${2:?--only needs a list of workload names}; shift 2 ;;
	--mode) mode=${2:?--mode needs legacy, scalable or amd}; shift 2 ;;
	--pool-args) pool_args=${2?--pool-args needs words NAME=NUMBER}; shift 2 ;;
	--skip-build) skip_build=1; shift ;;
	-h | --help) awk 'NR >= 3 && !/^#/ { exit } NR >= 3 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) die "bench/run.sh: unknown argument '$1' (try --help)" ;;
	esac
done
case "$runs" in '' | *[!0-9]*) die "bench/run.sh: --runs takes a whole number, not '$runs'" ;; esac
[ "$runs" -ge 2 ] || die "bench/run.sh: --runs must be at least 2 for a spread"
case "$clock" in wall | icount | both) ;; *) die "bench/run.sh: --clock is wall, icount or both, not '$clock'" ;; esac
case "$mode" in legacy | scalable | amd) ;; *) die "bench/run.sh: --mode is legacy, scalable or amd, not '$mode'" ;; esac
# --pool-args: words NAME=NUMBER, each NAME a parameter iommu_pt declares
# (iommu-pt/iommu_pt.rs); its values are checked when it loads.
for a in $pool_args; do
	case "$a" in
	[a-z]*=[0-9]*) ;;
	*) die "bench/run.sh: --pool-args takes words NAME=NUMBER, not '$a'" ;;
	esac
	case "${a#*=}" in *[!0-9]*) die "bench/run.sh: --pool-args: '$a' is not NAME=NUMBER" ;; esac
	grep -qE "^ {8}${a%%=*}: u32 \{" "$REPO/iommu-pt/iommu_pt.rs" ||
		die "bench/run.sh: --pool-args: iommu_pt has no parameter '${a%%=*}' (iommu-pt/iommu_pt.rs)"
done
# shellcheck disable=SC2086 # words, joined by single spaces
pool_args=$(echo $pool_args)
# --only's names, checked here, before anything is built or booted, against
# the workloads bench/guest/bench.sh defines (WORKLOADS, "name|kind|args").
if [ "$only" != all ]; then
	WORKLOADS=()
	eval "$(sed -n '/^WORKLOADS=($/,/^)$/p' "$REPO/bench/guest/bench.sh")"
	known=" ${WORKLOADS[*]%%|*} "
	[ "$known" != "  " ] || die "bench/run.sh: no WORKLOADS found in bench/guest/bench.sh"
	case ",$only," in
	*,,* | *[!a-z0-9_,]*) die "bench/run.sh: --only '$only' has an empty or malformed workload name (known:${known% })" ;;
	esac
	IFS=, read -r -a names <<<"$only"
	for n in "${names[@]}"; do
		case "$known" in *" $n "*) ;; *) die "bench/run.sh: unknown workload '$n' in --only (known:${known% })" ;; esac
	done
fi

need_root
[ "$skip_build" -eq 1 ] || "$REPO/scripts/build-all.sh"

# The in-kernel benchmark module and the userspace benchmark.
kmod=$WORK/bench-kmod
benchbin=$WORK/bench-bin
mkdir -p "$kmod" "$benchbin" "$OUT"
in_root make -s -C "$BUILD" LLVM=1 M="$REPO/bench/kmod" MO="$kmod" modules ||
	die "cannot build bench/kmod"
in_root gcc -O2 -Wall -Werror -isystem "$BUILD/usr/include" -I"$REPO/qemu/guest" \
	-o "$benchbin/vfio-map-bench" \
	"$REPO/bench/guest/vfio-map-bench.c" || die "cannot build bench/guest/vfio-map-bench.c"

accel=${IOMMU_PT_ACCEL:-$("$REPO/qemu/kvm-probe.sh")}
clocks=()
case "$clock" in
both) [ "$accel" = tcg ] && clocks=(icount wall) || clocks=(wall) ;;
icount) [ "$accel" = tcg ] || die "bench/run.sh: --clock icount needs TCG, and this machine runs KVM"
	clocks=(icount) ;;
*) clocks=(wall) ;;
esac

stamp=$(date -u +%Y%m%dT%H%M%SZ)
dest=$REPO/bench/results/$stamp
status=0
for c in "${clocks[@]}"; do
	log="$OUT/bench-$c.log"
	report="$OUT/bench-$c.md"
	results="$OUT/bench-$c.results"
	# Two NUMA nodes (a socket each) for the k_remote_* workloads; under
	# icount the second node has memory and no CPU.
	opts=(--mode "$mode" --cpus 2 --numa)
	[ "$c" = icount ] && opts=(--mode "$mode" --icount --cpus 1 --numa)
	# The results' directory: the clock, and the mode unless it is the default.
	sub=$c
	[ "$mode" = legacy ] || sub=$c-$mode
	[ -z "$pool_args" ] || sub=$sub-$(echo "$pool_args" | tr ' =' '-_')
	log "bench: $runs runs per allocator, $accel, clock $c, $mode mode (log: $log)"
	t0=$(now)
	# Profiles of this boot only: a run with --only takes none.
	rm -rf "$OUT/bench-profiles-$c"
	# 2 MiB huge pages for the huge-mapping workloads.
	if ! "$REPO/qemu/run-guest.sh" "${opts[@]}" --log "$log" --timeout 5400 \
		--append "hugepagesz=2M hugepages=8" -- \
		bench/guest/bench.sh "$runs" "$GUEST_MODULE" \
		"$GUEST_WORK/bench-kmod/iommu_pt_bench.ko" "$GUEST_WORK/bench-bin" \
		"$OUT/bench-profiles-$c" "$results" "$only" "$([ "$c" = wall ] && echo 1 || echo 0)" "$pool_args"; then
		warn "the $c benchmark guest failed (see $log)"
		status=1
		continue
	fi
	title="Rust pool vs C allocator: $accel, $mode mode, $([ "$c" = icount ] && echo "icount (instructions as time), 1 TCG thread, 1 vCPU" || echo "wall time, 2 vCPUs"), $runs runs${pool_args:+, iommu_pt $pool_args}"
	mkdir -p "$dest/$sub" || die "cannot create $dest/$sub"
	cp "$results" "$dest/$sub/results.txt"
	# Profiles are taken only by a full run (not with --only).
	[ "$only" != all ] || cp "$OUT/bench-profiles-$c"/top-*.txt "$dest/$sub/"
	if python3 "$REPO/bench/report.py" --title "$title" --json "$dest/$sub/results.json" \
		--svg "$dest/$sub/ratios.svg" "$results" >"$report"; then
		{
			echo
			echo "Reproduce: \`bench/run.sh --runs $runs --clock $c --mode $mode$([ "$only" = all ] || echo " --only $only")$([ -z "$pool_args" ] || echo " --pool-args '$pool_args'")\` ($(($(now) - t0)) s on this machine)."
			if [ "$only" = all ]; then
				echo
				echo "Profiles of ten \`map sparse 4096\` (perf record -e cpu-clock -F 4000, self %, top symbols):"
				for a in c rust; do
					echo
					echo "$a allocator:"
					echo '```'
					cat "$OUT/bench-profiles-$c/top-$a.txt" 2>/dev/null
					echo '```'
				done
			fi
		} >>"$report"
		cp "$report" "$dest/$sub/report.md"
	else
		warn "incomplete results in $log"
		status=1
	fi
done
for c in "${clocks[@]}"; do
	sub=$c
	[ "$mode" = legacy ] || sub=$c-$mode
	[ -f "$dest/$sub/report.md" ] && { echo; cat "$dest/$sub/report.md"; }
done
log "results in $dest"
exit $status
