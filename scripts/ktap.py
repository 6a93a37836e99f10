#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the KTAP (KUnit or kselftest) output in a guest console log.

Prints every result line it counts, one "suite: passed/failed/skipped" line
per top-level suite, and a closing line "N passed, N failed, N skipped".
With --table PATTERN, also prints a table of the top-level suites whose name
matches PATTERN (columns) by their second-level tests (rows): each cell counts
the leaf results under that test as passed/failed/skipped, and a second-level
test without subtests shows ok, FAIL or skip.

The log is read as KTAP documents. A "KTAP version N" or "TAP version N" line
starts a document when there is none yet or when it is indented no deeper
than the current document's own (a printk timestamp, a "[    T1]" caller id
and the spaces before the first version line are its prefix, as
kunit_parser.py takes them); result lines before the first one are not
results. A depth is one indentation step below the document's version line:
4 spaces (KUnit's, and a tab), or 2 (Documentation/dev-tools/ktap.rst's) if
the document's first indented line is indented by 2. Nested headers (KUnit's
"KTAP version 1", a kselftest binary's "TAP version 13") and "# Subtest: NAME"
lines start the subtests of the result that follows them one level up. A new
document while the current one still waits for results (its plan not met) is
taken as spliced into it, as the kernel's KUnit output is when a module loads
while a guest script prints its own results: it must complete on its own,
then the outer one continues. "reboot: System halted|Power down|Restarting
system", "List of all partitions:" and "Kernel panic - not syncing" end the
run (kunit_parser.py stops reading there): every document still open ends
there, and only a new boot ("Linux version N...") may print KTAP again; a log
may hold several boots, one after the other (the VFIO matrix).

