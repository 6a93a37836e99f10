#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Self-test of the guest library's pure functions (qemu/guest/lib.sh), run on
# the host by stage 0 (scripts/check-style.sh) in well under a second: each
# check that decides what a stage accepts is fed what it must accept and what
# it must refuse.
#  - dma_faults_expected: the igb's not-present DMA faults (legacy and
#    scalable mode, with their "handling fault status" lines) are expected;
#    a fault of another device, a fault of another kind (reserved bits set,
#    a bad context entry) and any other report are not;
#  - checks_result: a result line without problems passes, one with problems
#    fails with them as its reason and marks the suite failed.
# Exits 1 if any expectation is wrong.

set -u
. "$(dirname "$0")/../qemu/guest/lib.sh"

failed=0
# expect NAME WANT GOT: one expectation.
expect() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1"
	else
		echo "WRONG: $1: want '$2', got '$3'"
		failed=1
	fi
}

igb=0000:00:0c.0
expected='[   71.696684] DMAR: DRHD: handling fault status reg 2
[   71.697012] DMAR: [DMA Read NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x06] PTE Read access is not set
[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x05] PTE Write access is not set
[   68.777045] DMAR: [DMA Read PASID 0x0] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x71] SM: Present bit in first-level paging entry is clear'
unexpected='[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0d.0] fault addr 0x80000000 [fault reason 0x05] PTE Write access is not set
[   76.822106] DMAR: [DMA Write NO_PASID] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x0c] non-zero reserved fields in PTE
[   76.822106] DMAR: [DMA Read NO_PASID] Request device [0000:00:0c.0] fault addr 0x0 [fault reason 0x03] Invalid context entry
[   76.822106] DMAR: [DMA Read PASID 0x0] Request device [0000:00:0c.0] fault addr 0x80000000 [fault reason 0x79] SM: Read/Write permission error in second-level paging entry
[   80.000000] WARNING: CPU: 0 PID: 1 at drivers/iommu/iommu-pages.c:60'
out=$(mktemp)
err=$(mktemp)
printf '%s\n%s\n' "$expected" "$unexpected" | dma_faults_expected "$igb" >"$out" 2>"$err"
expect "dma_faults_expected keeps the igb's not-present faults" "$expected" "$(cat "$out")"
expect "dma_faults_expected refuses the rest" "$unexpected" "$(cat "$err")"
printf '%s\n' "$expected" | dma_faults_expected 0000:00:0d.0 >"$out" 2>"$err"
expect "dma_faults_expected refuses the igb's faults for another device" \
	"$(grep -c 'Request device' <<<"$expected")" "$(grep -c 'Request device' "$err")"
rm -f "$out" "$err"

set_failed=0
expect "checks_result without problems" "    ok 2 x_checks" "$(checks_result 2 x_checks "")"
expect "checks_result without problems leaves the suite passing" 0 "$set_failed"
line=$(checks_result 4 y_checks "; one; two")
expect "checks_result with problems" "    not ok 4 y_checks # one; two" "$line"
checks_result 4 y_checks "; one" >/dev/null
expect "checks_result with problems fails the suite" 1 "$set_failed"

[ "$failed" -eq 0 ] && echo "guest library self-test: every expectation met"
exit "$failed"
