# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # sets variables for the scripts that source it
# Common settings and helpers for the iommu-pt scripts. Source it, do not run it.
#
# Everything large lives in a cache outside the repository:
#   $IOMMU_PT_CACHE/root     Debian 13 toolchain root (mmdebstrap)
#   $IOMMU_PT_CACHE/work/    kernel tree, build directories, guest artefacts, logs
#                            (guest logs in work/out, IOMMU_PT_OUT, which must stay under work/)

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${IOMMU_PT_CACHE:-/var/cache/iommu-pt}
ROOT=$CACHE/root
WORK=$CACHE/work
SRC=$WORK/linux
BUILD=${IOMMU_PT_BUILD:-$WORK/build}
OUT=${IOMMU_PT_OUT:-$WORK/out}
# The iommu-pt module built against $BUILD; it must stay under $WORK, which the
# guest sees at $GUEST_WORK.
MODULE_OUT=${IOMMU_PT_MODULE_OUT:-$WORK/module}
# Where the guest sees $WORK (read-only; $OUT stays writable at its own path) and
# the repository: virtme-ng overlays /var, /tmp, /home... in the guest, which
# would hide them at their own paths.
GUEST_WORK=/mnt/iommu-pt-work
GUEST_REPO=/mnt/iommu-pt-repo
GUEST_MODULE=$GUEST_WORK/${MODULE_OUT#"$WORK"/}/iommu_pt.ko
# The test programs of qemu/guest/*.c, built against $BUILD's UAPI; under $WORK
# too (a mutant of one of them is built aside, scripts/mutants/run.sh).
GUEST_BIN_OUT=${IOMMU_PT_GUEST_BIN:-$WORK/guest-bin}
GUEST_BIN=$GUEST_WORK/${GUEST_BIN_OUT#"$WORK"/}

# The kernel we test against. If the archive no longer carries it, the newest
# linux-source-7.x it does carry is taken instead (see prepare-tree.sh).
KERNEL_PKG=${IOMMU_PT_KERNEL_PKG:-linux-source-7.3}
KERNEL_VERSION=${IOMMU_PT_KERNEL_VERSION:-7.3.4}

log() { printf '[iommu-pt] %s\n' "$*" >&2; }
warn() { printf '[iommu-pt] warning: %s\n' "$*" >&2; }
die() {
	printf '[iommu-pt] error: %s\n' "$*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		die "must run as root (mmdebstrap, chroot and bind mounts need it); try: sudo $0"
}

# Run a command inside the toolchain root, in a private mount namespace so
# nothing stays mounted afterwards. The repository and the work directory are
# visible at the same paths as outside.
in_root() {
	[ -x "$ROOT/usr/bin/apt-get" ] || die "toolchain root missing at $ROOT; run scripts/setup-root.sh"
	mkdir -p "$WORK"
	unshare --mount --propagation private -- /bin/bash -euc '
		r=$1 repo=$2 work=$3
		shift 3
		mount --rbind /proc "$r/proc"
		mount --rbind /sys "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs tmpfs "$r/tmp"
		# After the tmpfs, so that a repository or cache under /tmp gets its mount point.
		mkdir -p "$r$repo" "$r$work"
		mount --bind "$repo" "$r$repo"
		mount --bind "$work" "$r$work"
		cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
		exec chroot "$r" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			LANG=C.UTF-8 "$@"
	' in_root "$ROOT" "$REPO" "$WORK" "$@"
}

# Seconds since the epoch, for the timing lines the scripts print.
now() { date +%s; }
