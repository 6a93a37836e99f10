#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: a reproducer under investigation, not a test. Each word
# of ORDER is a phase of SECONDS, made of letters, run in this order:
#   P  load iommu_pt first (if not loaded); U  unload it first
#   F  give the virtio port iommu-pt.dma a fresh DMA-FQ default domain
#      (unbind, group type DMA-FQ/DMA/DMA-FQ, bind)
#   D  give the port a fresh strict DMA default domain (as F, without the
#      flush queue)
#   R  unbind the port's driver and bind it again, the domain unchanged
#   L  switch the port's group to DMA-FQ while its driver stays bound
#   T  DMA-API traffic: writes to the port all along the phase (lazy if
#      the group is DMA-FQ)
#   S  stress-map on the vfio-bound igb (3 domains, 8 threads) for the
#      phase; without S the phase sleeps
# and prints the new kernel WARNINGs, BUGs and the stress result. The writer
# is stopped by a file and waited for, so no write runs past its phase.
#
# Findings on the debug kernel (KASAN), iommu_pt never loaded, 120 s phases,
# one boot per line; "crash" is a NULL pointer oops in qlist_free_all() from
# kasan_quarantine_reduce() on an object at the start of the page at guest
# physical 4 GiB (CI's normal kernel crashed in p9_client_rpc() on a client
# at that same page):
#   "S LT FT FS FTS"    S, LT, FT, FS clean; crash right after FTS
#   "FTS FTS FTS"       crash in the first phase (stress-map IOVAs moved from
#                       4 GiB to 5 GiB: the same page, so not an IOVA)
#   "TS TS LTS LTS"     all clean (no unbind, strict then lazy)
#   "RTS RTS RTS"       crash in the first phase: a rebind of the port's
#                       driver is enough, no new domain, strict mode
# and in reliability.sh's former scenario 3b, iommu_pt loaded: a new domain
# (rebind), 30 s of traffic alone, then another rebind: crash in that
# rebind's add_port(), the same page.
# So: a rebind of virtio-pci on the port, then DMA traffic; stress-map makes
# it come sooner. The pool plays no part. All of the above ran multi-threaded
# TCG. Single-threaded (qemu/run-guest.sh's default since 2026-12-06), the
# normal kernel ran "RTS RTS FTS" clean once, but a reliability run with three
# rebinds under traffic oopsed in put_iova_domain() on an IOVA tree node in
# that same page (docs/tcg-threads-and-flr.md): not the threading fault.
# Boot it with:
#   IOMMU_PT_BUILD=$WORK/build-debug IOMMU_PT_MODULE_OUT=$WORK/module-debug \
#   qemu/run-guest.sh --append "no5lvl iommu.debug_pagealloc=1" --dma-port -- \
#     qemu/repro/repro-port-rebind.sh /mnt/iommu-pt-work/module-debug/iommu_pt.ko \
#     /mnt/iommu-pt-work/guest-bin 120 "RTS RTS"
#
# usage: repro-port-rebind.sh MODULE.ko GUEST_BIN_DIR SECONDS ORDER
set -u
. "$(dirname "$0")/../guest/lib.sh"
ko=$1 bin=$2 secs=$3 order=$4
quiet_console
bdf=$(igb_bdf); bind_vfio_pci "$bdf" || { echo "bind failed"; exit 1; }
vfio=$(vfio_cdev "$bdf")
port=$(dma_port) || { echo "no iommu-pt.dma port: boot with --dma-port"; exit 1; }
dma_bdf=$(basename "$(dirname "$(readlink -f "/sys/class/virtio-ports/$port/device")")")
type=/sys/bus/pci/devices/$dma_bdf/iommu_group/type
# rebind [TYPE...]: the port's driver rebound (lib.sh's pci_rebind), and the
# port found again.
rebind() { pci_rebind "$dma_bdf" "$@" && port=$(dma_port); }
reports() { dmesg | grep -cEf "$KERNEL_REPORT_FILE"; }

phase() {
	local spec=$1 r0 r1 out writes=0
	r0=$(reports)
	case $spec in *U*) rmmod iommu_pt 2>/dev/null ;; esac
	case $spec in *P*) [ -e /sys/module/iommu_pt ] || insmod "$ko" ;; esac
	case $spec in *F*) rebind DMA-FQ DMA DMA-FQ || echo "# new DMA-FQ domain failed" ;; esac
	case $spec in *D*) rebind DMA-FQ DMA || echo "# new DMA domain failed" ;; esac
	case $spec in *R*) rebind || echo "# rebind failed" ;; esac
	case $spec in *L*) echo DMA-FQ >"$type" || echo "# live DMA-FQ failed" ;; esac
	case $spec in *T*) dma_writer_start "$port" ;; esac
	case $spec in
	*S*) out=$("$bin/stress-map" "$vfio" 3 8 "$secs" 2>&1 | tail -n 1) ;;
	*) sleep "$secs"; out="no stress" ;;
	esac
	case $spec in *T*) dma_writer_stop; writes=$dma_writer_count ;; esac
	r1=$(reports)
	echo "# PROBE $spec: type $(cat "$type"), module $([ -e /sys/module/iommu_pt ] && echo loaded || echo absent)," \
		"writes $writes, reports +$((r1 - r0)); $out"
}
for p in $order; do
	phase "$p"
done
dmesg | grep -A14 -E 'WARNING:|BUG:' | grep -E 'WARNING|BUG|Comm|RIP|__iommu|iopt|iommu_unmap|dma' |
	head -40 | sed 's/^/# K /'
