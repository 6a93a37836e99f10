#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print "kvm" if a KVM guest really boots on this machine, "tcg" otherwise.
#
# /dev/kvm opening is not enough: on some hosts a VM is created but the guest
# never gets past "Decompressing Linux...". So boot the guest kernel once under
# KVM with a short time limit and look for a command's output. The answer is
# cached per host kernel and QEMU version in $IOMMU_PT_CACHE/work/kvm-probe.

. "$(dirname "$0")/../scripts/lib.sh"

if [ ! -e /dev/kvm ]; then
	warn "/dev/kvm missing: using TCG (software emulation)"
	echo tcg
	exit 0
fi

key="$(uname -r) $(in_root qemu-system-x86_64 --version | head -n1)"
cache=$WORK/kvm-probe
if [ -f "$cache" ] && [ "$(sed -n 2p "$cache")" = "$key" ]; then
	head -n1 "$cache"
	exit 0
fi

kernel=$BUILD/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "kvm-probe: no guest kernel at $kernel yet; build it first"
marker=iommu-pt-kvm-probe-ok
log "probing KVM with a 60 s boot (cached afterwards in $cache)"
# The same CPU model as qemu/run-guest.sh uses under KVM.
out=$( (cd / && in_root timeout --kill-after=5 60 vng --run "$kernel" --disable-microvm \
	--cpus 1 --memory 1G --qemu-opts="-cpu max" --exec "echo $marker") </dev/null 2>&1 || true)
if grep -q "$marker" <<<"$out"; then
	answer=kvm
else
	answer=tcg
	reason=$(grep -m1 -i 'error\|assert' <<<"$out" || echo "no output within 60 s")
	warn "KVM does not run a guest here ($reason): using TCG"
fi
printf '%s\n%s\n' "$answer" "$key" >"$cache"
echo "$answer"
