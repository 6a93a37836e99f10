# SPDX-License-Identifier: GPL-2.0
# Helpers the guest scripts share. Source it, do not run it.

# The emulated 82576 NIC (QEMU's igb) that the VFIO tests use.
IGB_ID=0x8086:0x10c9
POOL_STATS=/sys/kernel/debug/iommu_pt/stats
# What the kernel log may not contain (warnings, oopses, KASAN, UBSAN,
# kmemleak, lockdep and might_sleep reports, hung tasks, RCU stalls, lockups):
# the extended regular expressions of scripts/kernel-report.ere, which
# scripts/ktap.py uses too. grep -E -f "$KERNEL_REPORT_FILE".
KERNEL_REPORT_FILE=$(dirname "${BASH_SOURCE[0]}")/../../scripts/kernel-report.ere
[ -s "$KERNEL_REPORT_FILE" ] || { echo "lib.sh: no $KERNEL_REPORT_FILE" >&2; exit 1; }

# Prints the PCI address of the igb, or nothing.
igb_bdf() {
	local d
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor"):$(cat "$d/device")" = "$IGB_ID" ]; then
			basename "$d"
			return
		fi
	done
}

# bind_vfio_pci BDF: binds the device to vfio-pci unless it already is.
bind_vfio_pci() {
	local dev=/sys/bus/pci/devices/$1
	[ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" = vfio-pci ] && return 0
	[ -e "$dev/driver" ] && echo "$1" >"$dev/driver/unbind"
	echo vfio-pci >"$dev/driver_override"
	echo "$1" >/sys/bus/pci/drivers/vfio-pci/bind 2>/dev/null
	[ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" = vfio-pci ]
}

# vfio_cdev BDF: the device's VFIO cdev, /dev/vfio/devices/vfioN.
vfio_cdev() {
	echo "/dev/vfio/devices/$(ls "/sys/bus/pci/devices/$1/vfio-dev" 2>/dev/null | head -n 1)"
}

# pool_stat NAME: one counter of the iommu_pt module.
pool_stat() { awk -v k="$1" '$1 == k { print $2 }' "$POOL_STATS"; }

# pool_load KO [PARAM=VALUE...]: loads iommu_pt with zero_check=1, so that
# every table generic_pt frees as all zero is checked before the pool reuses
# it (a failure counts in zero_check_failures).
pool_load() {
	local ko=$1
	shift
	insmod "$ko" zero_check=1 "$@"
}

# pool_unload: unloads iommu_pt, first adding its frees_zeroed and
# zero_check_failures to $ZERO_CHECK_LOG (the counters die with the module).
ZERO_CHECK_LOG=/tmp/iommu-pt-zero-check
pool_unload() {
	if [ -r "$POOL_STATS" ]; then
		echo "$(pool_stat frees_zeroed) $(pool_stat zero_check_failures)" >>"$ZERO_CHECK_LOG"
	fi
	rmmod iommu_pt
}

# zero_check_result NAME: one result, failed if a table freed as all zero was
# not, over every load pool_unload saw, or if no load reported counters.
zero_check_result() {
	local checked failed loads
	loads=$(wc -l <"$ZERO_CHECK_LOG" 2>/dev/null || echo 0)
	read -r checked failed < <(awk '{ c += $1; f += $2 } END { print c + 0, f + 0 }' "$ZERO_CHECK_LOG" 2>/dev/null)
	echo "# zero check over $loads loads: ${checked:-0} tables freed all zero checked, ${failed:-0} were not"
	[ "$loads" -gt 0 ] && [ "${failed:-1}" -eq 0 ]
	result $? "$1"
}

# vmstat NAME: a /proc/vmstat counter, with the per-CPU deltas folded in first
# (/proc/vmstat alone drifts by the stat threshold).
vmstat() {
	echo 1 >/proc/sys/vm/stat_refresh
	awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat
}

# Keeps kernel messages in the log buffer, off the console, where they could
# cut a result line in two; kernel_reports prints the reports among them.
quiet_console() { dmesg -n 1; }

# kernel_reports: prints the kernel log's reports as KTAP comments (which
# scripts/ktap.py also scans) and fails if there is any.
kernel_reports() {
	local count
	count=$(dmesg | grep -cEf "$KERNEL_REPORT_FILE")
	echo "# kernel log: $count warnings or reports"
	dmesg | grep -A20 -Ef "$KERNEL_REPORT_FILE" | head -n 80 | sed 's/^/# kernel: /'
	[ "$count" -eq 0 ]
}

# result STATUS NAME: one KTAP result line, numbered; a failure counts in
# $ktap_failures.
ktap_n=0
ktap_failures=0
result() {
	ktap_n=$((ktap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $ktap_n $2"
	else
		echo "not ok $ktap_n $2"
		ktap_failures=$((ktap_failures + 1))
	fi
}

# dma_port: the virtio port named iommu-pt.dma (vportNpM), once udev made
# its device node; empty if there is none.
dma_port() {
	local n p i
	for i in $(seq 1 20); do
		for n in /sys/class/virtio-ports/*/name; do
			[ "$(cat "$n" 2>/dev/null)" = iommu-pt.dma ] || continue
			p=$(basename "$(dirname "$n")")
			[ -c "/dev/$p" ] && { echo "$p"; return 0; }
		done
		sleep 0.5
	done
	return 1
}

# dma_writer_start PORT: lazy DMA-API traffic, in the background: writes of
# 64 x 32 KiB to /dev/PORT (each 32 KiB write maps a buffer for the device and
# unmaps it), each write bounded by 60 s, until dma_writer_stop. Counted in a
# file, not a pipe: what a pipe held is lost when bash reaps its writer.
dma_writer_start() {
	dma_writer_stopfile=$(mktemp -u)
	dma_writer_log=$(mktemp)
	(
		while [ ! -e "$dma_writer_stopfile" ]; do
			timeout 60 dd if=/dev/zero of="/dev/$1" bs=32k count=64 status=none ||
				{ echo failed; break; }
			echo 64
		done >>"$dma_writer_log"
	) &
	dma_writer_pid=$!
}

# dma_writer_stop: stops the writer after its current dd and waits for it
# (no write outlives this call, so the port can be unbound next); sets
# dma_writer_count to the number of 32 KiB writes. Fails if a write failed
# or none completed. Not from a $(...) subshell: only this shell can wait.
dma_writer_stop() {
	local out
	touch "$dma_writer_stopfile"
	wait "$dma_writer_pid"
	out=$(cat "$dma_writer_log")
	rm -f "$dma_writer_stopfile" "$dma_writer_log"
	dma_writer_count=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }')
	case "$out" in *failed*) return 1 ;; esac
	[ "$dma_writer_count" -gt 0 ]
}

# Fault injection (CONFIG_FAULT_INJECTION_DEBUG_FS): fi_set KNOB VALUE sets a
# knob of both fail_page_alloc and failslab; fi_reset puts every knob back to
# "inject nothing", with order-0 page allocations (every page table)
# injectable and nothing filtered by stack.
fi_dir=/sys/kernel/debug
fi_set() {
	local a
	for a in fail_page_alloc failslab; do
		echo "$2" >"$fi_dir/$a/$1"
	done
}
fi_reset() {
	fi_set probability 0
	fi_set times -1
	fi_set interval 1
	fi_set verbose 0
	fi_set task-filter N
	fi_set ignore-gfp-wait N
	fi_set require-start 0
	fi_set require-end 0xffffffffffffffff
	echo 0 >"$fi_dir/fail_page_alloc/min-order"
	echo N >"$fi_dir/fail_page_alloc/ignore-gfp-highmem"
}
