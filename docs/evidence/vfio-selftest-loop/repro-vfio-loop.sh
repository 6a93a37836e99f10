#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: a reproducer, not a test. Runs one VFIO selftest binary
# N times on the igb bound to vfio-pci, each output line prefixed with the
# run's number and the seconds since the run began, then the failed runs and
# the kernel's reports. For a failure that comes once in hundreds of tests,
# such as CI's memcpy_storm timeout in scalable mode (patch 0018), e.g.:
#   qemu/run-guest.sh --mode scalable --timeout 3600 -- \
#     qemu/repro/repro-vfio-loop.sh /mnt/iommu-pt-work/vfio-selftests \
#     vfio_pci_driver_test 10
# (about 260 s a run in scalable mode under TCG). Kernel warnings and errors
# go to the console too, so a hang shows where it happened.
#
# usage: repro-vfio-loop.sh SELFTEST_DIR BINARY N [ARGS...]
set -u
. "$(dirname "$0")/../guest/lib.sh"
if [ $# -lt 3 ]; then
	echo "usage: repro-vfio-loop.sh SELFTEST_DIR BINARY N [ARGS...]" >&2
	exit 2
fi
tests=$1 binary=$2 n=$3
shift 3
case "$n" in '' | *[!0-9]* | 0) echo "repro-vfio-loop.sh: N is a number of runs >= 1, not '$n'" >&2; exit 2 ;; esac
[ -x "$tests/$binary" ] || { echo "repro-vfio-loop.sh: no $tests/$binary" >&2; exit 2; }
dmesg -n 5
bdf=$(igb_bdf)
bind_vfio_pci "$bdf" || { echo "repro-vfio-loop.sh: cannot bind $bdf to vfio-pci" >&2; exit 1; }
failed=""
for i in $(seq 1 "$n"); do
	t0=$(date +%s.%N)
	VFIO_SELFTESTS_BDF=$bdf "$tests/$binary" "$@" 2>&1 |
		while IFS= read -r line; do
			awk -v i="$i" -v a="$t0" -v b="$(date +%s.%N)" -v l="$line" \
				'BEGIN { printf "r%d %7.1f %s\n", i, b - a, l }'
		done
	rc=${PIPESTATUS[0]}
	echo "run $i: exit status $rc"
	[ "$rc" -eq 0 ] || failed="$failed $i"
done
echo "failed runs:${failed:- none} (of $n)"
kernel_reports
