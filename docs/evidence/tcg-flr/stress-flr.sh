#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest: a reproducer for the silent VFIO boot (issue 16). Resets
# the igb (bound to vfio-pci) through sysfs in a loop, which is a PCIe FLR and
# a config-space restore each time, while the 9p root is read and both CPUs
# take their timer ticks; prints a heartbeat line every second with the
# local timer counts per CPU. A guest whose CPU stops taking interrupts stops
# printing, and qemu/watch-guest.sh (--silence) records it.
#
# usage: stress-flr.sh SECONDS [reset|noreset]
#
# reset      PCIe FLRs through sysfs (the default)
# noreset    no device activity: the 9p reader and the heartbeat alone
set -u
. "$(dirname "$0")/../guest/lib.sh"
secs=${1:?usage: stress-flr.sh SECONDS [reset|noreset]}
what=${2:-reset}
case "$what" in reset | noreset) ;; *) echo "stress-flr.sh: reset or noreset, not '$what'" >&2; exit 2 ;; esac
case "$secs" in '' | *[!0-9]* | 0) echo "stress-flr.sh: SECONDS is a number >= 1, not '$secs'" >&2; exit 2 ;; esac
bdf=$(igb_bdf)
bind_vfio_pci "$bdf" || { echo "stress-flr.sh: cannot bind $bdf to vfio-pci" >&2; exit 1; }
dmesg -n 5
resetter=""
[ "$what" = noreset ] || (
	n=0
	while :; do
		echo 1 >"/sys/bus/pci/devices/$bdf/reset" || { echo "reset failed"; exit 1; }
		n=$((n + 1))
		[ $((n % 20)) -ne 0 ] || echo "resets: $n"
	done
) &
[ "$what" = noreset ] || resetter=$!
(while :; do cat /usr/bin/* >/dev/null 2>&1; done) &
reader=$!
for i in $(seq "$secs"); do
	sleep 1
	echo "t=$i $(grep -E '^ *(LOC|RES|CAL):' /proc/interrupts | tr -s ' ' | tr '\n' ' ')"
done
kill $resetter "$reader"
wait
echo "stress-flr.sh: $secs s without a stall"
