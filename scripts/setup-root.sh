#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Create (or check) the Debian 13 toolchain root in $IOMMU_PT_CACHE/root.
# Idempotent: a second run that finds every package in place takes seconds.

. "$(dirname "$0")/lib.sh"

# Packages of the root: the Rust-for-Linux toolchain, the kernel build, the
# guest (virtme-ng shares this root into it) and its tests.
PACKAGES=(
	rustc rust-src rustfmt rust-clippy bindgen
	clang lld llvm libclang-dev
	make gcc libc6-dev bc bison flex libelf-dev libssl-dev cpio kmod dwarves
	python3 perl git xz-utils zstd rsync ca-certificates shellcheck
	qemu-system-x86 virtme-ng linux-perf pciutils
	uuid-dev libcap-dev busybox procps iproute2 util-linux mount kmod udev systemd-sysv
)
SUITE=trixie
REQUIRED_GIB=25

need_root
start=$(now)

# The mirror comes from the host's own apt configuration.
host_mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f" |
			grep -E '/debian/?$' | head -n1 || true)
		[ -n "$uri" ] && { echo "${uri%/}"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" |
			grep -E '/debian/?$' | head -n1 || true)
		[ -n "$uri" ] && { echo "${uri%/}"; return; }
	done
}

MIRROR=${IOMMU_PT_MIRROR:-$(host_mirror)}
[ -n "$MIRROR" ] ||
	die "no Debian mirror in the host's apt sources; set IOMMU_PT_MIRROR=<debian mirror URL>"

stamp=$ROOT/.iommu-pt-packages
want="$SUITE ${PACKAGES[*]}"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	log "toolchain root up to date at $ROOT ($(($(now) - start)) s)"
else
	mkdir -p "$CACHE"
	avail=$(df -P -BG "$CACHE" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
	[ "$avail" -ge "$REQUIRED_GIB" ] ||
		die "only ${avail} GiB free under $CACHE, need ${REQUIRED_GIB} GiB; free space or set IOMMU_PT_CACHE to a larger disk"

	python3 - "$MIRROR/dists/$SUITE/Release" <<-'EOF' ||
		import sys, urllib.request
		urllib.request.urlopen(sys.argv[1], timeout=30).read(1)
	EOF
		die "package index unreachable at $MIRROR/dists/$SUITE/Release; check the network or set IOMMU_PT_MIRROR"

	if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
		command -v mmdebstrap >/dev/null || {
			log "installing mmdebstrap on the host"
			apt-get update -q >/dev/null && apt-get install -y -q mmdebstrap >/dev/null ||
				die "cannot install mmdebstrap with apt-get; install it by hand"
		}
		log "creating Debian 13 root at $ROOT from $MIRROR"
		rm -rf "$ROOT"
		mmdebstrap --variant=apt --components=main --skip=check/empty "$SUITE" "$ROOT" \
			"deb $MIRROR $SUITE main" \
			"deb $MIRROR $SUITE-updates main" \
			"deb $MIRROR $SUITE-backports main" ||
			die "mmdebstrap failed; see its output above"
	fi
	log "installing ${#PACKAGES[@]} packages in the root"
	in_root apt-get update -q ||
		die "apt-get update failed inside the root; is the mirror $MIRROR reachable?"
	in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${PACKAGES[@]}" ||
		die "apt-get install failed inside the root; see its output above"
	echo "$want" >"$stamp"
	log "toolchain root ready ($(($(now) - start)) s)"
fi

if [ ! -e /dev/kvm ]; then
	warn "/dev/kvm missing: guests run under TCG (software emulation), which is slower"
fi
