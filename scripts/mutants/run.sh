#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Mutation testing: shows that the checks fail when what they guard is
# broken. Each scripts/mutants/NAME.patch plants one defect; its header says
# what the defect is ("Mutant:"), which stage must catch it ("Stage:") and
# with which result ("Caught by:"); an "Env:" line may narrow the stage with
# scripts/test.sh's variables (VAR=value ...). For each, a scratch copy of the
# repository gets the patch, the module (and, for a mutant of a test program
# in qemu/guest/*.c, the test programs) is built from it, and only that stage
# runs (scripts/test.sh --skip-build --skip-style --stages STAGE, from the
# scratch copy, so the guest runs the mutant's scripts too). A stage that
# fails in one of the tests its "Caught by:" names has caught the mutant; one
# that fails only elsewhere is ELSEWHERE, one that passes has MISSED it. A
# mutant that does not apply or build is BROKEN. Only "caught" counts.
#
# A "Tree: kernel" mutant patches the kernel tree ($SRC, paths as in the
# tree) instead of the repository: it is applied in place, the kernel built
# incrementally, the stage run, and the patch undone and the kernel built
# again. It changes the kernel every guest boots: run it when no other guest
# or build runs.
#
# A "Kernel: rt" (or "Kernel: debug") mutant runs on that checking kernel
# (scripts/kernels.sh, as scripts/test-debug.sh boots it): the kernel is
# built (incrementally; about 18 minutes from nothing for rt), with the
# mutant if it is one of the tree, and its stage runs with that kernel's
# settings.
#
# usage: scripts/mutants/run.sh [NAME...]    (default: every mutant)
#
# Logs: $IOMMU_PT_CACHE/work/mutants/NAME/. Exits 1 unless every mutant was
# caught.

. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../kernels.sh"

