#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise the BENCH lines of bench/guest/bench.sh as Markdown.

For each workload and allocator: median, min, max and a 95% confidence
interval of the mean (Student t) of the workload's main figure, over the runs
of one boot; the Rust/C ratio of the medians, and the change (C - Rust) / C,
positive when the Rust pool is faster. Next to it, the task-clock of the
command (perf stat, CPU ms), and for the pool the time its refill worker spent
during the workload and the requests it left to C (fallbacks).

With --json, also the summaries and every BENCH line as JSON; with --svg, a
plot of the Rust/C ratio per workload: the ratio of the medians (dot) and a
95% interval of the mean of the per-run ratios (bar; run R of C and run R of
Rust ran next to each other in the boot).
"""

import argparse
import json
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
    if w.startswith(("k_alloc", "k_remote")):
        return "ns_per_page"
    if w == "k_steady_emptied":
        return "ns_per_table"
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


def paired_ratios(c, r, metric):
    """Rust/C per run, pairing the runs that ran next to each other."""
    cv = dict(zip(c["run"], c[metric]))
    rv = dict(zip(r["run"], r[metric]))
    return [rv[k] / cv[k] for k in sorted(cv) if k in rv and cv[k]]


def no_nan(v):
    """NaN is not JSON: a missing figure becomes null."""
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, dict):
        return {k: no_nan(x) for k, x in v.items()}
    if isinstance(v, list):
        return [no_nan(x) for x in v]
    return v


def svg_plot(rows, title):
    """A dot-and-bar plot of the Rust/C ratios, one row per workload."""
    left, right, top, row_h = 170, 40, 50, 22
    width = 760
    plot_w = width - left - right
    hi = max([1.5] + [x for r in rows for x in (r["ratio"], r["ratio_ci"][1]) if x == x])
    hi = math.ceil(hi * 4) / 4
    height = top + row_h * len(rows) + 40

    def x(v):
        return left + plot_w * min(max(v, 0.0), hi) / hi

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">'
           f'{title}</text>',
           f'<text x="{width / 2}" y="34" text-anchor="middle" fill="#555">Rust/C of the '
           f'workload figure: left of 1 the pool is faster (dot: medians; bar: 95% interval '
           f'of the per-run ratios)</text>']
    bottom = top + row_h * len(rows)
    tick = 0.0
    while tick <= hi + 1e-9:
        out.append(f'<line x1="{x(tick):.1f}" y1="{top - 4}" x2="{x(tick):.1f}" y2="{bottom}" '
                   f'stroke="{"#000" if tick == 1.0 else "#ddd"}"/>')
        out.append(f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
                   f'{tick:.2f}</text>')
        tick += 0.25
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{r["workload"]}</text>')
        lo, up = r["ratio_ci"]
        if lo == lo and up == up:
            out.append(f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(up):.1f}" y2="{y:.1f}" '
                       f'stroke="#36c" stroke-width="3"/>')
        if r["ratio"] == r["ratio"]:
            out.append(f'<circle cx="{x(r["ratio"]):.1f}" cy="{y:.1f}" r="4" fill="#c33"/>')
            out.append(f'<text x="{min(x(r["ratio"]) + 8, width - 4):.1f}" y="{y - 4:.1f}" '
                       f'fill="#555" font-size="10">{r["ratio"]:.3f}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", nargs="+", help="guest log(s) with BENCH lines")
    ap.add_argument("--title", default="Benchmark", help="heading of the report")
    ap.add_argument("--json", help="also write the summaries and raw lines here")
    ap.add_argument("--svg", help="also write a plot of the ratios here")
    args = ap.parse_args()
    lines = []

    data = defaultdict(lambda: defaultdict(list))  # (workload, alloc) -> key -> values
    order = []
    comments = []
    for path in args.log:
        with open(path, errors="replace") as f:
            for text in f:
                line = text.rstrip()
                m = LINE.search(line)
                if not m:
                    if line.startswith("# ") and ("guest:" in line or "perf events" in line
                                                  or "clocksource" in line):
                        comments.append(line[2:])
                    continue
                kv = dict(p.split("=", 1) for p in m.group(1).split() if "=" in p)
                lines.append(kv)
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
    rows = []
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
        pr = paired_ratios(c, r, metric)
        prs = summary(pr) if pr else (float("nan"),) * 5

        def js(s):
            return dict(zip(("median", "min", "max", "ci95_lo", "ci95_hi"), s))

        rows.append({"workload": w, "metric": metric, "c": js(cs), "rust": js(rs),
                     "ratio": ratio, "change_pct": change, "run_ratios": pr,
                     "ratio_ci": [prs[3], prs[4]], "task_clock_ms_c": tc,
                     "task_clock_ms_rust": tr, "pool_worker_ms": worker,
                     "pool_fallbacks": fb})

    def med(d, key):
        return statistics.median(d[key]) if d.get(key) else float("nan")

    def r3(x):
        return f"{x:.3f}" if x == x else "-"

    def ratio_of(c, r, key):
        mc, mr = med(c, key), med(r, key)
        return mr / mc if mc == mc and mr == mr and mc else float("nan")

    print("\nUnmap and teardown side (medians): ns per unmap ioctl or call (per page freed for"
          " k_alloc_* and k_remote_*), and ns per table freed when the domain is freed (in-kernel map workloads):\n")
    print("| workload | unmap C | unmap Rust | unmap Rust/C | teardown ns/table C | Rust | teardown Rust/C |")
    print("|---|---|---|---|---|---|---|")
    by_name = {row["workload"]: row for row in rows}
    for w in order:
        c, r = data.get((w, "c"), {}), data.get((w, "rust"), {})
        # The free side of the k_alloc workloads stands for their unmap side.
        key = "ns_per_unmap" if "ns_per_unmap" in c else "ns_per_free"
        if key not in c or key not in r:
            continue
        unmap = ratio_of(c, r, key)
        teardown = ratio_of(c, r, "ns_per_table_freed")
        if w in by_name:
            by_name[w]["unmap_ratio"] = unmap
            by_name[w]["teardown_ratio"] = teardown
        print(f"| {w} | {fmt(med(c, key))} | {fmt(med(r, key))} | {r3(unmap)} "
              f"| {fmt(med(c, 'ns_per_table_freed'))} | {fmt(med(r, 'ns_per_table_freed'))} "
              f"| {r3(teardown)} |")

    print("\nLatency of one map call (medians over the runs of the first round's p50 and p99):\n")
    print("| workload | p50 C | p50 Rust | p50 Rust/C | p99 C | p99 Rust | p99 Rust/C |")
    print("|---|---|---|---|---|---|---|")
    for w in order:
        c, r = data.get((w, "c"), {}), data.get((w, "rust"), {})
        if "p99_map_ns" not in c or "p99_map_ns" not in r:
            continue
        p50, p99 = ratio_of(c, r, "p50_map_ns"), ratio_of(c, r, "p99_map_ns")
        if w in by_name:
            by_name[w]["p50_ratio"] = p50
            by_name[w]["p99_ratio"] = p99
        print(f"| {w} | {fmt(med(c, 'p50_map_ns'))} | {fmt(med(r, 'p50_map_ns'))} | {r3(p50)} "
              f"| {fmt(med(c, 'p99_map_ns'))} | {fmt(med(r, 'p99_map_ns'))} | {r3(p99)} |")

    # Two threads against one, each allocator: ns per map over every
    # thread's maps, so 2.0 is twice the throughput.
    scaling = {}
    pair = ("k_concurrent_1", "k_concurrent_2")
    if all((w, a) in data for w in pair for a in ("c", "rust")):
        print("\nScaling (k_concurrent_1 and _2, medians of ns per map over all threads' maps;"
              " scaling is the one-thread figure over the two-thread one, 2.000 is perfect):\n")
        print("| allocator | 1 thread | 2 threads | scaling |")
        print("|---|---|---|---|")
        for a in ("c", "rust"):
            m1, m2 = med(data[(pair[0], a)], "ns_per_map"), med(data[(pair[1], a)], "ns_per_map")
            scaling[a] = m1 / m2 if m2 == m2 and m2 else float("nan")
            print(f"| {a} | {fmt(m1)} | {fmt(m2)} | {r3(scaling[a])} |")

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
    if args.json:
        with open(args.json, "w") as f:
            doc = {"title": args.title, "environment": list(dict.fromkeys(comments)),
                   "ratio": "Rust/C of the medians; below 1 the pool is faster",
                   "workloads": no_nan(rows), "scaling": no_nan(scaling), "raw": lines}
            json.dump(doc, f, indent=1, allow_nan=False)
            f.write("\n")
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg_plot(rows, args.title))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
