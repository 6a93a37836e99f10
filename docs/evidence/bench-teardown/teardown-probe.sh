#!/bin/bash
set -u
pool_ko=$1; bench_ko=$2; outdir=$3
run_file=/sys/kernel/debug/iommu_pt_bench/run
. "$(dirname "$0")/../../qemu/guest/lib.sh"
bdf=$(igb_bdf); bind_vfio_pci "$bdf"
quiet_console
insmod "$bench_ko"
[ -e /sys/module/iommu_pt ] && rmmod iommu_pt
mkdir -p "$outdir"
o=$outdir/seq.txt
st() { tr '\n' ' ' </sys/kernel/debug/iommu_pt/stats | grep -o "worker_runs [0-9]*\|refills [0-9]*\|zeroed [0-9]*\|clean [0-9]*\|dirty [0-9]*\|quiet_waits [0-9]*\|cpu_busy_waits [0-9]*" | tr '\n' ' '; }
one() { echo "$1" >$run_file; echo "$2: $(grep -E "free_ns|ns_per_map" $run_file | tr '\n' ' ') | $(st)" >>"$o"; }
for pause in 1 5 1; do
	insmod "$pool_ko"; echo "insmod, sleep $pause: $(st)" >>"$o"; sleep $pause; echo "after sleep: $(st)" >>"$o"
	one 'map sparse 128' first; one 'map sparse 128' second; sleep 1; one 'map sparse 128' after-1s
	one 'map dense 16' dense; one 'map sparse 128' sparse-after-dense
	rmmod iommu_pt
done
echo done
