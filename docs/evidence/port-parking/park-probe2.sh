#!/bin/bash
# Probe: NR_IOMMU_PAGES over bind/traffic/park cycles of the DMA port.
. "$(dirname "$0")/lib.sh" # qemu/guest/lib.sh: run from qemu/guest/
n() { echo "# $1: nr_iommu_pages $(vmstat nr_iommu_pages)"; }
port=$(dma_port)
b=$(basename "$(dirname "$(readlink -f "/sys/class/virtio-ports/$port/device")")")
t=/sys/bus/pci/devices/$b/iommu_group/type
d=/sys/bus/pci/devices/$b
drv() { basename "$(readlink "$d/driver")" 2>/dev/null; }
n "boot, type $(cat $t), driver $(drv)"
park() { [ -z "$(drv)" ] || echo "$b" >"$d/driver/unbind"; echo DMA >"$t"; n "park ($1), type $(cat $t)"; }
bind() { echo "$b" >/sys/bus/pci/drivers/virtio-pci/bind; sleep 1; n "bind ($1), driver $(drv)"; }
write() { p=$(dma_port); dd if=/dev/zero of="/dev/$p" bs=32k count=64 status=none; n "write ($1)"; }
for i in 1 2 3; do park strict$i; bind strict$i; write strict$i; done
park strict-end
for i in 1 2 3; do bind fq$i; echo DMA-FQ >"$t"; n "fq$i $(cat $t)"; write fq$i; park fq$i; done
for i in 1 2; do bind plain$i; park plain$i; done
