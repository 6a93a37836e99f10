#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: a reproducer under investigation, not a test. Phases
# (ORDER, e.g. "pool c pool0") each run stress-map on the vfio-bound igb (3
# domains, 8 threads, SECONDS) and count new kernel WARNINGs: "pool"/"pool0"
# with iommu_pt loaded, "c"/"c0" after rmmod; "pool" and "c" first give the
# virtio port iommu-pt.dma a fresh DMA-FQ domain and write to it all along
# (lazy DMA-API traffic), "pool0"/"c0" do not.
#
# On the debug kernel, "pool c pool0" oopsed in the "c" phase (KASAN
# quarantine, qlist_free_all, NULL pointer) right after iommu_pt was unloaded
# while the port's DMA-FQ domain still had tables from the pool and the
# domain was then replaced; and "c c", with iommu_pt never loaded, oopsed the
# same way in its first phase: the corruption does not need the pool. Boot
# it with:
#   IOMMU_PT_BUILD=$WORK/build-debug IOMMU_PT_MODULE_OUT=$WORK/module-debug \
#   qemu/run-guest.sh --append "no5lvl iommu.debug_pagealloc=1" --dma-port -- \
#     qemu/guest/repro-unload-fq.sh /mnt/iommu-pt-work/module-debug/iommu_pt.ko \
#     /mnt/iommu-pt-work/guest-bin 120 "pool c pool0"
#
# usage: repro-unload-fq.sh MODULE.ko GUEST_BIN_DIR SECONDS ORDER
set -u
. "$(dirname "$0")/lib.sh"
ko=$1 bin=$2 secs=$3 order=$4
quiet_console
bdf=$(igb_bdf); bind_vfio_pci "$bdf" || { echo "bind failed"; exit 1; }
vfio=$(vfio_cdev "$bdf")
port=$(dma_port) || { echo "no iommu-pt.dma port: boot with --dma-port"; exit 1; }
dma_bdf=$(basename "$(dirname "$(readlink -f "/sys/class/virtio-ports/$port/device")")")
fresh() { dma_fresh_domain "$dma_bdf" && sleep 2 && port=$(dma_port); }
phase() {
	local name=$1 traffic=$2 w0 w1 out
	w0=$(dmesg | grep -c 'WARNING:')
	[ "$traffic" = 1 ] && fresh
	if [ "$traffic" = 1 ]; then
		( while timeout 60 dd if=/dev/zero of="/dev/$port" bs=32k count=64 status=none; do :; done ) &
		tp=$!
	fi
	out=$("$bin/stress-map" "$vfio" 3 8 "$secs" 2>&1 | tail -n 1)
	[ "$traffic" = 1 ] && { kill $tp; wait $tp 2>/dev/null; }
	w1=$(dmesg | grep -c 'WARNING:')
	echo "# PROBE $name traffic=$traffic: warnings +$((w1 - w0)); $out"
}
for p in $order; do
	case $p in
	c) rmmod iommu_pt 2>/dev/null; phase c 1 ;;
	c0) rmmod iommu_pt 2>/dev/null; phase c 0 ;;
	pool) [ -e /sys/module/iommu_pt ] || insmod "$ko"; phase pool 1 ;;
	pool0) [ -e /sys/module/iommu_pt ] || insmod "$ko"; phase pool 0 ;;
	esac
done
dmesg | grep -A14 'WARNING:' | grep -E 'WARNING|Comm|__iommu|iopt|iommu_unmap|dma' | head -40 | sed 's/^/# K /'
