#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the guest kernel with virtme-ng inside the toolchain root: q35 with a
# split irqchip, an emulated VT-d (interrupt remapping on) and an igb NIC for
# VFIO, 4 GiB and 2 vCPUs. The guest sees the root's filesystem, with the
# repository and the work directory at the same paths as on the host.
#
# usage: qemu/run-guest.sh [--mode legacy|scalable|amd] [--icount] [--cpus N]
#                          [--dma-port] [--append ARGS] [--log FILE]
#                          [--timeout SECONDS] [--silence SECONDS]
#                          [--tcg-threads single|multi] [--numa] -- COMMAND...
#
# --mode legacy    second-stage tables (vtdss format), the default
# --mode scalable  scalable mode with first-stage tables (x86_64 format)
# --mode amd       AMD-Vi (QEMU's amd-iommu) with v1 tables (amdv1 format)
# --icount         TCG only: single-threaded TCG with -icount shift=0, where
#                  guest time counts executed instructions (deterministic)
# --cpus N         vCPUs (default 2)
# --tcg-threads single|multi
#                  TCG only: one host thread runs every vCPU in turn (single,
#                  the default; IOMMU_PT_TCG_THREADS sets it too), or one
#                  thread per vCPU (multi). With multi, QEMU 10.0.13 leaves
#                  a vector in service (ISR) for ever on one vCPU's local
#                  APIC while PCIe FLRs, which unmap and remap the device's
#                  BARs, run on the other: the VFIO boots' silent hang
#                  (issue 16; docs/tcg-threads-and-flr.md). The reproducer,
#                  docs/evidence/tcg-flr/stress-flr.sh, stalls within a minute with
#                  multi and ran 400 s without a stall with single.
# --numa           two NUMA nodes of 2 GiB each, one socket per node: the
#                  first half of the vCPUs on node 0, the rest on node 1 (with
#                  one vCPU, node 1 has memory only). One socket per node, or
#                  the kernel warns that CPUs sharing a last-level cache sit
#                  on different nodes (set_cpu_sibling_map()).
# --dma-port       a virtio-serial device behind the IOMMU (iommu_platform=on)
#                  with a port named iommu-pt.dma whose output QEMU discards:
#                  writing to it is DMA-API traffic (map and unmap per write)
# --silence S      with --log: a log that does not grow for S seconds (default
#                  600; 0: never) is a hung guest: qemu/watch-guest.sh records
#                  QEMU's view of it (vCPUs, local APICs, QEMU's threads) in
#                  FILE.hang, printed on stderr, and NMIs the guest, which
#                  panics into FILE with its own (tasks, backtraces, timers)
# IOMMU_PT_ACCEL=kvm|tcg overrides the cached KVM probe (qemu/kvm-probe.sh).
# IOMMU_PT_VTD_EXTRA adds properties to the intel-iommu device (e.g. eim=on), and
# IOMMU_PT_AMD_EXTRA to the amd-iommu device (e.g. xtsup=on);
# IOMMU_PT_QEMU_EXTRA adds QEMU options (e.g. -trace ...), for debugging;
# IOMMU_PT_QEMU is the QEMU binary (a path in the root) instead of the root's.
#
# The guest sees $IOMMU_PT_CACHE/work read-only at $GUEST_WORK and the
# repository at $GUEST_REPO, its working directory (scripts/lib.sh). Guest
# commands are run from there, so relative paths like qemu/guest/... work.

. "$(dirname "$0")/../scripts/lib.sh"

mode=legacy
icount=0
cpus=2
dma_port=0
numa=0
append=""
logfile=""
timeout=1800
silence=${IOMMU_PT_SILENCE:-600}
tcg_threads=${IOMMU_PT_TCG_THREADS:-single}
while [ $# -gt 0 ]; do
	case "$1" in
	--mode) mode=${2:?--mode needs legacy, scalable or amd}; shift 2 ;;
	--icount) icount=1; shift ;;
	--dma-port) dma_port=1; shift ;;
	--numa) numa=1; shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; shift 2 ;;
	--append) append="$append ${2?--append needs an argument}"; shift 2 ;;
	--log) logfile=${2:?--log needs a file}; shift 2 ;;
	--timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
	--silence) silence=${2:?--silence needs seconds}; shift 2 ;;
	--tcg-threads) tcg_threads=${2:?--tcg-threads needs single or multi}; shift 2 ;;
	--) shift; break ;;
	*) die "run-guest.sh: unknown argument '$1' (see the usage at the top of qemu/run-guest.sh)" ;;
	esac
