#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Obtain Debian's linux-source package inside the toolchain root, unpack it
# into $IOMMU_PT_CACHE/work/linux as a git tree with a base commit, and apply
# patches/*.patch on top with git am.
#
# When the patches change, they are applied to the base in a scratch worktree
# and the tree is then checked out to the result, so that only the files whose
# content differs get a new mtime and the next build stays incremental.

. "$(dirname "$0")/lib.sh"

need_root
start=$(now)

GIT=(git -c user.name=iommu-pt -c user.email=iommu-pt@localhost -c advice.detachedHead=false)

# Pick the package version: the pinned upstream version if the archive has it,
# otherwise the newest linux-source-7.x it carries.
pick_source_package() {
	local ver
	ver=$(in_root apt-cache madison "$KERNEL_PKG" 2>/dev/null |
		awk -v v="$KERNEL_VERSION" '$3 ~ "^"v"-" { print $3; exit }')
	if [ -n "$ver" ]; then
		echo "$KERNEL_PKG=$ver"
		return
	fi
	local pkg
	pkg=$(in_root apt-cache pkgnames linux-source-7. 2>/dev/null | sort -V | tail -n1)
	[ -n "$pkg" ] || die "the archive has neither $KERNEL_PKG $KERNEL_VERSION nor any linux-source-7.x; check the root's apt sources (trixie-backports)"
	ver=$(in_root apt-cache madison "$pkg" | awk '{ print $3; exit }')
	warn "$KERNEL_PKG $KERNEL_VERSION is no longer in the archive; using $pkg $ver instead"
	echo "$pkg=$ver"
}

if [ ! -f "$SRC/.iommu-pt-base" ]; then
	spec=$(pick_source_package)
	pkg=${spec%%=*}
	log "installing $spec in the root"
	in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$spec" >/dev/null ||
		die "apt-get install $spec failed inside the root"
	tarball=$(ls "$ROOT"/usr/src/"$pkg".tar.* 2>/dev/null | head -n1)
	[ -n "$tarball" ] || die "$pkg installed but no /usr/src/$pkg.tar.* in the root"

	log "unpacking $(basename "$tarball") into $SRC"
	rm -rf "$SRC" "$SRC.tmp"
	mkdir -p "$SRC.tmp"
	tar -C "$SRC.tmp" --strip-components=1 -xf "$tarball"
	mv "$SRC.tmp" "$SRC"
	cd "$SRC" || die "cannot enter $SRC"
	"${GIT[@]}" init -q
	"${GIT[@]}" add -A -f .
	"${GIT[@]}" commit -q -m "base: Debian $spec"
	"${GIT[@]}" tag -f base >/dev/null
	echo "$spec" >"$SRC/.iommu-pt-base"
	# The marker must not show up as an untracked file in the tree.
	echo ".iommu-pt-base" >>"$SRC/.git/info/exclude"
	echo ".iommu-pt-patches" >>"$SRC/.git/info/exclude"
fi
cd "$SRC" || die "cannot enter $SRC"

mapfile -t patches < <(printf '%s\n' "$REPO"/patches/[0-9][0-9][0-9][0-9]-*.patch | grep -v '/0000-')
want=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
# The stamp holds the patches' hash and the commit they produced.
have="" have_commit=""
if [ -f .iommu-pt-patches ]; then
	read -r have have_commit <.iommu-pt-patches || true
fi

if [ "$want" = "$have" ] && [ "$(git rev-parse HEAD)" = "$have_commit" ] &&
	[ -z "$(git status --porcelain --untracked-files=no)" ]; then
	log "tree $SRC up to date: $(cat .iommu-pt-base) + ${#patches[@]} patches ($(($(now) - start)) s)"
	exit 0
fi

log "applying ${#patches[@]} patches to the base in a scratch worktree"
scratch=$WORK/am-scratch
"${GIT[@]}" worktree remove --force "$scratch" 2>/dev/null || rm -rf "$scratch"
"${GIT[@]}" worktree prune
"${GIT[@]}" worktree add -q --detach "$scratch" base
if ! (cd "$scratch" && "${GIT[@]}" am -q --whitespace=nowarn "${patches[@]}"); then
	(cd "$scratch" && git am --show-current-patch=diff | head -n 20) >&2 || true
	(cd "$scratch" && git am --abort) || true
	die "a patch in patches/ does not apply to $(cat .iommu-pt-base); the tree is unchanged"
fi
result=$(cd "$scratch" && git rev-parse HEAD)
"${GIT[@]}" worktree remove --force "$scratch"

# Moves only the files whose content differs, leaving the others' mtimes alone.
"${GIT[@]}" checkout -q -f --detach "$result"
echo "$want $result" >.iommu-pt-patches
log "tree at $(git log --oneline -1) ($(($(now) - start)) s)"
