#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The main job: set up the toolchain root, prepare the patched tree, build the
# kernel and the module, boot and test (scripts/test.sh), then run the
# benchmarks where they exist (bench/run.sh).
#
# usage: scripts/run-all.sh [--skip-build] [--skip-style] [--stages LIST]
#
# The options are scripts/test.sh's, passed on to it (see its --help).

. "$(dirname "$0")/lib.sh"

# Checked here, before anything is built: test.sh would take --help and exit
# 0, and the benchmarks would run after it.
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--skip-build | --skip-style) shift ;;
	--stages) : "${2:?--stages needs a list such as kunit,vfio}"; shift 2 ;;
	-h | --help) awk 'NR >= 4 && !/^#/ { exit } NR >= 4 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) die "run-all.sh: unknown argument '$1' (try --help)" ;;
	esac
done
need_root
"$REPO/scripts/test.sh" "${args[@]}"
if [ -x "$REPO/bench/run.sh" ]; then
	"$REPO/bench/run.sh"
else
	log "no benchmarks yet (bench/run.sh)"
fi