Exits non-zero on any of these problems:
  - a test failed: "not ok" without a SKIP directive (kunit_parser.py's
    TEST_RESULT_SKIP: "# SKIP" makes even "not ok" a skip, "# TODO" does not),
    or an "ok" with a TIMEOUT, ERROR or "exit=N" (N > 0) directive; or a
    suite named with --expect did not run;
  - a line the kselftest helpers or KUnit print to report a failure or an
    abort, at any "# " prefix depth (the kselftest runner's nesting):
    "Bail out!"; "# Totals: ..."/"# SUITE: pass:..." with fail or error > 0;
    "# Planned tests != run tests"; the harness's "# FAILED: N / M tests
    passed."; a "# "-prefixed "not ok"; KUnit's "try faulted", "try timed
    out", "test case timed out", "internal error occurred", "failed to
    initialize", "test aborted during cleanup", "kunit executor: ..." and
    "kunit: test interrupted";
  - a plan at any depth that the results after it (up to their parent's
    result, or up to the next document at the top) do not match, a document
    without a top-level plan;
  - results not numbered 1, 2, 3... under their parent (a gap or a duplicate);
  - a line that starts like a result ("ok N", "not ok N") but is not one
    (kunit_parser.py's TEST_RESULT would not read it either);
  - a version line other than "KTAP version 1", "TAP version 13" or "TAP
    version 14" (kunit_parser.py's check_version), at any depth; a second
    version line for the same subtests with nothing between; subtests headed
    "# Subtest: NAME" whose parent's result names another test
    (kunit_parser.py's "missing subtest result line!");
  - KTAP lines after the run ended (above) and before a new boot;
  - a plan "1..0", or subtests that ran nothing (a "# Subtest: NAME" with no
    results too), unless their parent's path matches an --allow-empty regex
    (a whole document's path is "");
  - a skipped leaf test whose path does not match an --allow-skip regex: the
    path is the names from the top-level suite down, joined by "/", e.g.
    "amdv1_iommu_test/test_mixed/amdv1_cfg_0" (re.search, so anchor it);
    without --allow-skip no skip is allowed;
  - a top-level suite all of whose leaf tests skipped (allowed or not), or a
    document all of whose results skipped;
  - fewer leaf results in all than --min-results;
  - output that ends inside a suite, or subtests left without their parent's
    result;
  - a kernel WARNING, BUG, Oops, KASAN report, hung task, panic or IOMMU fault
    (the patterns in kernel-report.ere) anywhere in the log.
The lines that follow each of the first few kernel reports, and those a failed
test printed before its result, are printed, since the log itself may not
outlive the run. A log that cannot be read is an error (exit status 2).
"""

import argparse
import os
import re
import sys

# Console lines may carry a printk timestamp and a caller id (CONFIG_PRINTK_CALLER),
# then one space.
PREFIX = re.compile(r"^(?:(?:\[\s*\d+\.\d+\])?(?:\[\s*[TC]\d+\])?(?<=\])\s?)?")
# Documentation/dev-tools/ktap.rst: "<result> <number> [<description>][ # [<directive>] [<diagnostic data>]]";
# KUnit and kselftest put "- " before the description at times.
# kunit_parser.py's TEST_RESULT wants the "#" between spaces too.
RESULT = re.compile(r"^(?P<indent>\s*)(?P<status>not ok|ok) (?P<num>\d+)(?: (?:- )?(?P<name>[^#]*?))?"
                    r"(?:\s*(?<= )#\s+(?P<directive>[A-Za-z]\w*)?(?P<reason>.*?))?\s*$")
# What starts like a result line, read or not.
RESULT_LIKE = re.compile(r"^\s*(?:not )?ok \d")
# A plan may carry a directive: kselftest's "1..0 # SKIP reason".
PLAN = re.compile(r"^(?P<indent>\s*)1\.\.(?P<count>\d+)\s*(?:#.*)?$")
HEADER = re.compile(r"^(?P<indent>\s*)(?P<kind>K?TAP) version (?P<version>\d+)\s*$")
# kunit_parser.py's KTAP_VERSIONS and TAP_VERSIONS.
VERSIONS = {"KTAP": (1,), "TAP": (13, 14)}
SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<name>.*?)\s*$")
# The kselftest runner prints a binary's output after "# " (kselftest/runner.sh's
# tap_prefix), once per level.
RUNNER_PREFIX = re.compile(r"^(?:#[ \t]*)+")
# Lines that report a failure or an abort. In kselftest.h: ksft_exit_fail_msg()
# and ktap_helpers.sh's ktap_exit_fail_msg() print "Bail out! ", ksft_print_cnts()
# and ktap_print_totals() "# Totals: pass:N fail:N xfail:N xpass:N skip:N error:N"
# after "# Planned tests != run tests (P != R)"; kselftest_harness.h's
# test_harness_run() "# FAILED: N / M tests passed.". In lib/kunit/test.c:
# kunit_print_suite_stats() "# SUITE: pass:N fail:N skip:N total:N" and "# Totals:
# ...", the case errors of try-catch.c and test.c, the executor's errors.
BAIL_OUT = re.compile(r"^Bail out!")
COUNTS = re.compile(r"^(?:Totals|[^:#]+): pass:\d+ fail:\d+")
COUNT = re.compile(r"\b(?P<key>fail|error):(?P<n>\d+)\b")
PLANNED = re.compile(r"^Planned tests != run tests \(\d+ != \d+\)")
HARNESS_FAILED = re.compile(r"^FAILED: \d+ / \d+ tests passed")
KUNIT_CASE_ERROR = re.compile(r"^[^:#\s][^:#]*:\s+(?:#\s*)?(?:try faulted|try timed out|test case timed out|"
                              r"test case cleanup timed out|test aborted during cleanup|"
                              r"internal error occurred (?:preventing|during) test case|"
                              r"failed to initialize\b|Unknown error: -?\d)")
KUNIT_ERROR = re.compile(r"^(?:kunit executor: |kunit module: error|kunit: (?:test interrupted|unknown action))")
# kunit_parser.py's KTAP_END: the kernel stopped (the guest powers off with
# "reboot: Power down"); "Linux version" is the banner of the next boot.
RUN_END = re.compile(r"^(?:List of all partitions:|Kernel panic - not syncing|"
                     r"reboot: (?:System halted|Power down|Restarting system))")
BOOT = re.compile(r"^Linux version \d")
# What the kernel log may not contain: one extended regular expression a line
# in kernel-report.ere, which the guest scripts grep with too (qemu/guest/lib.sh).
REPORT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel-report.ere")
try:
    with open(REPORT_FILE) as f:
        KERNEL_REPORT = re.compile("|".join(f"(?:{line.strip()})" for line in f if line.strip()))
except OSError as e:
    sys.exit(f"ktap.py: cannot read {REPORT_FILE}: {e.strerror}")
# Lines printed after each of the first REPORTS_SHOWN kernel reports.
REPORT_CONTEXT = 30
REPORTS_SHOWN = 3
# Of the first FAILURES_SHOWN failed tests, the last FAILURE_CONTEXT lines
# printed between the result before and the failed result: the test's own
# diagnostics (an assertion, the values it saw).
FAILURE_CONTEXT = 20
FAILURES_SHOWN = 5

PASS, FAIL, SKIP = range(3)


class Result:
    """One result line; children is None for a leaf, else its subtests."""

    def __init__(self, name, status, directive, reason, number, line, synthetic=False):
        self.name = name
        self.status = status
        self.directive = directive
        self.reason = reason
        self.number = number
        self.line = line
        self.children = None
        self.plan = None
        self.synthetic = synthetic

    @property
    def kind(self):
        # kunit_parser.py: " # SKIP" makes any result a skip; an "ok" with any
        # "# skip" is no pass either.
        if self.directive.startswith("SKIP") or (self.status == "ok" and self.directive.upper().startswith("SKIP")):
            return SKIP
        if self.status != "ok":
            return FAIL
        # ktap.rst: "not ok" goes with TIMEOUT and ERROR; the kselftest
        # runner's "# exit=N" is a binary's exit status.
        if self.directive.upper() in ("TIMEOUT", "ERROR"):
            return FAIL
        if self.directive == "exit" and re.match(r"=\s*[1-9]", self.reason):
            return FAIL
        return PASS

    def counts(self):
        """[passed, failed, skipped] over the leaf results at or below."""
        if self.children is None:
            c = [0, 0, 0]
            c[self.kind] = 1
            return c
        c = [0, 0, 0]
        for child in self.children:
            for i, n in enumerate(child.counts()):
                c[i] += n
        return c


class Group:
    """The results at one depth under one parent result (yet to come)."""

    def __init__(self, line, header=False, name=None):
        self.line = line
        self.header = header
        # The NAME of a "# Subtest: NAME" line at this depth: the parent's.
        self.name = name
        self.plan = None
        self.plan_line = None
        self.results = []
        self.last = 0

    def pending(self):
        return self.header or self.name is not None or self.plan is not None or bool(self.results)

    def started(self):
        """Has the group a plan or results (more than its header lines)?"""
        return self.plan is not None or bool(self.results)


class Document:
    def __init__(self, line, indent):
        self.line = line
        self.groups = {0: Group(line, header=True)}
        # The indentation of its version line, a prefix to every line of it,
        # and its indentation step, once an indented line shows it.
        self.indent = indent
        self.step = None

    def depth(self, indent):
        """The depth of a line of the document with this indentation."""
        width = len(indent[len(self.indent):].expandtabs(4))
        if width and self.step is None:
            self.step = 2 if width % 4 == 2 else 4
        return width // (self.step or 4)

    @property
    def top(self):
        return self.groups[0]

    def ran(self):
        return sum(1 for r in self.top.results if not r.synthetic)

    def inside(self):
        """Is the document inside a suite (subtests without their parent's result)?"""
        return any(g.pending() for d, g in self.groups.items() if d > 0)

    def waiting(self):
        """Does the document still wait for results of its own?"""
        return self.inside() or (self.top.plan is not None and self.ran() < self.top.plan)


class Suite:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0
        # (name, is_leaf, [passed, failed, skipped], failed itself) per second-level test
        self.items = []


class Judge:
    def __init__(self, verbose):
        self.verbose = verbose
        self.problems = []
        self.contexts = []
        # The path (suite/.../test) of every failed leaf, known once the tree is.
        self.failed_paths = []
        self.suites = []
        self.documents = []
        # The document results go to; below it, documents it interrupted.
        self.doc = None
        self.suspended = []
        self.reports = self.failures = 0
        self.context_left = 0
        self.report_lines = None
        # The lines since the last result line.
        self.since_result = []
        # The line that ended the run, until a new boot.
        self.ended = None
        self.after_end = False

    def problem(self, text, line=None):
        self.problems.append(text if line is None else f"{text} (line {line})")

    # Documents.

    def start_document(self, line, indent):
        doc = self.doc
        if doc is not None and not doc.top.started() and not doc.inside():
            self.problem(f"a second version line at the top, after the one at line {doc.line} "
                         "with no plan or result between", line)
        if self.doc is not None:
            if self.doc.waiting():
                self.suspended.append(self.doc)
            else:
                self.close_document(self.doc, line)
        self.doc = Document(line, indent)
        self.documents.append(self.doc)

    def close_document(self, doc, line, at_end=False):
        # Only the end of the log leaves a document waiting (inside a suite,
        # or short of its plan): a new one is spliced into it instead.
        if doc.inside():
            self.collapse(doc, 1, line, quiet=True)
            self.problem("output ended inside a suite: the kernel crashed or the boot was cut short")
        top = doc.top
        if top.plan is None:
            self.problem(f"the document from line {doc.line} has no plan")
        elif doc.ran() != top.plan:
            how = " (output ended early)" if at_end and doc.ran() < top.plan else ""
            self.problem(f"the document from line {doc.line} planned 1..{top.plan}, ran {doc.ran()} results{how}",
                         top.plan_line)

    def collapse(self, doc, depth, line, quiet=False):
        """Hands the results pending at depth and below, which lack their
        parent's result, to a "?" parent each, up to depth - 1."""
        for d in range(max(doc.groups), depth - 1, -1):
            g = doc.groups.pop(d, None)
            if g is None or not g.pending():
                continue
            orphan = Result("?", "ok", "", "", 0, line, synthetic=True)
            self.close_group(orphan, g)
            if not quiet:
                self.problem(f"the results at depth {d} from line {g.line} have no parent result", line)
            self.add(doc, d - 1, orphan)

    # Lines.

    def header(self, m, line):
        kind, version = m["kind"], int(m["version"])
        if version not in VERSIONS[kind]:
            self.problem(f"{kind} version {version}: not one kunit_parser.py reads "
                         f"({', '.join(f'{k} version {v}' for k in VERSIONS for v in VERSIONS[k])})", line)
        doc = self.doc
        indent = m["indent"]
        depth = 0
        if doc is not None and len(indent.expandtabs(4)) > len(doc.indent.expandtabs(4)):
            depth = doc.depth(indent)
        if depth == 0:
            self.start_document(line, indent)
            return
        # Subtests still pending at this depth or below lack their parent's
        # result; a header alone (no plan, no result yet) is just replaced,
        # keeping the name its "# Subtest:" line gave.
        old = doc.groups.get(depth)
        name = None
        if (old is not None and old.started()) or \
                any(g.pending() for d, g in doc.groups.items() if d > depth):
            self.collapse(doc, depth, line)
        elif old is not None:
            name = old.name
            if old.header:
                self.problem(f"a second version line at depth {depth}, after the one at line {old.line} "
                             "with no plan or result between", line)
        doc.groups[depth] = Group(line, header=True, name=name)

    def check_indent(self, doc, indent, line):
        if len(indent.expandtabs(4)) < len(doc.indent.expandtabs(4)):
            self.problem(f"a line indented less than its document's version line at line {doc.line}", line)

    def subtest(self, m, line):
        """A "# Subtest: NAME" line: names the subtests at its depth."""
        doc = self.doc
        depth = doc.depth(m["indent"])
        if depth == 0:
            self.problem(f"\"# Subtest: {m['name']}\" at the top of a document: it names no result", line)
            return
        old = doc.groups.get(depth)
        if old is None or not old.pending():
            doc.groups[depth] = Group(line, name=m["name"])
        elif old.started():
            self.problem(f"\"# Subtest: {m['name']}\" after the plan or results of the subtests at its depth, "
                         f"from line {old.line}", line)
        elif old.name is None:
            old.name = m["name"]
        else:
            self.problem(f"\"# Subtest: {m['name']}\" after \"# Subtest: {old.name}\" "
                         "with no plan or result between", line)

    def plan(self, m, line):
        doc = self.doc
        if doc is None:
            return
        self.check_indent(doc, m["indent"], line)
        depth = doc.depth(m["indent"])
        count = int(m["count"])
        g = doc.groups.setdefault(depth, Group(line))
        if g.plan is not None:
            self.problem(f"a second plan 1..{count} at depth {depth}, after 1..{g.plan} at line {g.plan_line}", line)
            return
        # ktap.rst: "Plan lines follow version lines"; kunit_parser.py reads
        # one only there.
        if g.results or any(h.pending() for d, h in doc.groups.items() if d > depth):
            self.problem(f"a plan 1..{count} at depth {depth} after results or subtests it should precede", line)
        g.plan = count
        g.plan_line = line
        if depth == 0:
            self.end_spliced(line)

    def close_group(self, parent, g):
        parent.children = g.results
        parent.plan = g.plan
        if parent.synthetic:
            return
        ran = len(g.results)
        if g.plan is not None and g.plan != ran:
            self.problem(f"{parent.name}: planned {g.plan} tests, ran {ran}", parent.line)
        if not g.header and g.name is None:
            self.problem(f"{parent.name}: its subtests have neither a version line nor a \"# Subtest:\" line "
                         "(kunit_parser.py reads no subtests without one)", parent.line)
        elif g.plan is None and g.name is None:
            self.problem(f"{parent.name}: its subtests have neither a plan nor a \"# Subtest:\" line "
                         "(kunit_parser.py cannot tell where they end)", parent.line)
        if g.name is not None and g.name != parent.name:
            self.problem(f"{parent.name}: the result of the subtests headed \"# Subtest: {g.name}\" "
                         f"at line {g.line}, a different test", parent.line)

    def add(self, doc, depth, r):
        """Adds r at depth; the results pending one level deeper are its subtests."""
        g = doc.groups.get(depth)
        if g is None:
            g = doc.groups[depth] = Group(r.line)
        if not r.synthetic:
            if r.number != g.last + 1:
                what = "a duplicate or out of order" if r.number <= g.last else "a gap before it"
                self.problem(f"{r.name}: numbered {r.number} after {g.last}, {what}", r.line)
            g.last = r.number
        g.results.append(r)
        if depth == 0:
            self.suites.append(make_suite(r))

    def result(self, m, line, text):
        doc = self.doc
        before, self.since_result = self.since_result, []
        self.check_indent(doc, m["indent"], line)
        depth = doc.depth(m["indent"])
        r = Result(m["name"] or "", m["status"], m["directive"] or "", m["reason"] or "",
                   int(m["num"]), line)
        if any(g.pending() for d, g in doc.groups.items() if d > depth + 1):
            self.collapse(doc, depth + 2, line)
        children = doc.groups.pop(depth + 1, None)
        if children is not None and children.pending():
            self.close_group(r, children)
        if self.verbose:
            print(text.strip() if depth == 0 else "  " * depth + text.strip())
        if r.kind == FAIL:
            if r.children is None and before and self.failures < FAILURES_SHOWN:
                self.failures += 1
                self.contexts.append((f"failed test {r.name}, its last lines", before[-FAILURE_CONTEXT:]))
            if r.children is None and r.status == "not ok":
                self.problem(f"failed: {r.name}")
            elif r.children is None:
                self.problem(f"failed: {r.name} # {r.directive}{r.reason}", line)
            else:
                # A parent can fail with passing subtests: a binary that crashed after them.
                self.problem(f"failed: {r.name}" + (f" # {r.directive}{r.reason}" if r.directive else ""))
        self.add(doc, depth, r)
        if depth == 0:
            self.end_spliced(line)

    def end_spliced(self, line):
        """A document spliced into another ends with its last planned result."""
        if self.suspended and self.doc.top.plan is not None and not self.doc.waiting():
            self.close_document(self.doc, line)
            self.doc = self.suspended.pop()

    def feed(self, lines):
        """Reads the log; returns its number of lines."""
        line = 0
        for line, raw in enumerate(lines, 1):
            text = raw.rstrip("\r\n")
            stripped = PREFIX.sub("", text)
            if self.context_left:
                self.report_lines.append(text)
                self.context_left -= 1
            if KERNEL_REPORT.search(stripped):
                self.problem("kernel report: " + stripped.strip())
                if not self.context_left and self.reports < REPORTS_SHOWN:
                    self.reports += 1
                    self.report_lines = [text]
                    self.contexts.append(("kernel report", self.report_lines))
                    self.context_left = REPORT_CONTEXT
            self.signals(stripped, line)
            if BOOT.match(stripped):
                self.ended = None
            elif RUN_END.match(stripped.lstrip()):
                self.end_run(line, stripped.strip())
            if HEADER.match(stripped) or PLAN.match(stripped) or RESULT_LIKE.match(stripped):
                self.after_run_end(line)
            m = HEADER.match(stripped)
            if m:
                self.header(m, line)
                self.since_result.append(text)
                continue
            m = PLAN.match(stripped)
            if m:
                self.plan(m, line)
                continue
            m = RESULT.match(stripped)
            if m and self.doc is not None:
                self.result(m, line, stripped)
                continue
            if self.doc is not None:
                if RESULT_LIKE.match(stripped):
                    self.problem(f"not a result line kunit_parser.py can read: {stripped.strip()!r}", line)
                m = SUBTEST.match(stripped)
                if m:
                    self.subtest(m, line)
            self.since_result.append(text)
        return line

    def signals(self, stripped, line):
        """The lines that report a failure or an abort by themselves."""
        text = stripped.strip()
        body = RUNNER_PREFIX.sub("", text)
        prefixed = body != text
        if BAIL_OUT.match(body):
            self.problem(f"bail out: {text}", line)
        elif KUNIT_ERROR.match(body):
            self.problem(f"KUnit error: {text}", line)
        elif not prefixed:
            return
        elif COUNTS.match(body):
            bad = [f"{m['key']}:{m['n']}" for m in COUNT.finditer(body) if int(m["n"])]
            if bad:
                self.problem(f"counts with {' '.join(bad)}: {text}", line)
        elif PLANNED.match(body) or HARNESS_FAILED.match(body) or KUNIT_CASE_ERROR.match(body):
            self.problem(f"reported: {text}", line)
        else:
            m = RESULT.match(body)
            if m and Result("", m["status"], m["directive"] or "", m["reason"] or "", 0, line).kind == FAIL:
                self.problem(f"failed, in \"# \"-prefixed output: {text}", line)

    def end_run(self, line, text):
        """The kernel stopped: what is open ends here."""
        self.finish(line)
        self.ended = (line, text)
        self.after_end = False

    def after_run_end(self, line):
        if self.ended is not None and not self.after_end:
            self.after_end = True
            self.problem(f"KTAP output after the run ended at line {self.ended[0]} ({self.ended[1]!r}) "
                         "and before a new boot", line)

    def finish(self, line):
        while self.doc is not None:
            self.close_document(self.doc, line, at_end=True)
            self.doc = self.suspended.pop() if self.suspended else None
        self.since_result = []

    # Checks on the whole tree, where every test's path is known.

    def check_tree(self, allow_skip, allow_empty, min_results):
        total = [0, 0, 0]
        for doc in self.documents:
            if doc.top.plan == 0 and not any(re.search(p, "") for p in allow_empty):
                self.problem(f"the document from line {doc.line} planned 1..0: it ran nothing", doc.top.plan_line)
            flagged = False
            counts = [0, 0, 0]
            for r in doc.top.results:
                c = r.counts()
                counts = [a + b for a, b in zip(counts, c)]
                if r.children is not None and not c[PASS] and not c[FAIL] and c[SKIP]:
                    self.problem(f"suite {r.name}: all its {c[SKIP]} tests skipped", r.line)
                    flagged = True
                self.walk(r, "", allow_skip, allow_empty)
            if not counts[PASS] and not counts[FAIL] and counts[SKIP] and not flagged:
                self.problem(f"the document from line {doc.line}: all its {counts[SKIP]} tests skipped")
            total = [a + b for a, b in zip(total, counts)]
        if min_results is not None and sum(total) < min_results:
            self.problem(f"{sum(total)} test results, fewer than the {min_results} expected (--min-results)")

    def walk(self, r, prefix, allow_skip, allow_empty):
        path = prefix + r.name
        if r.children is None:
            if r.kind == FAIL:
                self.failed_paths.append(path)
            if r.kind == SKIP and not any(re.search(p, path) for p in allow_skip):
                self.problem(f"skipped: {path} # {r.directive}{r.reason.rstrip()}: not allowed by --allow-skip",
                             r.line)
            return
        if not r.children and not r.synthetic and not any(re.search(p, path) for p in allow_empty):
            planned = f"planned 1..{r.plan}" if r.plan is not None else "no plan"
            self.problem(f"{path}: {planned}, its subtests ran nothing", r.line)
        for child in r.children:
            self.walk(child, path + "/", allow_skip, allow_empty)


def make_suite(r):
    suite = Suite(r.name)
    suite.passed, suite.failed, suite.skipped = r.counts()
    if r.children is not None:
        suite.items = [(c.name, c.children is None, c.counts(), c.kind == FAIL) for c in r.children]
    # A suite that failed with passing tests: a binary that crashed after them.
    if r.kind == FAIL and suite.failed == 0:
        suite.failed += 1
    return suite


def parse(lines, verbose, allow_skip=(), allow_empty=(), min_results=None):
    """Returns (suites, problems, contexts, failed_paths) for the KTAP output in lines.

    contexts holds (title, lines): for each of the first REPORTS_SHOWN kernel
    reports, the report's line and the REPORT_CONTEXT lines after it; for each
    of the first FAILURES_SHOWN failed tests, the lines the test printed
    before its result.
    """
    judge = Judge(verbose)
    judge.finish(judge.feed(lines))
    judge.check_tree(allow_skip, allow_empty, min_results)
    return judge.suites, judge.problems, judge.contexts, judge.failed_paths


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
    if not rows:
        print(f"(the suites matching {pattern!r} have no subtests)")
        return
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


def regex(text):
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"bad regular expression {text!r}: {e}")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", help="console log to parse")
    ap.add_argument("--expect", action="append", default=[], metavar="SUITE",
                    help="a suite that must have run (repeatable)")
    ap.add_argument("--allow-skip", action="append", default=[], metavar="REGEX", type=regex,
                    help="a skipped test whose path (suite/.../test) matches REGEX is no problem (repeatable)")
    ap.add_argument("--allow-empty", action="append", default=[], metavar="REGEX", type=regex,
                    help="a test whose path matches REGEX may have subtests that ran nothing (repeatable)")
    ap.add_argument("--min-results", type=int, metavar="N",
                    help="fewer than N leaf results in all is a problem")
    ap.add_argument("--label", default="kunit", help="word before the summary line")
    ap.add_argument("-q", "--quiet", action="store_true", help="do not print each result line")
    ap.add_argument("--table", metavar="PATTERN",
                    help="print a table of the suites matching PATTERN by their tests")
    args = ap.parse_args()

    try:
        with open(args.log, errors="replace") as f:
            suites, problems, contexts, failed_paths = parse(f, not args.quiet, args.allow_skip,
                                                             args.allow_empty, args.min_results)
    except OSError as e:
        print(f"ktap.py: cannot read the log {args.log}: {e.strerror}", file=sys.stderr)
        return 2

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
    # One line per failed test with its whole path, which scripts/mutants/run.sh
    # matches against a mutant's "Caught by:" suite.test names.
    for path in failed_paths:
        print(f"FAILED TEST: {path}")
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
