#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise the BENCH lines of bench/guest/bench.sh as Markdown.

For each workload and allocator: median, min, max and a 95% confidence
interval of the mean (Student t) of the workload's main figure, over the runs
of one boot; the Rust/C ratio of the medians, and the change (C - Rust) / C,
positive when the Rust pool is faster. Next to it, the task-clock of the
command (perf stat, CPU ms), and for the pool the time its refill worker spent
during the workload and the requests it left to C (fallbacks).
"""

import argparse
import math
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"BENCH (.*)$")
# Two-sided 95% Student t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    best = max(k for k in T95 if k <= df) if df >= 1 else 1
    return T95[best]


def main_metric(w):
    if w.startswith("k_alloc"):
        return "ns_per_page"
    return "ns_per_map"


def summary(values):
    n = len(values)
    med = statistics.median(values)
    mean = statistics.fmean(values)
    half = t95(n - 1) * statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
    return med, min(values), max(values), mean - half, mean + half


def fmt(v):
    if v != v:
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", nargs="+", help="guest log(s) with BENCH lines")
    ap.add_argument("--title", default="Benchmark", help="heading of the report")
    args = ap.parse_args()

    data = defaultdict(lambda: defaultdict(list))  # (workload, alloc) -> key -> values
    order = []
    comments = []
    for path in args.log:
        with open(path, errors="replace") as f:
            for raw in f:
                line = raw.rstrip()
                m = LINE.search(line)
                if not m:
                    if line.startswith("# ") and ("guest:" in line or "perf events" in line
                                                  or "clocksource" in line):
                        comments.append(line[2:])
                    continue
                kv = dict(p.split("=", 1) for p in m.group(1).split() if "=" in p)
                key = (kv["workload"], kv["alloc"])
                if kv["workload"] not in order:
                    order.append(kv["workload"])
                for k, v in kv.items():
                    try:
                        data[key][k].append(float(v))
                    except ValueError:
                        pass
    if not data:
        print("no BENCH lines found", file=sys.stderr)
        return 1

    print(f"## {args.title}\n")
    for c in dict.fromkeys(comments):
        print(f"- {c}")
    runs = {len(data[k]["run"]) for k in data}
    print(f"- runs per workload and allocator: {sorted(runs)}\n")
    print("| workload | figure | C median [min, max] (95% CI) | Rust median [min, max] (95% CI) "
          "| Rust/C | (C-Rust)/C | task-clock ms C / Rust | pool worker ms | fallbacks |")
    print("|---|---|---|---|---|---|---|---|---|")
    bad = False
    for w in order:
        metric = main_metric(w)
        c, r = data.get((w, "c")), data.get((w, "rust"))
        if not c or not r or metric not in c or metric not in r:
            print(f"| {w} | {metric} | missing | missing | | | | | |")
            bad = True
            continue
        cs, rs = summary(c[metric]), summary(r[metric])
        ratio = rs[0] / cs[0] if cs[0] else float("nan")
        change = (cs[0] - rs[0]) / cs[0] * 100 if cs[0] else float("nan")
        tc = statistics.median(c["task_clock_ms"]) if c.get("task_clock_ms") else float("nan")
        tr = statistics.median(r["task_clock_ms"]) if r.get("task_clock_ms") else float("nan")
        worker = statistics.median(r["pool_worker_ns_total"]) / 1e6 if r.get("pool_worker_ns_total") else float("nan")
        fb = statistics.median(r["pool_fallbacks"]) if r.get("pool_fallbacks") else float("nan")

        def cell(s):
            return f"{fmt(s[0])} [{fmt(s[1])}, {fmt(s[2])}] ({fmt(s[3])}..{fmt(s[4])})"

        print(f"| {w} | {metric} | {cell(cs)} | {cell(rs)} | {ratio:.3f} | {change:+.1f}% "
              f"| {fmt(tc)} / {fmt(tr)} | {fmt(worker)} | {fmt(fb)} |")

    print("\nUnmap side (ns per unmap ioctl or call, medians):\n")
    print("| workload | C | Rust | Rust/C |")
    print("|---|---|---|---|")
    for w in order:
        c, r = data.get((w, "c"), {}), data.get((w, "rust"), {})
        if "ns_per_unmap" in c and "ns_per_unmap" in r:
            mc, mr = statistics.median(c["ns_per_unmap"]), statistics.median(r["ns_per_unmap"])
            print(f"| {w} | {fmt(mc)} | {fmt(mr)} | {mr / mc if mc else float('nan'):.3f} |")

    print("\nMemory (medians): tables held at the end of the workload (NR_IOMMU_PAGES"
          " minus before), and the pool's spare pages after it:\n")
    print("| workload | tables C | tables Rust | table_pages (in-kernel peak) C / Rust | pool clean | pool dirty |")
    print("|---|---|---|---|---|---|")
    for w in order:
        c, r = data.get((w, "c"), {}), data.get((w, "rust"), {})
        if not c or not r:
            continue
        dc = [e - b for e, b in zip(c["nr_iommu_pages_end"], c["nr_iommu_pages_before"])]
        dr = [e - b for e, b in zip(r["nr_iommu_pages_end"], r["nr_iommu_pages_before"])]
        tp = (f"{fmt(statistics.median(c['table_pages']))} / {fmt(statistics.median(r['table_pages']))}"
              if "table_pages" in c and "table_pages" in r else "-")
        print(f"| {w} | {fmt(statistics.median(dc))} | {fmt(statistics.median(dr))} | {tp} "
              f"| {fmt(statistics.median(r.get('pool_clean', [float('nan')])))} "
              f"| {fmt(statistics.median(r.get('pool_dirty', [float('nan')])))} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
