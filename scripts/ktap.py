#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Parse KTAP (KUnit or kselftest) output out of a guest console log.

Prints every result line it counts, one "suite: passed/failed/skipped" line
per top-level suite, and a closing line "N passed, N failed, N skipped".
With --table PATTERN, also prints a table of the top-level suites whose name
matches PATTERN (columns) by their second-level tests (rows): each cell counts
the leaf results under that test as passed/failed/skipped, and a second-level
test without subtests shows ok, FAIL or skip.
Exits non-zero if a test failed, a suite ran fewer tests than it planned, a
suite named with --expect did not run, or the log shows a kernel WARNING, BUG,
Oops, KASAN report, hung task or panic. The lines that follow each of the first
few reports are printed, since the log itself may not outlive the run.
"""

import argparse
import os
import re
import sys

# Console lines may carry a printk timestamp and a virtme/serial prefix.
PREFIX = re.compile(r"^(?:\[\s*\d+\.\d+\]\s?)?")
RESULT = re.compile(r"^(?P<indent>\s*)(?P<status>not ok|ok) (?P<num>\d+)(?: (?:- )?(?P<name>[^#]*?))?\s*(?:#\s*(?P<directive>\w+)(?P<reason>.*))?$")
PLAN = re.compile(r"^(?P<indent>\s*)1\.\.(?P<count>\d+)\s*$")
# What the kernel log may not contain: one extended regular expression a line
# in kernel-report.ere, which the guest scripts grep with too (qemu/guest/lib.sh).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel-report.ere")) as f:
    KERNEL_REPORT = re.compile("|".join(f"(?:{line.strip()})" for line in f if line.strip()))
# Lines printed after each of the first REPORTS_SHOWN kernel reports.
REPORT_CONTEXT = 30
REPORTS_SHOWN = 3
# Of the first FAILURES_SHOWN failed tests, the last FAILURE_CONTEXT lines
# printed between the result before and the failed result: the test's own
# diagnostics (an assertion, the values it saw).
FAILURE_CONTEXT = 20
FAILURES_SHOWN = 5


class Suite:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0
        # (name, is_leaf, [passed, failed, skipped], failed itself) per second-level test
        self.items = []


def parse(lines, verbose):
    """Returns (suites, problems, contexts) for the KTAP output in lines.

    contexts holds (title, lines): for each of the first REPORTS_SHOWN kernel
    reports, the report's line and the REPORT_CONTEXT lines after it; for each
    of the first FAILURES_SHOWN failed tests, the lines the test printed
    before its result.
    """
    problems = []
    contexts = []
    reports = failures = 0
    context_left = 0
    # The lines since the last result line.
    since_result = []
    suites = []
    # For each nesting depth: did a result line appear at the next depth since
    # the last result at this depth (then this one is a parent, not a leaf)?
    child_seen = {}
    plans = {}
    results_at = {}
    current = None
    # For each depth: leaf results seen below it since its last result line.
    below = {}
    items = []
    for raw in lines:
        line = PREFIX.sub("", raw.rstrip("\r\n"))
        if context_left:
            report_lines.append(raw.rstrip("\r\n"))
            context_left -= 1
        if KERNEL_REPORT.search(line):
            problems.append("kernel report: " + line.strip())
            if not context_left and reports < REPORTS_SHOWN:
                reports += 1
                report_lines = [raw.rstrip("\r\n")]
                contexts.append(("kernel report", report_lines))
                context_left = REPORT_CONTEXT
        m = PLAN.match(line)
        if m:
            depth = len(m["indent"].expandtabs(4)) // 4
            plans[depth] = int(m["count"])
            results_at[depth] = 0
            child_seen[depth] = False
            continue
        m = RESULT.match(line)
        if not m:
            since_result.append(raw.rstrip("\r\n"))
            continue
        before, since_result = since_result, []
        depth = len(m["indent"].expandtabs(4)) // 4
        results_at[depth] = results_at.get(depth, 0) + 1
        leaf = not child_seen.get(depth + 1, False)
        if (leaf and m["status"] == "not ok" and (m["directive"] or "").upper() != "SKIP"
                and before and failures < FAILURES_SHOWN):
            failures += 1
            contexts.append((f"failed test {m['name']}, its last lines",
                             before[-FAILURE_CONTEXT:]))
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
        kind = 2 if directive == "SKIP" else (0 if m["status"] == "ok" else 1)
        if leaf:
            for d in range(depth):
                below.setdefault(d, [0, 0, 0])[kind] += 1
        if depth == 1:
            counts = [0, 0, 0]
            if leaf:
                counts[kind] = 1
            else:
                counts = below.get(1, [0, 0, 0])
            items.append((m["name"], leaf, counts, kind == 1))
        if depth > 0 and not leaf and kind == 1:
            # A parent can fail with passing subtests: a binary that crashed after them.
            problems.append(f"failed: {m['name']}" + (f" # {m['directive']}{m['reason']}" if m['directive'] else ""))
        below[depth] = [0, 0, 0]
        if verbose:
            print(line.strip() if depth == 0 else "  " * depth + line.strip())
        if depth == 0:
            suite = current if current is not None else Suite(m["name"])
            if leaf:
                # A top-level test with no subtests (kselftest style).
                tally(suite, m["status"], directive)
            suite.name = m["name"]
            suite.items = items
            items = []
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
    return suites, problems, contexts


def tally(suite, status, directive):
    if directive == "SKIP":
        suite.skipped += 1
    elif status == "ok":
        suite.passed += 1
    else:
        suite.failed += 1


def table(suites, pattern):
    """Prints the second-level tests of the matching suites as a table."""
    cols = [s for s in suites if re.search(pattern, s.name)]
    if not cols:
        print(f"(no suite matches {pattern!r})")
        return
    rows = []
    for s in cols:
        for name, _, _, _ in s.items:
            if name not in rows:
                rows.append(name)
    cells = {}
    for s in cols:
        for name, leaf, (p, f, k), failed in s.items:
            if leaf:
                cells[(s.name, name)] = "skip" if k else ("ok" if p else "FAIL")
            else:
                cells[(s.name, name)] = f"{p}/{f}/{k}" + (" FAIL" if f or failed else "")
    width = max(len(r) for r in rows)
    colw = [max(len(s.name), 12) for s in cols]
    print("passed/failed/skipped leaf results per test; ok/FAIL/skip for single checks")
    print(" | ".join([" " * width] + [s.name.ljust(w) for s, w in zip(cols, colw)]))
    print("-+-".join(["-" * width] + ["-" * w for w in colw]))
    for r in rows:
        line = [r.ljust(width)]
        for s, w in zip(cols, colw):
            line.append(cells.get((s.name, r), "-").ljust(w))
        print(" | ".join(line))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", help="console log to parse")
    ap.add_argument("--expect", action="append", default=[], metavar="SUITE",
                    help="a suite that must have run (repeatable)")
    ap.add_argument("--label", default="kunit", help="word before the summary line")
    ap.add_argument("-q", "--quiet", action="store_true", help="do not print each result line")
    ap.add_argument("--table", metavar="PATTERN",
                    help="print a table of the suites matching PATTERN by their tests")
    args = ap.parse_args()

    with open(args.log, errors="replace") as f:
        suites, problems, contexts = parse(f, not args.quiet)

    names = {s.name for s in suites}
    for want in args.expect:
        if want not in names:
            problems.append(f"expected suite {want} did not run")
    if not suites:
        problems.append("no KTAP results found")

    for s in suites:
        print(f"suite {s.name}: {s.passed} passed, {s.failed} failed, {s.skipped} skipped")
    if args.table:
        table(suites, args.table)
    for p in problems:
        print(f"PROBLEM: {p}")
    for title, lines in contexts:
        print(f"{title} in {args.log}:")
        for line in lines:
            print(f"  | {line}")
    passed = sum(s.passed for s in suites)
    failed = sum(s.failed for s in suites)
    skipped = sum(s.skipped for s in suites)
    print(f"{args.label}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
