#!/bin/bash
# Probe: NR_IOMMU_PAGES around parkings of the DMA port.
. "$(dirname "$0")/lib.sh" # qemu/guest/lib.sh: run from qemu/guest/
bin=$1
n() { echo "# $1: nr_iommu_pages $(vmstat nr_iommu_pages)"; }
n boot
bdf=$(igb_bdf); bind_vfio_pci "$bdf"; vfio=$(vfio_cdev "$bdf")
n igb-vfio
printf '\n\n' | "$bin/iommufd-map" "$vfio" 1 >/dev/null
n attach-once
port=$(dma_port)
dma_bdf=$(basename "$(dirname "$(readlink -f "/sys/class/virtio-ports/$port/device")")")
t=/sys/bus/pci/devices/$dma_bdf/iommu_group/type
echo "# port $port bdf $dma_bdf type $(cat $t)"
pci_fresh_domain "$dma_bdf"; n "park1 ($pci_unbound_driver) $(cat $t)"
sleep 2; n park1+2s
pci_fresh_domain "$dma_bdf"; n "park2 $(cat $t)"
pci_fresh_domain "$dma_bdf"; n "park3 $(cat $t)"
pci_bind "$dma_bdf" virtio-pci; n bound
port=$(dma_port); echo DMA-FQ >"$t"; n "fq $(cat $t)"
dd if=/dev/zero of="/dev/$port" bs=32k count=64 status=none; n wrote
sleep 1; n wrote+1s
pci_fresh_domain "$dma_bdf"; n "park4 $(cat $t)"
pci_bind "$dma_bdf" virtio-pci; n bound2
pci_fresh_domain "$dma_bdf"; n "park5 $(cat $t)"
printf '\n\n' | "$bin/iommufd-map" "$vfio" 64 >/dev/null; n map64
"$bin/stress-map" "$vfio" 3 4 10 >/dev/null 2>&1; n stress10s
