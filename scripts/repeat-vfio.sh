#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The VFIO stage's boot, N times in a row, to measure how often a boot fails
# or hangs: each run is exactly `scripts/test.sh --stages vfio` for one mode
# (no build, no style check), its guest log and output kept apart.
#
# usage: scripts/repeat-vfio.sh [--mode legacy|scalable|amd|both] [--count N]
#
# --mode   the IOMMU mode of each boot; "both" alternates the two VT-d modes
#          (default)
# --count  boots in all (default 20)
#
# Prints one line per boot (mode, seconds, passed/FAILED/HUNG) and the counts;
# exits 1 if any boot did not pass. Logs: $OUT/repeat-<time>/.

. "$(dirname "$0")/lib.sh"

mode=both
count=20
while [ $# -gt 0 ]; do
	case "$1" in
	--mode) mode=${2:?--mode needs legacy, scalable, amd or both}; shift 2 ;;
	--count) count=${2:?--count needs a number}; shift 2 ;;
	-h | --help) sed -n '4,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "repeat-vfio.sh: unknown argument '$1' (try --help)" ;;
	esac
done
case "$mode" in legacy | scalable | amd | both) ;; *) die "repeat-vfio.sh: --mode is legacy, scalable, amd or both, not '$mode'" ;; esac
case "$count" in '' | *[!0-9]* | 0) die "repeat-vfio.sh: --count takes a number >= 1, not '$count'" ;; esac
need_root

dir=$OUT/repeat-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$dir"
passed=0 failed=0 hung=0
for i in $(seq "$count"); do
	m=$mode
	if [ "$mode" = both ]; then
		m=legacy
		[ $((i % 2)) -eq 1 ] || m=scalable
	fi
	start=$(now)
	result=passed
	IOMMU_PT_VFIO_MODES=$m "$REPO/scripts/test.sh" --skip-build --skip-style --stages vfio \
		>"$dir/$i-$m.out" 2>&1 || result=FAILED
	for f in "$OUT/vfio-$m.log" "$OUT/vfio-$m.log.hang"; do
		[ ! -f "$f" ] || cp "$f" "$dir/$i-$m.${f##*.}"
	done
	if [ -f "$OUT/vfio-$m.log.hang" ] || grep -q 'blocked for more than' "$OUT/vfio-$m.log"; then
		result=HUNG
	fi
	case "$result" in
	passed) passed=$((passed + 1)) ;;
	FAILED) failed=$((failed + 1)) ;;
	HUNG) hung=$((hung + 1)) ;;
	esac
	printf '%2d %-8s %5d s  %s\n' "$i" "$m" "$(($(now) - start))" "$result" | tee -a "$dir/summary"
done
printf 'boots: %d, passed %d, failed %d, hung %d (logs: %s)\n' \
	"$count" "$passed" "$failed" "$hung" "$dir" | tee -a "$dir/summary"
[ "$passed" -eq "$count" ]
