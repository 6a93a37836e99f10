#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest of the debug kernel: runs COMMAND, then has kmemleak scan
# memory and prints what it suspects as leaks. Fails if the command failed or
# kmemleak reports anything. Without kmemleak, just runs the command.
#
# usage: kmemleak-check.sh COMMAND [ARGS...]

"$@"
status=$?
km=/sys/kernel/debug/kmemleak
if [ -w "$km" ]; then
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
