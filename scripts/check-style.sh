#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel style checks: rustfmt over the tree and the module, the module built
# with CLIPPY=1 and no warning, and checkpatch --strict on our own patches
# (0010 onwards; the seed series 0001-0009 stays as posted) and on the
# benchmark's kernel module (bench/kmod); shellcheck on the shell scripts; and
# that every mutant still applies; the self-tests of the KTAP judge, the guest
# library and the guest's table reader.

. "$(dirname "$0")/lib.sh"

need_root
status=0

log "rustfmtcheck: tree"
in_root make -s -C "$SRC" O="$BUILD" LLVM=1 rustfmtcheck || { warn "rustfmtcheck failed on the tree"; status=1; }

log "rustfmt: iommu-pt/"
in_root sh -c "cd '$REPO' && rustfmt --edition 2021 --config-path '$SRC/.rustfmt.toml' --check iommu-pt/iommu_pt.rs" ||
	{ warn "iommu-pt/ is not rustfmt-clean"; status=1; }

log "clippy: iommu-pt/"
# Force the module to be compiled again, with clippy.
touch "$REPO/iommu-pt/iommu_pt.rs"
"$REPO/scripts/build-module.sh" CLIPPY=1 || status=1

# checkpatch NAME ARGS...: checkpatch --strict on one patch or file. It exits 0
# when clean and 1 when it reports; anything else (no checkpatch, a crash) is
# a failure too, never a pass. A new file under a directory MAINTAINERS
# already covers still draws the generic "does MAINTAINERS need updating?"
# warning, and a Fixes: tag naming a mainline commit "Unknown commit id" (the
# base tree is Debian's source, one squashed commit, so git knows no mainline
# id; the tag's form is still checked); nothing else may.
checkpatch() {
	local name=$1 out rc=0 rest
	shift
	out=$(perl "$SRC/scripts/checkpatch.pl" --strict --no-tree -q "$@" 2>&1) || rc=$?
	rest=$(grep -E '^(ERROR|WARNING|CHECK):' <<<"$out" |
		grep -v -e 'does MAINTAINERS need updating' -e "^WARNING: Unknown commit id '[0-9a-f]\{12,\}', maybe rebased or not pulled?$" || true)
	if [ "$rc" -gt 1 ] || { [ "$rc" -eq 1 ] && ! grep -qE '^(ERROR|WARNING|CHECK):' <<<"$out"; }; then
		warn "checkpatch did not run on $name (exit status $rc):"
		printf '%s\n' "$out" >&2
		status=1
	elif [ -n "$rest" ]; then
		warn "checkpatch --strict: $name"
		printf '%s\n' "$out" >&2
		status=1
	fi
}
[ -f "$SRC/scripts/checkpatch.pl" ] || { warn "no $SRC/scripts/checkpatch.pl"; status=1; }
npatches=0
for p in "$REPO"/patches/00[1-9][0-9]-*.patch; do
	case "$(basename "$p")" in 000[1-9]-*) continue ;; esac
	checkpatch "$(basename "$p")" "$p"
	npatches=$((npatches + 1))
done
[ "$npatches" -gt 0 ] || { warn "no patches of ours (0010 onwards) to check"; status=1; }
for f in "$REPO"/bench/kmod/*.c; do
	checkpatch "${f#"$REPO"/}" -f "$f"
done
# ShellCheck over every shell script of ours (settings in .shellcheckrc), in the
# root, where setup-root.sh installs it.
log "shellcheck: shell scripts"
mapfile -t shell_scripts < <(git -C "$REPO" ls-files '*.sh' .ci/run ':!bench/results' ':!docs/evidence')
if [ "${#shell_scripts[@]}" -lt 10 ]; then
	warn "shellcheck: git ls-files found ${#shell_scripts[@]} shell scripts in $REPO, expected dozens"
	status=1
elif ! out=$(in_root sh -c 'cd "$1" && shift && exec shellcheck -x -S warning -f gcc "$@"' \
	shellcheck "$REPO" "${shell_scripts[@]}" 2>&1); then
	warn "shellcheck reports (or could not run):"
	printf '%s\n' "$out" | sed 's/^/  | /' >&2
	status=1
fi
# Every mutant still plants its defect: it applies, without fuzz, to the tree
# it names (the repository, or the kernel tree for "Tree: kernel"). Without
# this, a change to the code under a mutant leaves it broken until the next
# scripts/mutants/run.sh, which nothing runs on its own.
log "mutants: each applies to today's code"
nmutants=0
for m in "$REPO"/scripts/mutants/*.patch; do
	target=$REPO
	grep -q '^Tree: kernel$' "$m" && target=$SRC
	if ! out=$(patch -p1 -F0 --dry-run -d "$target" <"$m" 2>&1); then
		warn "mutant $(basename "$m" .patch) no longer applies to ${target}:"
		printf '%s\n' "$out" | sed 's/^/  | /' >&2
		status=1
	fi
	nmutants=$((nmutants + 1))
done
[ "$nmutants" -ge 20 ] || { warn "only $nmutants mutants in scripts/mutants/, expected dozens"; status=1; }
# The KTAP judge's self-test, over the crafted logs in scripts/ktap-cases/.
python3 "$REPO/scripts/test-ktap.py" || { warn "scripts/ktap.py failed its self-test"; status=1; }
# The guest library's checks, fed what they must accept and what they must refuse.
"$REPO/scripts/test-guest-lib.sh" || { warn "qemu/guest/lib.sh failed its self-test"; status=1; }
# The guest's table reader, built in the root with the guest tools' compiler and
# flags, on AMD debugfs files and a /proc/kcore of ours.
in_root python3 "$REPO/scripts/test-table-frames.py" ||
	{ warn "qemu/guest/table-frames failed its self-test"; status=1; }
[ "$status" -eq 0 ] && log "style checks passed"
exit "$status"
