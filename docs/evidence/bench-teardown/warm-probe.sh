#!/bin/bash
# Probe: the pool's teardown in wall time once its code ran once (TCG translated it) and its
# worker is idle, beside C's in the same boot.
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
one() { echo 'map sparse 128' >$run_file; echo "$1: $(grep -E "^(free_ns|ns_per_map|ns_per_unmap) " $run_file | tr '\n' ' ')" >>"$o"; }
for alloc in c rust c rust; do
	[ "$alloc" = rust ] && insmod "$pool_ko"
	sleep 1
	one "$alloc cold"
	for i in 1 2 3 4; do sleep 2; one "$alloc warm, idle worker"; done
	for i in 1 2 3; do one "$alloc back to back"; done
	[ "$alloc" = rust ] && rmmod iommu_pt
done
echo done
