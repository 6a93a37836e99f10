#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Parse KTAP (KUnit or kselftest) output out of a guest console log.

Prints every result line it counts, one "suite: passed/failed/skipped" line
per top-level suite, and a closing line "N passed, N failed, N skipped".
Exits non-zero if a test failed, a suite ran fewer tests than it planned, a
suite named with --expect did not run, or the log shows a kernel WARNING, BUG,
Oops, KASAN report or panic.
"""

import argparse
import re
import sys

# Console lines may carry a printk timestamp and a virtme/serial prefix.
PREFIX = re.compile(r"^(?:\[\s*\d+\.\d+\]\s?)?")
RESULT = re.compile(r"^(?P<indent>\s*)(?P<status>not ok|ok) (?P<num>\d+)(?: (?:- )?(?P<name>[^#]*?))?\s*(?:#\s*(?P<directive>\w+)(?P<reason>.*))?$")
PLAN = re.compile(r"^(?P<indent>\s*)1\.\.(?P<count>\d+)\s*$")
KERNEL_REPORT = re.compile(r"(WARNING:|BUG:|Oops|KASAN:|Kernel panic|UBSAN:|kmemleak:.*suspected|possible circular locking|inconsistent lock state)")


class Suite:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0


def parse(lines, verbose):
    """Returns (suites, problems) for the KTAP output in lines."""
    problems = []
    suites = []
    # For each nesting depth: did a result line appear at the next depth since
    # the last result at this depth (then this one is a parent, not a leaf)?
    child_seen = {}
    plans = {}
    results_at = {}
    current = None
    for raw in lines:
        line = PREFIX.sub("", raw.rstrip("\r\n"))
        if KERNEL_REPORT.search(line):
            problems.append("kernel report: " + line.strip())
        m = PLAN.match(line)
        if m:
            depth = len(m["indent"].expandtabs(4)) // 4
            plans[depth] = int(m["count"])
            results_at[depth] = 0
            child_seen[depth] = False
            continue
        m = RESULT.match(line)
        if not m:
            continue
        depth = len(m["indent"].expandtabs(4)) // 4
        results_at[depth] = results_at.get(depth, 0) + 1
        leaf = not child_seen.get(depth + 1, False)
        if not leaf:
            planned = plans.get(depth + 1)
            ran = results_at.get(depth + 1, 0)
            if planned is not None and ran != planned:
                problems.append(f"{m['name']}: planned {planned} tests, ran {ran}")
            plans.pop(depth + 1, None)
            results_at[depth + 1] = 0
        child_seen[depth + 1] = False
        child_seen[depth] = True
        directive = (m["directive"] or "").upper()
        if verbose:
            print(line.strip() if depth == 0 else "  " * depth + line.strip())
        if depth == 0:
            suite = current if current is not None else Suite(m["name"])
            if leaf:
                # A top-level test with no subtests (kselftest style).
                tally(suite, m["status"], directive)
            suite.name = m["name"]
            suites.append(suite)
            current = None
            if m["status"] == "not ok" and directive != "SKIP" and suite.failed == 0:
                suite.failed += 1
            continue
        if current is None:
            current = Suite("?")
        if leaf:
            tally(current, m["status"], directive)
            if m["status"] == "not ok" and directive != "SKIP":
                problems.append(f"failed: {m['name']}")
    if current is not None:
        problems.append("output ended inside a suite: the kernel crashed or the boot was cut short")
        suites.append(current)
    return suites, problems


def tally(suite, status, directive):
    if directive == "SKIP":
        suite.skipped += 1
    elif status == "ok":
        suite.passed += 1
    else:
        suite.failed += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", help="console log to parse")
    ap.add_argument("--expect", action="append", default=[], metavar="SUITE",
                    help="a suite that must have run (repeatable)")
    ap.add_argument("--label", default="kunit", help="word before the summary line")
    ap.add_argument("-q", "--quiet", action="store_true", help="do not print each result line")
    args = ap.parse_args()

    with open(args.log, errors="replace") as f:
        suites, problems = parse(f, not args.quiet)

    names = {s.name for s in suites}
    for want in args.expect:
        if want not in names:
            problems.append(f"expected suite {want} did not run")
    if not suites:
        problems.append("no KTAP results found")

    for s in suites:
        print(f"suite {s.name}: {s.passed} passed, {s.failed} failed, {s.skipped} skipped")
    for p in problems:
        print(f"PROBLEM: {p}")
    passed = sum(s.passed for s in suites)
    failed = sum(s.failed for s in suites)
    skipped = sum(s.skipped for s in suites)
    print(f"{args.label}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
