#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check that every one of our patches (0010 onwards) builds on its own: check
# out the tree at each of them in turn and build the kernel incrementally,
# then go back to the full series. Takes a few minutes per patch.

. "$(dirname "$0")/lib.sh"

need_root
"$REPO/scripts/prepare-tree.sh"
cd "$SRC" || die "cannot enter $SRC"
# Our patches: 0010 onwards (the glob leaves 0001-0009, the v21 series, out).
ours=0
for p in "$REPO"/patches/00[1-9][0-9]-*.patch; do
	if [ -e "$p" ]; then ours=$((ours + 1)); fi
done
mapfile -t commits < <(git rev-list --reverse "HEAD~$ours..HEAD")
status=0
for c in "${commits[@]}"; do
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
[ "$status" -eq 0 ] && log "each of our $ours patches builds on its own"
exit "$status"
