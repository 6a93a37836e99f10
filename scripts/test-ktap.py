#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-test of scripts/ktap.py: runs it over the small crafted logs in
scripts/ktap-cases/ and checks its verdict on each. A defect log must fail,
with a PROBLEM line that names the defect; a clean log must pass. Prints one
line per case and exits non-zero if any verdict is not the expected one.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KTAP = os.path.join(HERE, "ktap.py")
CASE_DIR = os.path.join(HERE, "ktap-cases")

# The options under which clean.log passes: its one skip allowed, its suites
# expected, its 6 leaf results.
CLEAN = ["--allow-skip", "^alpha/alpha_params/cfg_1$", "--expect", "alpha", "--expect", "beta",
         "--expect", "script_check", "--min-results", "6"]

# (name, log, options, expected exit: "PASS" or "FAIL", text ktap.py must print)
CASES = [
    ("clean log", "clean.log", CLEAN, "PASS", "kunit: 5 passed, 0 failed, 1 skipped"),
    ("printk timestamps", "stamped.log", [], "PASS", "suite stamped: 1 passed"),
    ("kernel document spliced into a script's", "spliced.log", [], "PASS",
     "suite script_second: 1 passed"),
    ("empty suite allowed by --allow-empty", "empty.log", ["--allow-empty", "^idle$"], "PASS",
     "suite busy: 1 passed"),
    ("skip allowed by --allow-skip", "skip.log", ["--allow-skip", "^suite/needs_hardware$"], "PASS",
     "suite suite: 1 passed, 0 failed, 1 skipped"),
    ("short top-level plan", "short-plan.log", [], "FAIL", "planned 1..3, ran 2 results"),
    ("long top-level plan", "long-plan.log", [], "FAIL", "planned 1..1, ran 2 results"),
    ("a first document cut short", "short-docs.log", [], "FAIL", "planned 1..2, ran 1 results"),
    ("short nested plan", "nested-plan.log", [], "FAIL", "suite: planned 3 tests, ran 2"),
    ("gap in test numbers", "gap.log", [], "FAIL", "fourth: numbered 4 after 2, a gap"),
    ("duplicate test number", "duplicate.log", [], "FAIL", "one_again: numbered 1 after 1, a duplicate"),
    ("headerless KUnit run inside a document", "fragment.log", [], "FAIL",
     "rerun_suite: numbered 1 after 1, a duplicate"),
    ("suite with plan 1..0", "empty.log", [], "FAIL", "idle: planned 1..0, its subtests ran nothing"),
    ("all-skipped suite, skips allowed", "all-skipped.log", ["--allow-skip", "."], "FAIL",
     "suite suite: all its 2 tests skipped"),
    ("document whose results all skipped, skips allowed", "all-skipped-doc.log", ["--allow-skip", "."],
     "FAIL", "the document from line 1: all its 2 tests skipped"),
    ("skip without --allow-skip", "skip.log", [], "FAIL", "skipped: suite/needs_hardware # SKIP no device"),
    ("skip not matching --allow-skip", "skip.log", ["--allow-skip", "^needs_hardware$"], "FAIL",
     "skipped: suite/needs_hardware"),
    ("fewer results than --min-results", "clean.log", CLEAN + ["--min-results", "7"], "FAIL",
     "6 test results, fewer than the 7 expected"),
    ("expected suite missing", "clean.log", CLEAN + ["--expect", "gamma"], "FAIL",
     "expected suite gamma did not run"),
    ("failed test", "failed.log", [], "FAIL", "PROBLEM: failed: one"),
    ("DMAR fault", "dmar.log", [], "FAIL", "kernel report: DMAR: [DMA Write NO_PASID]"),
    # AMD-Vi's event log (drivers/iommu/amd/iommu.c): a fault of a device, an event of the IOMMU,
    # and the command and event queues' own failures.
    ("AMD-Vi IO page fault", "amdvi.log", [], "FAIL",
     "kernel report: vfio-pci 0000:00:04.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain="),
    ("AMD-Vi event of the IOMMU", "amdvi.log", [], "FAIL",
     "kernel report: iommu ivhd0: AMD-Vi: Event logged [ILLEGAL_DEV_TABLE_ENTRY device="),
    ("AMD-Vi completion wait timeout", "amdvi.log", [], "FAIL",
     "kernel report: AMD-Vi: IOMMU 0000:00:03.0: Completion-Wait loop timed out"),
    ("AMD-Vi command buffer timeout", "amdvi.log", [], "FAIL",
     "kernel report: AMD-Vi: Command buffer timeout"),
    ("AMD-Vi event log overflow", "amdvi.log", [], "FAIL",
     "kernel report: AMD-Vi: IOMMU Event log restarting"),
    ("AMD-Vi event log entry never written", "amdvi.log", [], "FAIL",
     "kernel report: AMD-Vi: No event written to event log"),
    ("RCU stall", "rcu.log", [], "FAIL", "kernel report: rcu: INFO: rcu_preempt detected stalls"),
    ("kernel WARNING", "warning.log", [], "FAIL", "kernel report: WARNING: CPU: 0"),
    ("output ended inside a suite", "ended.log", [], "FAIL", "output ended inside a suite"),
    ("results before any KTAP header", "no-header.log", [], "FAIL", "no KTAP results found"),
]


def main():
    wrong = 0
    for name, log, options, want, text in CASES:
        proc = subprocess.run([sys.executable, KTAP, "--quiet", "--label", "kunit", *options,
                               os.path.join(CASE_DIR, log)], capture_output=True, text=True)
        got = "PASS" if proc.returncode == 0 else "FAIL"
        good = got == want and text in proc.stdout
        print(f"{'ok' if good else 'WRONG'}: {name} ({log}): {got}" +
              ("" if good else f", expected {want} printing {text!r}"))
        if not good:
            wrong += 1
            for line in (proc.stdout + proc.stderr).splitlines():
                print(f"  | {line}")
    print(f"ktap.py self-test: {len(CASES) - wrong} of {len(CASES)} cases as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
