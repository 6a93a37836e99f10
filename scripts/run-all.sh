#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The main job: set up the toolchain root, prepare the patched tree, build the
# kernel and the module, boot and test (scripts/test.sh), then run the
# benchmarks where they exist (bench/run.sh).

. "$(dirname "$0")/lib.sh"

need_root
"$REPO/scripts/test.sh" "$@"
if [ -x "$REPO/bench/run.sh" ]; then
	"$REPO/bench/run.sh"
else
	log "no benchmarks yet (bench/run.sh)"
fi
