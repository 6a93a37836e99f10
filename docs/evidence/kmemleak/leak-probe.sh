#!/bin/bash
# Probe: does one KUnit case of iommu_pt leak its pool (kmemleak)?
ko=$1
k=/sys/kernel/debug/kmemleak
echo clear >$k
insmod "$ko" zero_check=1
grep iommu_pt /proc/modules
sleep 2
for i in 1 2 3; do echo scan >$k; sleep 6; done
echo "# kmemleak with the module loaded:"
sed 's/^/# /' $k | head -80
rmmod iommu_pt
for i in 1 2; do echo scan >$k; sleep 6; done
echo "# kmemleak after the unload:"
sed 's/^/# /' $k | grep -c unreferenced