done
[ $# -gt 0 ] || die "run-guest.sh: no guest command given after --"
case "$timeout" in '' | *[!0-9]*) die "run-guest.sh: --timeout takes whole seconds, not '$timeout'" ;; esac
case "$silence" in '' | *[!0-9]*) die "run-guest.sh: --silence (IOMMU_PT_SILENCE) takes whole seconds, not '$silence'" ;; esac
case "$tcg_threads" in single | multi) ;; *) die "run-guest.sh: --tcg-threads (IOMMU_PT_TCG_THREADS) is single or multi, not '$tcg_threads'" ;; esac
case "$cpus" in '' | *[!0-9]* | 0) die "run-guest.sh: --cpus takes a number of vCPUs >= 1, not '$cpus'" ;; esac
[ "$numa" -eq 0 ] || [ "$cpus" -eq 1 ] || [ $((cpus % 2)) -eq 0 ] ||
	die "run-guest.sh: --numa splits the vCPUs between two sockets: give one or an even number, not $cpus"

need_root
mkdir -p "$OUT" "$ROOT$GUEST_WORK" "$ROOT$GUEST_REPO"
kernel=$BUILD/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "no guest kernel at $kernel; run scripts/build-kernel.sh"

# Strict mode: every unmap is flushed before the call returns. A task
# blocked (D state) for longer than the hung task timeout (guest.config)
# panics the guest once userspace runs (a sysctl), which then exits with
# the task's stack on the console (the report sets the console verbose,
# past the tests' quiet_console) instead of waiting out --timeout in
# silence; before the panic, every CPU's backtrace says what the others
# were doing, and the panic replays the whole kernel log, messages kept off
# the console before it included. The detector checks once per timeout, so
# the panic comes one to two timeouts after the task blocked. An NMI from
# the host (qemu/watch-guest.sh, when the guest goes quiet) panics it too;
# every panic prints all tasks' stacks, every CPU's backtrace and the timers.
cmdline="intel_iommu=on iommu.strict=1 iommu.passthrough=0 hung_task_panic=1"
cmdline="$cmdline sysctl.kernel.hung_task_all_cpu_backtrace=1 panic_console_replay=1"
cmdline="$cmdline unknown_nmi_panic panic_sys_info=tasks,timers,all_bt $append"
iommu="intel-iommu,intremap=on${IOMMU_PT_VTD_EXTRA:+,$IOMMU_PT_VTD_EXTRA}"
case "$mode" in
legacy) ;;
scalable)
	iommu="$iommu,x-scalable-mode=on,x-flts=on"
	cmdline="${cmdline/intel_iommu=on/intel_iommu=on,sm_on}"
	;;
amd)
	# QEMU 10.0's amd-iommu translates the DMA of every emulated device
	# behind it (10.2 and later only with dma-remap=on); v2 tables are not
	# offered (no GIOSup), so the driver uses v1 (docs/amd-vi-study.md).
	iommu="amd-iommu,intremap=on${IOMMU_PT_AMD_EXTRA:+,$IOMMU_PT_AMD_EXTRA}"
	cmdline="${cmdline/intel_iommu=on /}"
	# No interrupt remapping, so no MSI isolation, and VFIO refuses the
	# igb without these: QEMU's IVRS names 00:14.0 as the southbridge
	# IOAPIC, where q35 has no device, and 7.3 wants an ISA or SMBus
	# bridge there (check_sb_ioapic()), so it disables remapping; pointing
	# it at q35's ISA bridge (ivrs_ioapic=0@0000:00:1f.0) panics the
	# guest, since QEMU remaps the IOAPIC's interrupts as 00:14.0 ("timer
	# doesn't work through Interrupt-remapped IO-APIC"). DMA translation,
	# what the tests are about, does not depend on it; check-iommu.sh
	# checks that this is the reason.
	cmdline="$cmdline vfio_iommu_type1.allow_unsafe_interrupts=1 iommufd.allow_unsafe_interrupts=1"
	;;
*) die "run-guest.sh: --mode is legacy, scalable or amd, not '$mode'" ;;
esac

accel=${IOMMU_PT_ACCEL:-$("$REPO/qemu/kvm-probe.sh")}
case "$accel" in
kvm) accel_args=() cpu="max" ;;
tcg) accel_args=(--disable-kvm) cpu="max" ;;
*) die "IOMMU_PT_ACCEL is kvm or tcg, not '$accel'" ;;
esac
how=$accel
[ "$accel" != tcg ] || how="$accel, $tcg_threads-threaded"
[ "$icount" -eq 0 ] || how="$accel, icount"
numa_args=()
topology="4 GiB"
if [ "$numa" -eq 1 ]; then
	if [ "$cpus" -eq 1 ]; then
		numa_args=(--numa "2G,cpus=0" --numa 2G)
	else
		numa_args=(--numa "2G,cpus=0-$((cpus / 2 - 1))" --numa "2G,cpus=$((cpus / 2))-$((cpus - 1))")
	fi
	topology="2 NUMA nodes of 2 GiB"
fi
log "booting the guest ($how, $mode mode, $cpus vCPUs, $topology)"

qemu_opts="-machine q35,kernel-irqchip=split -cpu $cpu -device $iommu -device igb,id=vfio0"
# Merged with virtme-ng's own -smp: one socket per node.
[ "$numa" -eq 0 ] || [ "$cpus" -eq 1 ] ||
	qemu_opts="$qemu_opts -smp $cpus,sockets=2,cores=$((cpus / 2)),threads=1"
