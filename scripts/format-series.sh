#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write our series (the commits of the kernel tree after the v21 series) to
# patches/ as b4 would send it: "[PATCH NN/MM]" subjects, and a cover letter,
# patches/iommu-pt-0000-cover-letter.patch, whose subject and text are kept
# from the one already there, with the shortlog, diffstat, base-commit and
# prerequisite-patch-id lines (the v21 patches) made anew. The files keep
# their numbers from 0010 on, the order prepare-tree.sh applies them in; the
# cover letter's name keeps it out of that glob.
#
# usage: scripts/format-series.sh   (after committing a change in $SRC)

. "$(dirname "$0")/lib.sh"

cd "$SRC" || die "no kernel tree at $SRC"
v21=$(git log --format=%H -1 --grep='^rust: page: add `ExclusivePage` for race-free page access$')
[ -n "$v21" ] || die "the v21 series' last patch is not in $SRC"
cover=$REPO/patches/iommu-pt-0000-cover-letter.patch
[ -f "$cover" ] || die "no cover letter to keep the text of: $cover"
out=$(mktemp -d)
git -c user.name="iommu-pt developers" -c user.email=iommu-pt@localhost \
	format-patch -q --cover-letter --base=base -o "$out" "$v21..HEAD" ||
	die "git format-patch failed"
n=$(find "$out" -mindepth 1 -maxdepth 1 ! -name '0000-*' | wc -l)
# The new cover letter: its header down to the subject, the kept subject and
# text, then git's shortlog onwards.
subject=$(sed -n 's/^Subject: \[PATCH [0-9]*\/[0-9]*\] //p' "$cover" | head -n1)
text=$(awk 'f && /^iommu-pt developers \([0-9]+\):$/ { exit } f { print } /^$/ && !f && h { f = 1 } /^Subject:/ { h = 1 }' "$cover")
[ -n "$subject" ] && [ -n "$text" ] || die "cannot read the subject and text of $cover"
{
	sed -n '1,/^Subject:/p' "$out/0000-cover-letter.patch" | sed "s/\*\*\* SUBJECT HERE \*\*\*/$subject/"
	echo
	printf '%s\n\n' "$text"
	sed -n '/^iommu-pt developers ([0-9]*):$/,$p' "$out/0000-cover-letter.patch"
} >"$cover.new"
rm -f "$REPO"/patches/00[1-9][0-9]-*.patch
i=10
for f in "$out"/00[0-9][0-9]-*.patch; do
	[ "$(basename "$f")" = 0000-cover-letter.patch ] && continue
	name=$(basename "$f" | sed 's/^[0-9]*-//')
	cp "$f" "$REPO/patches/$(printf '%04d' "$i")-$name"
	i=$((i + 1))
done
mv "$cover.new" "$cover"
rm -rf "$out"
log "patches/0010-$(printf '%04d' $((i - 1))): $n patches, and the cover letter $(basename "$cover")"
