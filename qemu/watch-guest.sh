#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Watches a guest boot's log. When it has not grown for SILENCE seconds, the
# guest has gone quiet (a hang the hung task detector did not catch: a task
# that waits killably, or a guest with no timer left), so this records what
# QEMU and the host see, into DUMP:
#   - QEMU's view through QMP: every vCPU's registers (HLT=1 is a halted
#     vCPU, IF in RFL says whether it can take an interrupt), each local
#     APIC (IRR, ISR, TPR/PPR, the LVT timer and its count), the PIC, the
#     interrupt counters, the PCI devices, and the state of every virtqueue
#     of the 9p root and the console ports (a request QEMU never took or
#     never signalled);
#   - the QEMU process's threads: state, CPU time over 5 s, where they sleep;
#     and their stacks if gdb is on the host;
# then injects an NMI. The guest boots with unknown_nmi_panic and
# panic_sys_info (qemu/run-guest.sh), so a guest whose CPUs still take an
# NMI panics and prints its blocked tasks, every CPU's backtrace, its timers
# and its whole log, and exits. A guest that does not exit within 120 s is
# stopped through QMP.
#
# usage: qemu/watch-guest.sh LOG QMP_SOCKET SILENCE DUMP

set -u
log=$1 sock=$2 silence=$3 dump=$4
here=$(dirname "$0")

qemu_pid() { pgrep -f "qemu-system-x86_64 .*$sock" | head -n 1; }

threads() {
	local pid=$1 t
	for t in /proc/"$pid"/task/*; do
		# After "pid (comm) ": state, then utime and stime are fields 12, 13.
		printf '%-6s %-18s %s wchan=%s\n' "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" \
			"$(sed 's/^.*) //' "$t/stat" 2>/dev/null | awk '{print "state=" $1, "utime=" $12, "stime=" $13}')" \
			"$(cat "$t/wchan" 2>/dev/null)"
	done
}

size=-1 quiet=0
while sleep 10; do
	now=$(stat -c %s "$log" 2>/dev/null || echo 0)
	if [ "$now" != "$size" ]; then
		size=$now quiet=0
		continue
	fi
	quiet=$((quiet + 10))
	[ "$quiet" -ge "$silence" ] && break
done

pid=$(qemu_pid)
{
	echo "=== watch-guest: no output for $quiet s, $(date -u +%FT%TZ); QEMU pid ${pid:-not found}"
	python3 "$here/qmp.py" "$sock" "info status" "info registers -a" \
		"info lapic 0" "info lapic 1" "info pic" "info irq" "info pci"
	# The IOMMU's and the igb's properties as QEMU has them (intremap, eim,
	# x-flts...): QEMU has no command that shows their registers.
	echo "### info qtree: the intel-iommu and igb devices"
	python3 "$here/qmp.py" "$sock" "info qtree" |
		awk '/dev: (intel-iommu|igb)/ { on = 1; ind = match($0, /[^ ]/); print; next }
			on && match($0, /[^ ]/) > ind { print; next } { on = 0 }'
	# Every virtqueue of the 9p root and of virtme's serial ports: requests
	# the guest made available (shadow_avail_idx) that QEMU has not taken
	# (last_avail_idx), or completed (used_idx) without an interrupt
	# (signalled_used).
	echo "### virtqueues: path queue inuse last_avail_idx shadow_avail_idx used_idx signalled_used"
	python3 "$here/qmp.py" "$sock" "info virtio" | awk '$2 ~ /^\[virtio-/ { print $1, $2 }' |
		while read -r path kind; do
			for q in 0 1 2 3; do
				status=$(python3 "$here/qmp.py" "$sock" "info virtio-queue-status $path $q" | tr -d '\r')
				echo "$status" |
					awk -v p="$path $kind q$q" '$1 ~ /^(inuse|last_avail_idx|shadow_avail_idx|used_idx|signalled_used):$/ { v = v " " $2 }
						END { if (v != "") print p v }'
				# What the guest sees: the used ring's idx in guest memory
				# (QEMU's used_idx reaches the guest only through it) and
				# the avail ring's flags and idx.
				used=$(echo "$status" | awk '$1 == "used:" { print $2 }')
				avail=$(echo "$status" | awk '$1 == "avail:" { print $2 }')
				[ -n "$used" ] && [ "$used" != 0x0000000000000000 ] || continue
				printf '  in guest memory: used.idx %s avail.flags,idx %s\n' \
					"$(python3 "$here/qmp.py" "$sock" "xp /1hx $((used + 2))" | awk -F': ' 'NR == 2 { print $2 }')" \
					"$(python3 "$here/qmp.py" "$sock" "xp /2hx $avail" | awk -F': ' 'NR == 2 { print $2 }')"
			done
		done
	echo "### vCPU instruction pointers 5 s later (the same values: halted or stuck)"
	sleep 5
	python3 "$here/qmp.py" "$sock" "info registers -a" | grep -E '^(###|CPU#|RAX|RIP)'
	if [ -n "$pid" ]; then
		echo "### QEMU threads (state, CPU ticks, wait channel)"
		threads "$pid"
		sleep 5
		echo "### QEMU threads 5 s later"
		threads "$pid"
		if command -v gdb >/dev/null; then
			echo "### QEMU thread stacks (gdb)"
			timeout 60 gdb -q -p "$pid" -batch -ex 'thread apply all bt 15' 2>&1 |
				grep -vE '^(\[New LWP|warning: )'
		fi
	fi
	echo "### injecting an NMI: the guest panics with its own view (unknown_nmi_panic)"
	python3 "$here/qmp.py" "$sock" "nmi"
} >"$dump" 2>&1

for _ in $(seq 24); do
	[ -n "$(qemu_pid)" ] || exit 0
	sleep 5
done
echo "=== watch-guest: the guest did not exit within 120 s of the NMI; stopping QEMU" >>"$dump"
python3 "$here/qmp.py" "$sock" "quit" >>"$dump" 2>&1
