# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The checking kernels' settings, for the scripts that build and boot them
# (scripts/test-debug.sh, scripts/mutants/run.sh). Source it after lib.sh;
# do not run it.

# kernel_settings KERNEL: exports what scripts/test.sh needs for KERNEL
# (directories, configuration fragment, kernel command line, timeouts). Run
# in the subshell that runs test.sh, so that each kernel starts from the
# caller's environment.
kernel_settings() {
	case "$1" in
	rt)
		export IOMMU_PT_BUILD=$WORK/build-rt
		export IOMMU_PT_MODULE_OUT=$WORK/module-rt
		export IOMMU_PT_OUT=$WORK/out-rt
		export IOMMU_PT_CONFIG_EXTRA="$REPO/qemu/rt.config ${IOMMU_PT_CONFIG_EXTRA:-}"
		# Lockdep checks every lock taken, and PREEMPT_RT threads the
		# interrupt handlers: slower under TCG than the normal kernel,
		# not as slow as the debug kernel's KASAN and kmemleak. Boot
		# timeouts, the quiet-guest watchdog and the hung task timeout
		# twice the normal ones (qemu/rt.config's hung task default
		# matches).
		export IOMMU_PT_SLOW=${IOMMU_PT_SLOW:-2}
		# No KASAN or debug_pagealloc: the pool must serve.
		export IOMMU_PT_POOL_BYPASS=0
		;;
	debug)
		export IOMMU_PT_BUILD=$WORK/build-debug
		export IOMMU_PT_MODULE_OUT=$WORK/module-debug
		export IOMMU_PT_OUT=$WORK/out-debug
		export IOMMU_PT_CONFIG_EXTRA="$REPO/qemu/debug.config ${IOMMU_PT_CONFIG_EXTRA:-}"
		export IOMMU_PT_APPEND_DMA="iommu.debug_pagealloc=1 ${IOMMU_PT_APPEND_DMA:-}"
		# With 5-level paging (TCG's -cpu max has LA57), KASAN reported a
		# wild-memory-access in handle_edge_irq() during identify_boot_cpu(),
		# before any of our code runs; with no5lvl it does not.
		export IOMMU_PT_APPEND="no5lvl ${IOMMU_PT_APPEND:-}"
		export IOMMU_PT_GUEST_WRAP=qemu/guest/kmemleak-check.sh
		export IOMMU_PT_SLOW=${IOMMU_PT_SLOW:-3}
		# Under KASAN and TCG, setting up one vfio_pci_driver_test fixture
		# takes longer than the harness's 30 s per test.
		export IOMMU_PT_KSFT_TIMEOUT_SCALE=${IOMMU_PT_KSFT_TIMEOUT_SCALE:-10}
		# The VFIO stage checks the pool: the C allocator's run is the normal
		# command's. Each vfio_pci_driver_test variant faults in, pins and
		# maps 1 GiB of 4 KiB pages, minutes each under KASAN and TCG: one
		# variant, iommufd, runs it (vfio_dma_mapping_test maps through
		# every IOMMU mode).
		export IOMMU_PT_VFIO_ALLOCATORS=${IOMMU_PT_VFIO_ALLOCATORS:-rust}
		export IOMMU_PT_VFIO_DRIVER_MODES=${IOMMU_PT_VFIO_DRIVER_MODES:-iommufd}
		# KASAN and debug_pagealloc make the page allocator check freed pages,
		# so the pool keeps none (page_allocator_checks_freed_pages(), patch
		# 0024): a table used after its free stays visible to those checks.
		# The KUnit boot's pool tests require that. The VFIO and reliability
		# stages require tables served by the pool, which such a kernel never
		# has: they run only when asked for.
		export IOMMU_PT_POOL_BYPASS=1
		;;
	esac
}
