# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The VFIO stage's subset values, checked the same way by scripts/test.sh (on
# the host, before building) and qemu/guest/vfio-tests.sh (in the guest).
# Source it, do not run it.

# vfio_subset_check ALLOCATORS DRIVER_MODES SCALE: prints what is wrong and
# returns 1, or returns 0.
vfio_subset_check() {
	local a m
	for a in $1; do
		case "$a" in
		c | rust) ;;
		*) echo "the allocators are c and rust, not '$a'"; return 1 ;;
		esac
	done
	for m in $2; do
		case "$m" in
		vfio_type1_iommu | vfio_type1v2_iommu | iommufd_compat_type1 | iommufd_compat_type1v2 | iommufd) ;;
		*) echo "'$m' is not an IOMMU mode of the VFIO selftests (vfio_type1_iommu, vfio_type1v2_iommu, iommufd_compat_type1, iommufd_compat_type1v2, iommufd)"; return 1 ;;
		esac
	done
	case "$3" in
	'' | *[!0-9]* | 0* | ?????*) echo "the timeout scale is a whole factor from 1 to 9999, not '$3'"; return 1 ;;
	esac
}