# Debugging: IOMMU_PT_QEMU_EXTRA adds QEMU options (e.g. "-trace events=F,file=G").
qemu_opts="$qemu_opts${IOMMU_PT_QEMU_EXTRA:+ $IOMMU_PT_QEMU_EXTRA}"
# QMP, for qemu/watch-guest.sh; under $OUT, which the root shares with the host.
qmp_sock=$OUT/qmp-$$.sock
qemu_opts="$qemu_opts -qmp unix:$qmp_sock,server=on,wait=off"
if [ "$dma_port" -eq 1 ]; then
	# packed=on: with a split ring, QEMU (10.0.13, and master as of
	# 2026-12) writes the second half of a used element that crosses a page
	# of the ring's IOVA into the guest page physically after the first
	# half's, not the one the IOMMU maps (address_space_write_cached_slow()
	# translates only the first page): 4 zero bytes at offset 0 of an
	# unrelated page at every wrap of the ring, which corrupted guest memory
	# after a rebind of the port (issue 16, docs/port-rebind/findings.md). A
	# packed ring's 16-byte descriptors never cross a page.
	qemu_opts="$qemu_opts -device virtio-serial-pci,id=iommu_pt_dma,iommu_platform=on,disable-legacy=on,packed=on"
	# Not "-chardev null": a null backend never reports itself open, and a
	# virtio-serial port blocks the guest's writes until its host side is.
	qemu_opts="$qemu_opts -chardev file,id=iommu_pt_dma_sink,path=/dev/null"
	qemu_opts="$qemu_opts -device virtserialport,bus=iommu_pt_dma.0,chardev=iommu_pt_dma_sink,name=iommu-pt.dma"
fi
if [ "$accel" = tcg ] && [ "$icount" -eq 1 ]; then
	# One instruction is one nanosecond of guest time; icount needs one TCG thread.
	qemu_opts="$qemu_opts -accel tcg,thread=single -icount shift=0,align=off,sleep=off"
elif [ "$accel" = tcg ]; then
	qemu_opts="$qemu_opts -accel tcg,thread=$tcg_threads"
elif [ "$icount" -eq 1 ]; then
	die "run-guest.sh: --icount needs TCG; this machine runs guests under KVM"
fi

# The guest's shell must see the same words: quote each one.
printf -v command '%q ' "$@"
args=(vng --run "$kernel" "${accel_args[@]}" ${IOMMU_PT_QEMU:+--qemu "$IOMMU_PT_QEMU"} --disable-microvm --force-9p
	--cpus "$cpus" --memory 4G "${numa_args[@]}" --verbose --rwdir "$OUT" --rodir="$GUEST_WORK=$WORK"
	--rodir="$GUEST_REPO=$REPO"
	--append "$cmdline" --qemu-opts="$qemu_opts" --cwd "$GUEST_REPO"
	--exec "${command% }")

start=$(now)
status=0
if [ -n "$logfile" ]; then
	mkdir -p "$(dirname "$logfile")"
	rm -f "$logfile.hang"
	watcher=""
	if [ "$silence" -gt 0 ]; then
		"$REPO/qemu/watch-guest.sh" "$logfile" "$qmp_sock" "$silence" "$logfile.hang" &
		watcher=$!
	fi
	for attempt in 1 2; do
		# Through a pipe, not straight into the file: QEMU opens its console
		# output again by name, and two descriptions of one file have two
		# offsets, so the kernel console overwrote what the guest command
		# wrote.
		set +e
		(cd "$REPO" && in_root timeout --kill-after=30 "$timeout" "${args[@]}") </dev/null 2>&1 |
			cat >"$logfile"
		status=${PIPESTATUS[0]}
		set -e
		# On a slow guest (the debug kernel under TCG, on a busy host) udev
		# may not have made virtme's console ports when virtme-init looks
		# for them; it then powers off before the command started. Nothing
		# ran, so one more boot is safe.
		[ "$status" -ne 0 ] && [ "$attempt" -eq 1 ] &&
			grep -q 'cannot find script I/O ports' "$logfile" || break
		mv "$logfile" "$logfile.no-ports"
		warn "virtme-init found no console ports (udev too slow; see $logfile.no-ports): booting again"
	done
	[ -z "$watcher" ] || kill "$watcher" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ -f "$logfile.hang" ]; then
		warn "the guest went quiet for $silence s; QEMU's view of it ($logfile.hang):"
		sed 's/^/  # /' "$logfile.hang" >&2
		[ "$status" -ne 0 ] || status=1
	fi
else
	(cd "$REPO" && in_root timeout --kill-after=30 "$timeout" "${args[@]}") </dev/null || status=$?
fi
rm -f "$qmp_sock"
[ "$status" -ne 124 ] || warn "the guest did not finish within $timeout s and was stopped"
log "guest exited with status $status after $(($(now) - start)) s"
exit "$status"
