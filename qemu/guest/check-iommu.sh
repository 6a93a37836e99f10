#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest. Checks, as KTAP, that VT-d DMA remapping is enabled and
# that the emulated igb NIC sits in an IOMMU group of its own.

. "$(dirname "$0")/lib.sh"

echo "KTAP version 1"
echo "1..4"

ls /sys/class/iommu/ | grep -q '^dmar' && dmesg | grep -q 'DMAR: IOMMU enabled'
result $? iommu_dmar_enabled

grep -q 'iommu.strict=1' /proc/cmdline && dmesg | grep -q 'iommu: DMA domain TLB invalidation policy: strict'
result $? iommu_strict_mode

igb=$(igb_bdf)
igb=${igb:+/sys/bus/pci/devices/$igb}
echo "# igb device: ${igb:-none}"
[ -n "$igb" ] && [ -e "$igb/iommu_group" ]
result $? iommu_igb_in_group

if [ -n "$igb" ] && [ -e "$igb/iommu_group" ]; then
	members=$(ls "$igb/iommu_group/devices")
	echo "# igb group $(basename "$(readlink "$igb/iommu_group")"): $members"
	[ "$members" = "$(basename "$igb")" ]
	result $? iommu_igb_group_alone
else
	result 1 iommu_igb_group_alone
fi
exit $((ktap_failures > 0))
