#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check that every one of our patches (0010 onwards) builds on its own: check
# out the tree at each of them in turn and build the kernel incrementally,
# then go back to the full series. Takes a few minutes per patch.
#
# usage: scripts/check-series.sh [NNNN...]
#   NNNN: only the tree at these patches (e.g. 0011 0012), in series order;
#   default: every patch of ours.

. "$(dirname "$0")/lib.sh"

want=" "
for n in "$@"; do
	case "$n" in
	[0-9][0-9][0-9][0-9]) ;;
	*) die "check-series.sh: a patch is named by its four-digit number (0010 onwards), not '$n'" ;;
	esac
	compgen -G "$REPO/patches/$n-*.patch" >/dev/null || die "check-series.sh: no patch $n in $REPO/patches"
	[ "$((10#$n))" -ge 10 ] || die "check-series.sh: $n is a patch of the seed series, not ours (0010 onwards)"
	want="$want$n "
done
need_root
"$REPO/scripts/prepare-tree.sh"
cd "$SRC" || die "cannot enter $SRC"
# Our patches: 0010 onwards (the glob leaves 0001-0009, the v21 series, out).
numbers=()
for p in "$REPO"/patches/00[1-9][0-9]-*.patch; do
	if [ -e "$p" ]; then
		p=${p##*/}
		numbers+=("${p%%-*}")
	fi
done
ours=${#numbers[@]}
mapfile -t commits < <(git rev-list --reverse "HEAD~$ours..HEAD")
status=0
checked=0
for i in "${!commits[@]}"; do
	c=${commits[$i]}
	n=${numbers[$i]}
	[ "$want" = " " ] || [[ "$want" == *" $n "* ]] || continue
	checked=$((checked + 1))
	git -c advice.detachedHead=false checkout -q "$c"
	log "building at: $(git log --oneline -1)"
	if ! "$REPO/scripts/build-kernel.sh"; then
		warn "the series does not build at $(git log --oneline -1)"
		status=1
		break
	fi
done
# Back to the full series (the stamp no longer matches HEAD if we broke off).
git -c advice.detachedHead=false checkout -q "${commits[-1]}"
"$REPO/scripts/prepare-tree.sh"
[ "$status" -eq 0 ] && log "the tree builds at each of the $checked of our $ours patches checked"
exit "$status"
