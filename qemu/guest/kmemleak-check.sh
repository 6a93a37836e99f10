#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest of the debug kernel: runs COMMAND, then has kmemleak scan
# memory and prints what it suspects as leaks. Fails if the command failed or
# kmemleak reports anything, or if there is no kmemleak to ask: a check that
# could not look is not a pass.
#
# usage: kmemleak-check.sh COMMAND [ARGS...]

"$@"
status=$?
km=/sys/kernel/debug/kmemleak
mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -w "$km" ]; then
	echo "# kmemleak: not available ($km): nothing was checked"
	status=1
else
	# An object must be older than kmemleak's minimum age (5 s) to be reported.
	sleep 6
	echo scan >"$km"
	sleep 6
	echo scan >"$km"
	leaks=$(grep -c 'unreferenced object' "$km")
	echo "# kmemleak: $leaks unreferenced objects"
	head -n 120 "$km" | sed 's/^/# kmemleak report: /'
	[ "$leaks" -eq 0 ] || status=1
fi
exit $status
