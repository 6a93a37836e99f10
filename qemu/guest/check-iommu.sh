#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest. Checks, as KTAP, that the IOMMU's DMA remapping is
# enabled and that the emulated igb NIC sits in an IOMMU group of its own.
# The IOMMU is the one the firmware describes: AMD-Vi if ACPI has an IVRS
# table (QEMU's amd-iommu), else VT-d (DMAR).
#  - VT-d: a dmar* IOMMU in sysfs and "DMAR: IOMMU enabled"
#    (drivers/iommu/intel/iommu.c);
#  - AMD-Vi (drivers/iommu/amd/init.c, every message prefixed "AMD-Vi: "): an
#    ivhd* IOMMU in sysfs, which the driver removes again when it cannot
#    translate DMA (iommu_init_pci), and "Extended features (", which
#    print_iommu_info() prints once every IOMMU passed its PCI setup; and
#    interrupt remapping: "Interrupt remapping enabled" from the same
#    function, or off for the one reason known under QEMU 10.0 with 7.3 (its
#    IVRS names 00:14.0 as the southbridge IOAPIC, which q35 does not have:
#    "No southbridge IOAPIC found"), and then only with VFIO and iommufd told
#    to allow unsafe interrupts (qemu/run-guest.sh --mode amd), without which
#    they refuse the device. Any other reason fails.

. "$(dirname "$0")/lib.sh"

echo "KTAP version 1"
if [ -e /sys/firmware/acpi/tables/IVRS ]; then
	echo "1..5"
	echo "# AMD-Vi (ACPI IVRS); IOMMUs: $(ls /sys/class/iommu/ | tr '\n' ' ')"
	dmesg | grep 'AMD-Vi: ' | head -n 8 | sed 's/^/# /'
	compgen -G '/sys/class/iommu/ivhd*' >/dev/null && dmesg | grep -q 'AMD-Vi: Extended features ('
	result $? iommu_amdvi_enabled
	if dmesg | grep -q 'AMD-Vi: Interrupt remapping enabled'; then
		ir=0
	elif dmesg | grep -q 'AMD-Vi: .*No southbridge IOAPIC found' &&
		grep -q 'vfio_iommu_type1.allow_unsafe_interrupts=1' /proc/cmdline &&
		grep -q 'iommufd.allow_unsafe_interrupts=1' /proc/cmdline; then
		echo "# interrupt remapping off: no southbridge IOAPIC at QEMU's 00:14.0; VFIO allows unsafe interrupts"
		ir=0
	else
		echo "# interrupt remapping off for a reason not known here, or VFIO not told to allow it"
		ir=1
	fi
	result $ir iommu_amdvi_irq_remapping
else
	echo "1..4"
	compgen -G '/sys/class/iommu/dmar*' >/dev/null && dmesg | grep -q 'DMAR: IOMMU enabled'
	result $? iommu_dmar_enabled
fi

grep -q 'iommu.strict=1' /proc/cmdline && dmesg | grep -q 'iommu: DMA domain TLB invalidation policy: strict'
result $? iommu_strict_mode

igb=$(igb_bdf)
igb=${igb:+/sys/bus/pci/devices/$igb}
echo "# igb device: ${igb:-none}"
[ -n "$igb" ] && [ -e "$igb/iommu_group" ]
result $? iommu_igb_in_group

if [ -n "$igb" ] && [ -e "$igb/iommu_group" ]; then
	members=$(ls "$igb/iommu_group/devices")
	echo "# igb group $(basename "$(readlink "$igb/iommu_group")"): $(echo $members)"
	[ "$members" = "$(basename "$igb")" ]
	result $? iommu_igb_group_alone
else
	result 1 iommu_igb_group_alone
fi
exit $((ktap_failures > 0))
