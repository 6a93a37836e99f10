# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # sets variables for the scripts that source it
# Names that the host scripts and the guest scripts must agree on, written
# once: sourced by scripts/test.sh and scripts/build-guest-tools.sh on the
# host, and by qemu/guest/test-pool.sh and qemu/guest/vfio-tests.sh in the
# guest. Source it, do not run it.

# generic_pt's KUnit suites for the formats the guest builds: they run built
# in at boot on the C allocator (the KUnit stage requires each), and
# test-pool.sh runs them again with the pool as the provider.
GENERIC_PT_SUITES=(amdv1_fmt_test amdv1_iommu_test vtdss_fmt_test vtdss_iommu_test
	x86_64_fmt_test x86_64_iommu_test)

# The VFIO selftests the VFIO stage runs, in order
# (tools/testing/selftests/vfio): build-guest-tools.sh requires each to be
# built, vfio-tests.sh runs each.
VFIO_BINARIES=(vfio_dma_mapping_test vfio_dma_mapping_mmio_test vfio_iommufd_setup_test
	vfio_pci_device_test vfio_pci_driver_test)
