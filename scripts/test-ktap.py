#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-test of scripts/ktap.py: runs it over the small crafted logs in
scripts/ktap-cases/ and checks its verdict on each. A defect log must fail,
with a PROBLEM line that names the defect; a clean log must pass. Prints one
line per case.

Then runs ktap.py beside the kernel's own KTAP judge, "kunit.py parse"
(tools/testing/kunit/, under this Python), over every log of the kernel's
tools/testing/kunit/test_data/ in $SRC (scripts/lib.sh): prints one line per
log with both verdicts and, where they differ, ktap.py's problems, the reason
it is stricter. A log that kunit.py fails and ktap.py passes (ktap.py weaker)
is a wrong verdict; so is a log kunit.py cannot parse at all, or a missing
kernel tree (one line, no traceback). --cases-only leaves that comparison out.

Exits non-zero if any verdict is not the expected one.
"""

import concurrent.futures
import glob
import os
import re
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
    ("failed test, named with its path", "failed.log", [], "FAIL", "FAILED TEST: suite/one"),
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
    ("a log that does not exist", "does-not-exist.log", [], "FAIL", "ktap.py: cannot read the log"),
    # What a guest run prints besides results: kselftest binaries' harness
    # lines (an XFAIL's "FAIL" line, "# Totals:" with fail:0), KUnit's counts,
    # console lines, several top-level documents and the power-off.
    ("a clean guest-like run", "clean-kselftest.log", [], "PASS", "kunit: 7 passed, 0 failed, 0 skipped"),
    ("two boots one after the other", "two-boots.log", [], "PASS", "suite second_boot: 1 passed"),
    ("ktap.rst's 2-space indentation", "two-space.log", [], "PASS",
     "suite example_test_1: 3 passed, 0 failed, 0 skipped"),
    ("printk caller ids", "caller-id.log", [], "PASS", "suite caller: 1 passed"),
    # A line that reports a failure or an abort by itself.
    ("kselftest Bail out!", "bail-out.log", [], "FAIL", "bail out: Bail out! cannot open /dev/iommu"),
    ("kselftest totals with a failure", "ksft-totals.log", [], "FAIL",
     "counts with fail:1: # Totals: pass:1 fail:1"),
    ("kselftest plan not met, by its own count", "ksft-planned.log", [], "FAIL",
     "reported: # Planned tests != run tests (2 != 1)"),
    ("kselftest harness's FAILED line", "harness-failed.log", [], "FAIL",
     "reported: # FAILED: 1 / 2 tests passed."),
    ("a not ok in the kselftest runner's \"# \" output", "runner-not-ok.log", [], "FAIL",
     'failed, in "# "-prefixed output: # not ok 2 iommufd.case_b'),
    ("KUnit suite counts with a failure", "kunit-counts.log", [], "FAIL",
     "counts with fail:1: # suite: pass:1 fail:1 skip:0 total:2"),
    ("KUnit case fault", "kunit-fault.log", [], "FAIL", "reported: # case_a: try faulted"),
    ("KUnit executor error", "kunit-executor.log", [], "FAIL",
     "KUnit error: kunit executor: error filtering suites: -22"),
    ("ok with a TIMEOUT directive", "directives.log", [], "FAIL", "failed: slow_case # TIMEOUT 30 seconds"),
    ("ok with the kselftest runner's exit=1", "directives.log", [], "FAIL",
     "failed: selftests: iommu: iommufd # exit=1"),
    ("not ok with a TODO directive", "todo.log", [], "FAIL", "failed: known_broken"),
    ("not ok with a lower-case skip", "todo.log", [], "FAIL", "failed: other"),
    # Documents that cannot be one clean run, at any depth.
    ("unknown KTAP version", "version.log", [], "FAIL", "KTAP version 2: not one kunit_parser.py reads"),
    ("unknown nested TAP version", "version.log", [], "FAIL", "TAP version 12: not one kunit_parser.py reads"),
    ("two version lines for one suite", "double-header.log", [], "FAIL",
     "a second version line at depth 1, after the one at line 3"),
    ("two version lines at the top", "top-double-header.log", [], "FAIL",
     "a second version line at the top, after the one at line 1"),
    ("# Subtest: of another test", "subtest-name.log", [], "FAIL",
     'beta: the result of the subtests headed "# Subtest: alpha"'),
    ("# Subtest: with no results", "subtest-empty.log", [], "FAIL",
     "suite/binary: no plan, its subtests ran nothing"),
    ("a result line kunit_parser.py cannot read", "malformed.log", [], "FAIL",
     "not a result line kunit_parser.py can read: 'ok 2 second#no space before the hash'"),
    ("KTAP after the power-off", "after-end.log", [], "FAIL",
     "KTAP output after the run ended at line 5 ('reboot: Power down')"),
    ("a document the next boot completes", "next-boot.log", [], "FAIL",
     "the document from line 2 planned 1..2, ran 1 results (output ended early)"),
    ("short nested plan, 2-space indentation", "two-space-short.log", [], "FAIL",
     "example: planned 2 tests, ran 1"),
]


def kernel_tree():
    """$SRC as scripts/lib.sh sets it (sourcing it only sets variables)."""
    proc = subprocess.run(["bash", "-c", '. "$1" && printf %s "$SRC"', "lib.sh", os.path.join(HERE, "lib.sh")],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout:
        return None, f"cannot read $SRC from scripts/lib.sh: {proc.stderr.strip() or 'empty'}"
    return proc.stdout, None


def ktap_verdict(log):
    """(exit status, PROBLEM lines) of ktap.py over log, with no option."""
    proc = subprocess.run([sys.executable, KTAP, "--quiet", "--label", "ktap", log],
                          capture_output=True, text=True)
    problems = [line[len("PROBLEM: "):] for line in proc.stdout.splitlines() if line.startswith("PROBLEM: ")]
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        problems.append("ktap.py broke: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
    return proc.returncode, problems


def kunit_verdict(kunit, log):
    """(exit status, its "Testing complete." summary) of kunit.py parse over log;
    the summary is None if kunit.py did not get that far."""
    try:
        proc = subprocess.run([sys.executable, "-B", kunit, "parse", log], capture_output=True, text=True,
                              timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timed out after 300 s"
    m = re.search(r"Testing complete\. (.*)", proc.stdout)
    if m is None:
        return None, (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
    return proc.returncode, m.group(1).strip()


def compare_with_kunit():
    """ktap.py beside kunit.py parse over the kernel's test_data logs; the
    number of wrong verdicts (ktap.py weaker, or no comparison possible)."""
    src, error = kernel_tree()
    if error:
        print(f"WRONG: kunit.py comparison: {error}")
        return 1
    kunit = os.path.join(src, "tools", "testing", "kunit", "kunit.py")
    data = os.path.join(src, "tools", "testing", "kunit", "test_data")
    if not os.path.isdir(src):
        print(f"WRONG: kunit.py comparison: no kernel tree at {src} (run scripts/prepare-tree.sh)")
        return 1
    if not os.path.isfile(kunit) or not os.path.isdir(data):
        print(f"WRONG: kunit.py comparison: no {kunit} or no {data} in the kernel tree")
        return 1
    logs = sorted(glob.glob(os.path.join(data, "*.log")))
    if not logs:
        print(f"WRONG: kunit.py comparison: no *.log in {data}")
        return 1
    print(f"kunit.py parse (python {sys.version.split()[0]}) beside ktap.py over {len(logs)} logs in {data}:")
    wrong = same = stricter = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        verdicts = list(pool.map(lambda log: (kunit_verdict(kunit, log), ktap_verdict(log)), logs))
    for log, ((k_rc, summary), (o_rc, problems)) in zip(logs, verdicts):
        name = os.path.basename(log)
        ours = "PASS" if o_rc == 0 else "FAIL"
        if k_rc is None:
            wrong += 1
            print(f"WRONG: {name}: kunit.py parse did not finish ({summary}); ktap.py {ours}")
            continue
        theirs = "PASS" if k_rc == 0 else "FAIL"
        if o_rc not in (0, 1):
            wrong += 1
            print(f"WRONG: {name}: ktap.py exited {o_rc}: {'; '.join(problems)}")
        elif theirs == "FAIL" and ours == "PASS":
            wrong += 1
            print(f"WRONG: {name}: ktap.py weaker: kunit.py FAIL ({summary}), ktap.py PASS")
        elif theirs == ours:
            same += 1
            print(f"same: {name}: both {ours} (kunit.py: {summary})")
        else:
            stricter += 1
            why = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
            print(f"stricter: {name}: kunit.py PASS ({summary}), ktap.py FAIL: {why}")
    print(f"kunit.py comparison: {same} the same, {stricter} where ktap.py is stricter, "
          f"{wrong} wrong (ktap.py weaker or no verdict)")
    return wrong


def main():
    if sys.argv[1:] not in ([], ["--cases-only"]):
        sys.exit(f"usage: {sys.argv[0]} [--cases-only]")
    wrong = 0
    for name, log, options, want, text in CASES:
        proc = subprocess.run([sys.executable, KTAP, "--quiet", "--label", "kunit", *options,
                               os.path.join(CASE_DIR, log)], capture_output=True, text=True)
        got = "PASS" if proc.returncode == 0 else "FAIL"
        good = got == want and text in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
        print(f"{'ok' if good else 'WRONG'}: {name} ({log}): {got}" +
              ("" if good else f", expected {want} printing {text!r}"))
        if not good:
            wrong += 1
            for line in (proc.stdout + proc.stderr).splitlines():
                print(f"  | {line}")
    print(f"ktap.py self-test: {len(CASES) - wrong} of {len(CASES)} cases as expected")
    if sys.argv[1:] != ["--cases-only"]:
        wrong += compare_with_kunit()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
