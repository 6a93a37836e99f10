#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The debug-kernel run: builds the guest kernel again with KASAN, lockdep
# (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, kmemleak, DEBUG_PAGEALLOC and
# IOMMU_DEBUG_PAGEALLOC (qemu/debug.config) in its own directory
# ($IOMMU_PT_CACHE/work/build-debug, module in work/module-debug, logs in
# work/out-debug), and runs
# the test stages on it (default: kunit; scripts/test.sh).
# Every test command runs under qemu/guest/kmemleak-check.sh, and any KASAN,
# lockdep, sleep-in-atomic or kmemleak report fails the run.
#
# usage: scripts/test-debug.sh [--skip-build] [--stages LIST]

. "$(dirname "$0")/lib.sh"

case "${1:-}" in -h | --help) sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
need_root
export IOMMU_PT_BUILD=$WORK/build-debug
export IOMMU_PT_MODULE_OUT=$WORK/module-debug
export IOMMU_PT_OUT=$WORK/out-debug
export IOMMU_PT_CONFIG_EXTRA="$REPO/qemu/debug.config ${IOMMU_PT_CONFIG_EXTRA:-}"
export IOMMU_PT_APPEND_DMA="iommu.debug_pagealloc=1 ${IOMMU_PT_APPEND_DMA:-}"
# With 5-level paging (TCG's -cpu max has LA57), KASAN reported a
# wild-memory-access in handle_edge_irq() during identify_boot_cpu(), before
# any of our code runs; with no5lvl it does not.
export IOMMU_PT_APPEND="no5lvl ${IOMMU_PT_APPEND:-}"
export IOMMU_PT_GUEST_WRAP=qemu/guest/kmemleak-check.sh
export IOMMU_PT_SLOW=${IOMMU_PT_SLOW:-3}
# Under KASAN and TCG, setting up one vfio_pci_driver_test fixture takes
# longer than the harness's 30 s per test.
export IOMMU_PT_KSFT_TIMEOUT_SCALE=${IOMMU_PT_KSFT_TIMEOUT_SCALE:-10}
# The VFIO stage checks the pool: the C allocator's run is the normal
# command's. Each vfio_pci_driver_test variant faults in, pins and maps 1 GiB
# of 4 KiB pages, minutes each under KASAN and TCG: one variant, iommufd, runs
# it (vfio_dma_mapping_test maps through every IOMMU mode).
export IOMMU_PT_VFIO_ALLOCATORS=${IOMMU_PT_VFIO_ALLOCATORS:-rust}
export IOMMU_PT_VFIO_DRIVER_MODES=${IOMMU_PT_VFIO_DRIVER_MODES:-iommufd}
# KASAN and debug_pagealloc make the page allocator check freed pages, so the
# pool keeps none (page_allocator_checks_freed_pages(), patch 0024): a table
# used after its free stays visible to those checks. The KUnit boot's pool
# tests require that. The VFIO and reliability stages require tables served
# by the pool, which such a kernel never has: they run only when asked for.
export IOMMU_PT_POOL_BYPASS=1
case " $* " in *" --stages "*) ;; *) set -- "$@" --stages kunit ;; esac
exec "$REPO/scripts/test.sh" "$@"
