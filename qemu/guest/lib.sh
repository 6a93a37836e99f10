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

# pool_refuses_params KO ARGS...: each ARGS, a string of PARAM=VALUE words,
# must make insmod KO fail, with a kernel message from iommu_pt naming one of
# its parameters (a refusal for any other reason proves nothing); what went
# wrong is printed as comments. Fails if one was accepted or refused
# silently, or if the module is left loaded.
pool_refuses_params() {
	local ko=$1 args names seen bad=0
	shift
	for args in "$@"; do
		names=$(echo "$args" | grep -o '[a-z_]*=' | tr -d '=' | paste -sd '|')
		# Only the messages of this insmod: the log is never cleared.
		seen=$(dmesg | wc -l)
		# shellcheck disable=SC2086
		if insmod "$ko" $args 2>/dev/null; then
			echo "# insmod $args was accepted"
			rmmod iommu_pt
			bad=1
		elif ! dmesg | tail -n +$((seen + 1)) | grep -Eq "iommu_pt: .*($names)"; then
			echo "# insmod $args was refused without a message naming the parameter:"
			dmesg | tail -n +$((seen + 1)) | sed 's/^/# /'
			bad=1
		fi
	done
	[ "$bad" -eq 0 ] && [ ! -e /sys/module/iommu_pt ]
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

# kernel_reports [ACCEPTED]: prints the kernel log's reports as KTAP comments
# (which scripts/ktap.py also scans) and fails if there is any, except the
# lines in the file ACCEPTED, whole lines of the log that a test accounted for
# (dma_faults_expected).
kernel_reports() {
	local accepted=${1:-/dev/null} count
	count=$(dmesg | grep -Ef "$KERNEL_REPORT_FILE" | grep -cvxFf "$accepted")
	echo "# kernel log: $count warnings or reports$([ "$accepted" = /dev/null ] ||
		echo ", besides $(wc -l <"$accepted") lines accounted for by a test")"
	dmesg | grep -A20 -Ef "$KERNEL_REPORT_FILE" | grep -vxFf "$accepted" | head -n 80 |
		sed 's/^/# kernel: /'
	[ "$count" -eq 0 ]
}

# dma_faults_expected BDF: reads kernel log lines and splits off the DMA
# faults that a test provokes on purpose (vfio_pci_driver_test's
# memcpy_from_unmapped_iova and memcpy_to_unmapped_iova make the device read
# and write an IOVA with nothing mapped): VT-d faults of device BDF for an
# entry that is not present or lacks the access (legacy mode), or a
# first-level entry that is not present (scalable mode), and the "handling
# fault status" line before each. They are printed; anything else on the input is
# printed on stderr. A fault of any other kind (a reserved bit set, a bad
# context entry: what a corrupted table would cause) or of another device is
# never expected.
dma_faults_expected() {
	local bdf=${1//./\.}
	awk -v ok="DMAR: (DRHD: handling fault status reg [0-9a-f]+|\\[DMA (Read|Write) (NO_PASID|PASID 0x0)\\] Request device \\[$bdf\\] fault addr 0x[0-9a-f]+ \\[fault reason 0x0[56]\\] PTE (Read|Write) access is not set|\\[DMA (Read|Write) (NO_PASID|PASID 0x0)\\] Request device \\[$bdf\\] fault addr 0x[0-9a-f]+ \\[fault reason 0x[0-9a-f][0-9a-f]\\] SM: Present bit in first-level paging entry is clear)$" \
		'$0 ~ ok { print; next } { print > "/dev/stderr" }'
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

# checks_result NUMBER NAME PROBLEMS: one nested result ("    ok NUMBER NAME"),
# failed with PROBLEMS, a list of "; problem" items, as its reason if there
# are any; a failure sets set_failed=1 for the suite around it.
checks_result() {
	if [ -z "$3" ]; then
		echo "    ok $1 $2"
	else
		echo "    not ok $1 $2 # ${3#; }"
		set_failed=1
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

# pci_rebind BDF [TYPE...]: unbinds the driver of PCI function BDF, writes
# each TYPE to its IOMMU group's type and binds the driver again. With no
# driver bound, writing "DMA" to a DMA-FQ group gives it a new default domain;
# "DMA-FQ" on a DMA group only starts a flush queue on the same domain; with
# no TYPE, the device comes back to the same domain.
pci_rebind() {
	local dev=/sys/bus/pci/devices/$1 drv t
	shift
	drv=$(basename "$(readlink -f "$dev/driver")")
	[ -n "$drv" ] && [ "$drv" != driver ] || return 1
	echo "${dev##*/}" >"/sys/bus/pci/drivers/$drv/unbind" || return 1
	for t in "$@"; do
		echo "$t" >"$dev/iommu_group/type" || return 1
	done
	echo "${dev##*/}" >"/sys/bus/pci/drivers/$drv/bind"
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
	fi_iommufd_points
}
# iommufd's own fault points (fail_iommufd, CONFIG_IOMMUFD_TEST) count in
# fail-nth like page and slab allocations, and fail with other errors (ENOENT,
# ...). FI_IOMMUFD=off leaves them out, for checks that expect the ENOMEM of a
# failed allocation (reliability.sh): a stack filter with an empty range
# matches no stack, and fail-nth passes over a point whose filter does not
# match. The default, on, is iommufd_fail_nth's setting.
FI_IOMMUFD=${FI_IOMMUFD:-on}
fi_iommufd_points() {
	local d=$fi_dir/fail_iommufd
	[ -d "$d" ] || return 0
	echo 0 >"$d/require-start"
	if [ "$FI_IOMMUFD" = on ]; then
		echo 0xffffffffffffffff >"$d/require-end"
	else
		echo 0 >"$d/require-end"
	fi
}