need_root
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for m in "$REPO"/scripts/mutants/*.patch; do
		names+=("$(basename "$m" .patch)")
	done
fi
[ ${#names[@]} -gt 0 ] || die "no mutants in $REPO/scripts/mutants"
for name in "${names[@]}"; do
	[ -f "$REPO/scripts/mutants/$name.patch" ] || die "no mutant $name (scripts/mutants/$name.patch)"
	case "$(sed -n 's/^Kernel: //p' "$REPO/scripts/mutants/$name.patch")" in
	'' | rt | debug) ;;
	*) die "mutant $name: its Kernel: line names neither rt nor debug" ;;
	esac
done

# with_kernel KERNEL [VAR=value...] COMMAND...: COMMAND with the settings of
# KERNEL (normal, rt or debug; scripts/kernels.sh), then the VAR=value words.
with_kernel() {
	local k=$1
	shift
	(
		[ "$k" = normal ] || kernel_settings "$k"
		exec env "$@"
	)
}

# A kernel mutant is undone and the kernel built again, also when the run is
# interrupted: $SRC and $BUILD are the test command's own.
kernel_mutated=""
kernel_restore() {
	local mutant=$kernel_mutated
	kernel_mutated=""
	{ patch -R -p1 -d "$SRC" --dry-run <"$mutant" && patch -R -p1 -d "$SRC" --quiet <"$mutant"; } \
		>"$WORK/mutants/restore.log" 2>&1 </dev/null ||
		die "cannot undo $mutant in $SRC (see $WORK/mutants/restore.log): run scripts/prepare-tree.sh and scripts/build-kernel.sh"
	with_kernel "$kernel" "$REPO/scripts/build-kernel.sh" >/dev/null ||
		die "the $kernel kernel does not build again after a kernel mutant"
}
trap '[ -z "$kernel_mutated" ] || kernel_restore' EXIT

caught=0
summary=$WORK/mutants/summary
mkdir -p "$WORK/mutants"
: >"$summary"
for name in "${names[@]}"; do
	patch=$REPO/scripts/mutants/$name.patch
	stage=$(sed -n 's/^Stage: //p' "$patch")
	kernel=$(sed -n 's/^Kernel: //p' "$patch")
	kernel=${kernel:-normal}
	dir=$WORK/mutants/$name
	scratch=$dir/repo
	rm -rf "$dir"
	mkdir -p "$scratch"
	start=$(now)
	# The repository's files, not its .git.
	tar -C "$REPO" --exclude=.git -cf - . | tar -C "$scratch" -xf -
	result=MISSED
	guest_bin=$GUEST_BIN_OUT
	! grep -q '^+++ b/qemu/guest/.*\.c' "$patch" || guest_bin=$dir/guest-bin
	# "Tree: kernel": a mutant of the kernel tree, applied to $SRC itself and
	# built incrementally into $BUILD, then undone and built again.
	target=$scratch
	[ "$(sed -n 's/^Tree: //p' "$patch")" != kernel ] || target=$SRC
	# The "Env:" line: VAR=value words for the stage.
	read -r -a mutant_env <<<"$(sed -n 's/^Env: //p' "$patch")"
	# Recorded as applied before it is: an interrupt in between still undoes it.
	# A checking kernel the mutant does not patch is built first if it is not.
	if [ "$kernel" != normal ] && [ "$target" != "$SRC" ] &&
		! with_kernel "$kernel" "$REPO/scripts/build-kernel.sh" >"$dir/build-$kernel.log" 2>&1; then
		# The checking kernel itself, before the mutant: not the mutant's fault.
		result=BROKEN
		warn "the $kernel kernel does not build (see $dir/build-$kernel.log)"
	elif ! { patch -p1 -d "$target" --dry-run <"$patch" &&
		{ [ "$target" != "$SRC" ] || kernel_mutated=$patch; } &&
		patch -p1 -d "$target" --quiet <"$patch"; } >"$dir/apply.log" 2>&1 </dev/null; then
		result=BROKEN
	elif [ "$target" = "$SRC" ] && ! with_kernel "$kernel" "$REPO/scripts/build-kernel.sh" >"$dir/build-kernel.log" 2>&1; then
		result=BROKEN
	elif ! with_kernel "$kernel" IOMMU_PT_MODULE_OUT="$dir/module" "$scratch/scripts/build-module.sh" >"$dir/build.log" 2>&1; then
		result=BROKEN
	elif [ "$guest_bin" != "$GUEST_BIN_OUT" ] &&
		! IOMMU_PT_GUEST_BIN=$dir/guest-bin "$scratch/scripts/build-guest-tools.sh" >"$dir/build-tools.log" 2>&1; then
		# A mutant of a test program: built aside, and used by the stage below.
		result=BROKEN
	elif ! with_kernel "$kernel" "${mutant_env[@]}" \
		IOMMU_PT_MODULE_OUT="$dir/module" IOMMU_PT_OUT="$dir/out" IOMMU_PT_GUEST_BIN="$guest_bin" \
		"$scratch/scripts/test.sh" --skip-build --skip-style --stages "$stage" >"$dir/test.log" 2>&1; then
		# Caught only by a check that guards this defect: a stage that
		# failed elsewhere (a flaky test, a timeout) proves nothing.
		result=ELSEWHERE
		# "Caught by:" lists tests, comma-separated, one in a suite as
		# suite.test; words in parentheses are remarks. Matched against
		# ktap.py's "FAILED TEST: path" lines: suite.test only by a test
		# of that name in that suite, not by one of its name elsewhere.
		for t in $(sed -n 's/^Caught by: //p' "$patch" | sed 's/([^)]*)//g' | tr ',' ' '); do
			case "$t" in
			*.*) path="${t%.*}/${t##*.}" ;;
			*) path=$t ;;
			esac
			if grep -Eq "^FAILED TEST: (.*/)?$path\$" "$dir/test.log"; then
				result=caught
			fi
		done
		[ "$result" != caught ] || caught=$((caught + 1))
	fi
	[ -z "$kernel_mutated" ] || kernel_restore
	# What failed: the first results, else the first kernel report.
	failed=$({ grep -m 3 '^PROBLEM: failed: \|^not ok ' "$dir/test.log" ||
		grep -m 1 -o 'Kernel panic.*\|Oops.*\|BUG:.*' "$dir/test.log" || true; } 2>/dev/null | tr '\n' ' ')
	printf '%-24s %-7s %-12s %5d s  %s\n' "$name" "$stage" "$result" "$(($(now) - start))" \
		"${failed:-(no failed test)}" | tee -a "$summary"
	# Only the logs stay: the scratch repository and the module go.
	rm -rf "$scratch" "$dir/module" "$dir/guest-bin"
done
log "mutants: ${#names[@]} planted, $caught caught (summary: $summary)"
[ "$caught" -eq ${#names[@]} ]
