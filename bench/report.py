#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark guest's output into bench/results/.

Reads the "R workload mode metric value rep", "S workload mode ms percent
rep" and "I key value" lines that harness/guest/bench.sh and sp_bench
print, and writes:
  results.csv   one row per (workload, metric, mode, repetition)
  summary.csv   one row per (workload, metric, mode): median, min, max, n
  coverage.csv  huge-mapping coverage samples over time
  table.md      per workload, every mode's median (and min-max over the
                repetitions) and each superpage mode's ratio of medians to
                the best other mode
  *.png         plots (medians), drawn with gnuplot (when it is installed)
Nothing here judges performance: it only reports.
"""
import argparse
import csv
import math
import os
import shutil
import subprocess
import tempfile

MODES = [
    ("4k", "4 KiB"),
    ("thp", "THP always"),
    ("thp-shrink", "THP always + underused shrinker"),
    ("khugepaged", "THP madvise + khugepaged"),
    ("mthp64", "mTHP 64 KiB"),
    ("hugetlb", "hugetlbfs"),
    ("sp512", "superpages, threshold 512"),
    ("sp128", "superpages, threshold 128"),
    ("sp512-zall", "superpages, faults zero whole clusters"),
    ("sp512-nopool", "superpages, no pool of zeroed frames"),
]
SP_MODES = ["sp512", "sp128", "sp512-zall", "sp512-nopool"]
MODE_NAME = dict(MODES)

WORKLOADS = [
    ("sparse", "Sparse: one 4 KiB write per 64 KiB of a large mapping"),
    ("sparse-memcg", "Sparse in a memory cgroup smaller than the mapping, "
                     "zram swap"),
    ("fill-seq", "Dense sequential fill (first write to every page), then "
                 "wait for huge-mapping coverage"),
    ("fill-rand", "Dense fill in random page order, then wait for coverage"),
    ("fill-rand-256", "The same random-order fill at twice the size "
                      "(256 MiB; 128 MiB in the short variant)"),
    ("fill-stride", "Dense fill of every other 4 KiB page in order, then "
                    "of the pages in between, then wait for coverage"),
    ("gups", "Random 8-byte updates over the filled mapping (GUPS-style)"),
    ("latency", "Fault latency of a sequential fill, each touch timed"),
    ("fork", "Fork of a filled heap; the child writes one word per 64 KiB "
             "(Redis-style snapshot)"),
    ("procs", "Short-lived processes, each writing every page of 4 MiB"),
    ("redis-load", "redis-server (Debian's redis 7, jemalloc) after "
                   "redis-benchmark loaded it with random keys; server "
                   "process memory (smaps_rollup), its cgroup, MemAvailable "
                   "drop since before the server started"),
    ("redis-frag", "The same after three keys in four were deleted"),
    ("redis-settled", "The same 2 s later (the daemons ran)"),
    ("redis-bench", "redis-benchmark's own SET and GET test on the "
                    "fragmented server (50 clients, no pipelining): "
                    "throughput and latency; then the server's memory"),
    ("xz", "xz -6 -T1 compressing a file, run as short-lived processes one "
           "after the other: per run (median), peak RSS, AnonHugePages "
           "sampled every 10 ms, memory cgroup peak"),
]
SWEEP = [4, 16, 64, 256, 2048]
for _k in SWEEP:
    WORKLOADS.append((f"sweep-{_k}", f"Density sweep: one write per {_k} KiB"))

# metric: (description, unit, better): better is "lower", "higher" or None
# (a fact, not a score: no ratio).
METRICS = {
    "touches": ("pages touched", "", None),
    "faults": ("page faults", "", "lower"),
    "faults_per_2m": ("page faults per 2 MiB", "", "lower"),
    "ns_per_touch": ("time per touch", "ns", "lower"),
    "fault_p50_us": ("fault latency p50", "us", "lower"),
    "fault_p99_us": ("fault latency p99", "us", "lower"),
    "fault_p999_us": ("fault latency p99.9", "us", "lower"),
    "fault_max_us": ("fault latency max", "us", "lower"),
    "touch_p50_us": ("touch latency p50 (every touch)", "us", "lower"),
    "touch_p99_us": ("touch latency p99 (every touch)", "us", "lower"),
    "touch_p999_us": ("touch latency p99.9 (every touch)", "us", "lower"),
    "touch_max_us": ("touch latency max (every touch)", "us", "lower"),
    "rss_kib": ("RSS after the touches", "KiB", "lower"),
    "mem_kib": ("memory used after the touches (memcg + hugetlb pool)",
                "KiB", "lower"),
    "avail_drop_kib": ("MemAvailable drop after the touches", "KiB",
                       "lower"),
    "swapped_out": ("pages swapped out", "pages", "lower"),
    "oom_kills": ("OOM kills", "", "lower"),
    "rss_settled_kib": ("RSS after the settle time (daemons ran)", "KiB",
                        "lower"),
    "mem_settled_kib": ("memory used after the settle time", "KiB",
                        "lower"),
    "huge_kib": ("huge-mapped part of the mapping (its VMA's "
                 "AnonHugePages + Private_Hugetlb)", "KiB", None),
    "huge_settled_kib": ("huge-mapped after the settle time", "KiB", None),
    "reclaim_ms": ("memory.reclaim of the untouched size: time", "ms",
                   "lower"),
    "mem_reclaimed_kib": ("memory used after that reclaim request", "KiB",
                          "lower"),
    "rss_reclaimed_kib": ("RSS after that reclaim request", "KiB", "lower"),
    "huge_reclaimed_kib": ("huge-mapped after that reclaim request", "KiB",
                           None),
    "swapped_by_reclaim": ("pages swapped out by that reclaim request",
                           "pages", "lower"),
    "keys": ("keys in the server", "", None),
    "mem_peak_kib": ("memory cgroup peak (memory.peak)", "KiB", "lower"),
    "ms_per_run": ("time per run (median)", "ms", "lower"),
    "faults_per_run": ("page faults per run", "", "lower"),
    "maxrss_kib": ("peak RSS of a run", "KiB", "lower"),
    "huge_max_kib": ("AnonHugePages of a run, highest sample", "KiB", None),
    "dtlb_load_misses_per_req": ("server's dTLB load misses per request "
                                 "(perf stat)", "", "lower"),
    "dtlb_store_misses_per_req": ("server's dTLB store misses per request "
                                  "(perf stat)", "", "lower"),
    "set_rps": ("SET throughput", "req/s", "higher"),
    "set_avg_ms": ("SET latency, mean", "ms", "lower"),
    "set_p50_ms": ("SET latency p50", "ms", "lower"),
    "set_p99_ms": ("SET latency p99", "ms", "lower"),
    "set_max_ms": ("SET latency max", "ms", "lower"),
    "get_rps": ("GET throughput", "req/s", "higher"),
    "get_avg_ms": ("GET latency, mean", "ms", "lower"),
    "get_p50_ms": ("GET latency p50", "ms", "lower"),
    "get_p99_ms": ("GET latency p99", "ms", "lower"),
    "get_max_ms": ("GET latency max", "ms", "lower"),
    "fill_ms": ("fill time", "ms", "lower"),
    "cover99_ms": ("time from last touch to 99% huge-mapped", "ms",
                   "lower"),
    "cover_pct": ("huge-mapped at the end", "%", "higher"),
    "collapses": ("khugepaged collapses", "", None),
    "promotions": ("superpage promotions", "", None),
    "copied_kib": ("bytes copied to build huge mappings", "KiB", "lower"),
    "daemon_us_per_2m": ("daemon CPU time per 2 MiB mapping built", "us",
                         "lower"),
    "prezeroed_frames": ("reservations on frames zeroed in advance", "",
                         None),
    "zerod_ms": ("ksuperpage_zerod CPU time, first touch to coverage",
                 "ms", None),
    "mmap_wait_samples": ("mmap() calls timed by the prober", "", None),
    "mmap_wait_rounds": ("fills the prober ran through (until 1,000 "
                         "calls, at most 20)", "", None),
    "mmap_wait_p50_us": ("mmap() latency while the daemon works, p50 "
                         "(prober runs)", "us", "lower"),
    "mmap_wait_p99_us": ("mmap() latency while the daemon works, p99 "
                         "(prober runs)", "us", "lower"),
    "mmap_wait_p999_us": ("mmap() latency while the daemon works, p99.9 "
                          "(prober runs)", "us", "lower"),
    "mmap_wait_max_us": ("mmap() latency while the daemon works, max "
                         "(prober runs)", "us", "lower"),
    "ns_per_update": ("time per update", "ns", "lower"),
    "dtlb_misses_per_update": ("dTLB load misses per update (PMU)", "",
                               "lower"),
    "fork_ms": ("fork() time", "ms", "lower"),
    "child_fork_return_ms": ("fork() until the child runs", "ms", "lower"),
    "child_write_ms": ("child's writes: time", "ms", "lower"),
    "child_write_faults": ("child's writes: faults", "", "lower"),
    "child_write_mem_kib": ("child's writes: memory", "KiB", "lower"),
    "us_per_process": ("time per process", "us", "lower"),
    "faults_per_process": ("faults per process", "", "lower"),
    "corrupt_pages": ("pages that read back wrong", "", "lower"),
}

# The headline: one or a few figures per workload.
HEADLINE = [
    ("sparse", "mem_kib"), ("sparse", "mem_settled_kib"),
    ("sparse", "mem_reclaimed_kib"), ("sparse", "swapped_by_reclaim"),
    ("sparse", "faults"),
    ("sparse-memcg", "swapped_out"), ("sparse-memcg", "oom_kills"),
    ("fill-seq", "faults"), ("fill-seq", "fill_ms"),
    ("fill-seq", "cover99_ms"), ("fill-seq", "copied_kib"),
    ("fill-rand", "faults"), ("fill-rand", "cover99_ms"),
    ("fill-rand-256", "faults"), ("fill-rand-256", "cover99_ms"),
    ("fill-stride", "faults"), ("fill-stride", "cover99_ms"),
    ("gups", "ns_per_update"),
    ("latency", "fault_p99_us"), ("latency", "touch_p999_us"),
    ("fork", "child_write_mem_kib"), ("fork", "child_write_ms"),
    ("procs", "us_per_process"),
    ("fill-seq", "daemon_us_per_2m"), ("fill-seq", "mmap_wait_max_us"),
    ("redis-frag", "rss_kib"), ("redis-frag", "huge_kib"),
    ("redis-bench", "get_rps"), ("redis-bench", "get_p99_ms"),
    ("redis-bench", "set_rps"),
    ("xz", "ms_per_run"), ("xz", "mem_peak_kib"), ("xz", "huge_max_kib"),
]

# The figures the 2018 linux-mm review of THP reservations asked for:
# fault latency, memory consumption, successful promotions.
REVIEW_2018 = [
    ("fault latency", [("latency", "fault_p50_us"), ("latency", "fault_p99_us"),
                       ("latency", "fault_max_us"),
                       ("latency", "touch_p999_us"), ("sparse", "fault_p99_us"),
                       ("fill-seq", "fill_ms")]),
    ("memory consumption", [("sparse", "mem_kib"),
                            ("sparse", "mem_settled_kib"),
                            ("sparse", "mem_reclaimed_kib"),
                            ("sparse-memcg", "swapped_out"),
                            ("redis-frag", "rss_kib"),
                            ("redis-settled", "mem_kib"),
                            ("xz", "mem_peak_kib")]),
    ("successful promotions", [("fill-seq", "promotions"),
                               ("fill-seq", "collapses"),
                               ("fill-seq", "cover_pct"),
                               ("fill-seq", "cover99_ms"),
                               ("fill-rand", "promotions"),
                               ("fill-rand", "collapses"),
                               ("fill-rand", "cover_pct"),
                               ("fill-rand", "cover99_ms"),
                               ("fill-rand-256", "cover99_ms"),
                               ("fill-stride", "cover99_ms"),
                               ("redis-settled", "huge_kib")]),
]


def parse(path):
    """vals[(wl, metric, mode)] = {rep: value}; cov: (wl, mode, ms, %, rep)."""
    vals, cov, info, notes = {}, [], {}, []
    with open(path, errors="replace") as f:
        for line in f:
            w = line.strip().split()
            if len(w) in (5, 6) and w[0] == "R":
                try:
                    v = float(w[4])
                    r = int(w[5]) if len(w) == 6 else 1
                except ValueError:
                    continue
                vals.setdefault((w[1], w[3], w[2]), {})[r] = v
            elif len(w) in (5, 6) and w[0] == "S":
                try:
                    cov.append((w[1], w[2], float(w[3]), float(w[4]),
                                int(w[5]) if len(w) == 6 else 1))
                except ValueError:
                    pass
            elif len(w) >= 2 and w[0] == "I":
                info[w[1]] = " ".join(w[2:])
            elif line.startswith("# FAILED"):
                notes.append(line.strip("# \n"))
    return vals, cov, info, notes


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def summarize(vals):
    """(wl, metric, mode) -> (median, min, max, n)."""
    return {k: (median(list(v.values())), min(v.values()), max(v.values()),
                len(v)) for k, v in vals.items()}


def fmt(v):
    if v is None:
        return "–"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def cell(st):
    """A median, with its min-max when the repetitions differ."""
    if st is None:
        return "–"
    med, lo, hi, n = st
    if n > 1 and lo != hi:
        return f"{fmt(med)} ({fmt(lo)}–{fmt(hi)})"
    return fmt(med)


def best_other(res, wl, metric, modes):
    better = METRICS.get(metric, ("", "", "lower"))[2]
    vals = [(res[(wl, metric, m)], m) for m in modes
            if m not in SP_MODES and (wl, metric, m) in res]
    if not better or not vals:
        return None, None
    v, m = (min if better == "lower" else max)(vals)
    return v, m


def ratio(v, best):
    if v is None or best is None:
        return "–"
    if best == 0:
        return "= (both 0)" if v == 0 else "– (best is 0)"
    r = v / best
    return f"{r:.3g}x"


# What sp_bench pstat measures for a running server, worded for it.
SERVER_LABELS = {
    "rss_kib": "server RSS (smaps_rollup)",
    "huge_kib": "server AnonHugePages (smaps_rollup)",
    "mem_kib": "server's memory cgroup (memory.current)",
    "avail_drop_kib": "MemAvailable drop since before the server started",
}


def metric_label(metric, wl=""):
    desc, unit, _ = METRICS.get(metric, (metric, "", "lower"))
    if wl.startswith("redis") and metric in SERVER_LABELS:
        desc = SERVER_LABELS[metric]
    return f"{desc} ({unit})" if unit else desc


def write_table(out, stats, info, notes, accel, kernel, commit, modes):
    res = {k: v[0] for k, v in stats.items()}  # medians
    sp_modes = [m for m in SP_MODES if m in modes]
    reps = info.get("reps", "1")
    lines = []
    add = lines.append
    add("# Superpage benchmark results")
    add("")
    add(f"Commit `{commit}`; kernel `{info.get('kernel', '?')}` "
        f"({kernel} flavour); accelerator **{accel}**; "
        f"{info.get('cpus', '?')} vCPUs, "
        f"{int(info.get('mem_kib', '0')) // 1024} MiB; "
        f"sizes `{info.get('size', '?')}`; all modes in one boot, "
        f"{reps} repetition(s), the mode order shuffled per repetition "
        f"(seed {info.get('seed', '?')}):")
    add("")
    r = 1
    while f"order{r}" in info:
        add(f"- repetition {r}: {info[f'order{r}']}")
        r += 1
    add("")
    add(f"Real programs: redis {info.get('redis', '?')}, "
        f"{info.get('xz', 'xz ?')}.  PMU in the guest: "
        f"{info.get('pmu', '?')}; perf: {info.get('perf', '?')}.")
    if info.get("pmu") != "yes" or info.get("perf") != "works":
        add("**No dTLB-miss figures**: " +
            ("the guest has no PMU (TCG emulates none)"
             if info.get("pmu") != "yes" else
             "perf is not staged or does not count in this guest") +
            "; the GUPS dTLB row appears only where perf_event_open() "
            "counts.")
    add("")
    if accel != "kvm":
        add("**Times are TCG (emulated CPU) times, not hardware times.** "
            "QEMU's TCG translates every guest access through its own "
            "software TLB of 4 KiB entries, so huge mappings save guest "
            "page-table walks but not TLB misses as a CPU would: read the "
            "time ratios as costs of kernel work (faults, zeroing, "
            "copying), and the fault, memory and swap figures as exact.")
        add("")
    add("Cells: the median over the repetitions, and in brackets the "
        "lowest and highest value when they differ.  Ratio columns: a "
        "superpage mode's median divided by the best other mode's median "
        "(lowest, or highest where higher is better, among every mode but "
        "the superpage ones).  Below 1x is better for \"lower is better\" "
        "figures. \"–\": the mode has no such figure (e.g. no huge "
        "mapping is ever built with 4 KiB pages; the real programs do not "
        "run on hugetlbfs).")
    add("")
    for n in notes:
        add(f"- **{n}**")
    if notes:
        add("")
    hdr = "| workload | figure | " + " | ".join(
        MODE_NAME.get(m, m) for m in modes) + " | best other | " + \
        " | ".join(f"{m} / best" for m in sp_modes) + " |"
    sep = "|" + "---|" * (3 + len(modes) + len(sp_modes))

    def row(wl, metric, show_wl=True):
        best, bm = best_other(res, wl, metric, modes)
        cells = [wl if show_wl else "", metric_label(metric, wl)]
        cells += [cell(stats.get((wl, metric, m))) for m in modes]
        cells.append(f"{fmt(best)} ({bm})" if bm else "–")
        cells += [ratio(res.get((wl, metric, m)), best) for m in sp_modes]
        return "| " + " | ".join(cells) + " |"

    add("## Headline")
    add("")
    add(hdr)
    add(sep)
    for wl, metric in HEADLINE:
        if any((wl, metric, m) in res for m in modes):
            add(row(wl, metric))
    add("")
    if any(any((wl, met, m) in res for m in modes)
           for _t, figs in REVIEW_2018 for wl, met in figs):
        add("## Figures the 2018 linux-mm review of THP reservations asked for")
        add("")
        add("Fault latency, memory consumption and successful promotions, "
            "from the workloads below.")
        add("")
        for title, figs in REVIEW_2018:
            add(f"### {title}")
            add("")
            add(hdr)
            add(sep)
            for wl, met in figs:
                if any((wl, met, m) in res for m in modes):
                    add(row(wl, met))
            add("")
    targets(add, res)
    sweep(add, stats, res, modes, sp_modes, info)
    for wl, desc in WORKLOADS:
        if wl.startswith("sweep-"):
            continue
        metrics = []
        for (w, met, _m) in res:
            if w == wl and met not in metrics:
                metrics.append(met)
        if not metrics:
            continue
        order = list(METRICS)
        metrics.sort(key=lambda x: order.index(x) if x in order else 999)
        add(f"## {wl}")
        add("")
        add(desc + ".")
        add("")
        add(hdr)
        add(sep)
        for met in metrics:
            add(row(wl, met, False))
        add("")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def sweep(add, stats, res, modes, sp_modes, info):
    """The density sweep: memory, faults, time per touch, per density."""
    if not any(k[0].startswith("sweep-") for k in res):
        return
    add("## Density sweep")
    add("")
    add(f"A {info.get('sweep_mib', '?')} MiB mapping, one 8-byte write per "
        "4, 16, 64, 256 KiB or 2 MiB, first touches only (no settle time, "
        "no reclaim): memory used (memory cgroup plus hugetlb pool), page "
        "faults, time per touch.")
    add("")
    hdr = "| one write per | figure | " + " | ".join(
        MODE_NAME.get(m, m) for m in modes) + " | best other | " + \
        " | ".join(f"{m} / best" for m in sp_modes) + " |"
    add(hdr)
    add("|" + "---|" * (3 + len(modes) + len(sp_modes)))
    for k in SWEEP:
        wl = f"sweep-{k}"
        for met in ("mem_kib", "faults", "ns_per_touch", "huge_kib"):
            if not any((wl, met, m) in res for m in modes):
                continue
            best, bm = best_other(res, wl, met, modes)
            cells = [f"{k} KiB" if k < 2048 else "2 MiB",
                     metric_label(met)]
            cells += [cell(stats.get((wl, met, m))) for m in modes]
            cells.append(f"{fmt(best)} ({bm})" if bm else "–")
            cells += [ratio(res.get((wl, met, m)), best) for m in sp_modes]
            add("| " + " | ".join(cells) + " |")
    add("")


def targets(add, res):
    """Issue 7's targets, computed from the table (reported, not asserted)."""
    def get(wl, met, m):
        return res.get((wl, met, m))
    sp = get("fill-seq", "faults", "sp512")
    thp = get("fill-seq", "faults", "thp")
    k4 = get("fill-seq", "faults", "4k")
    mr_sp = get("sparse", "mem_reclaimed_kib", "sp512")
    sw_sp = get("sparse", "swapped_by_reclaim", "sp512")
    m_4k = get("sparse", "mem_kib", "4k")
    if None in (sp, thp, k4, mr_sp, m_4k) or not thp or not k4 or not m_4k:
        return
    add("## Fault-cluster targets")
    add("")
    add("| target | measured (medians) |")
    add("|---|---|")
    add(f"| dense fill faults within 20x of THP always | "
        f"{fmt(sp)} vs {fmt(thp)}: {sp / thp:.3g}x |")
    add(f"| dense fill faults at most 1/25 of 4 KiB pages | "
        f"{fmt(sp)} vs {fmt(k4)}: 1/{k4 / sp:.3g} |")
    add(f"| sparse memory after the reclaim request within 5% of what "
        f"4 KiB pages use before it (and nothing swapped) | "
        f"{fmt(mr_sp)} KiB vs {fmt(m_4k)} KiB: "
        f"{100 * (mr_sp - m_4k) / m_4k:+.1f}%; {fmt(sw_sp)} pages "
        f"swapped |")
    add("")


def write_csv(out, vals, stats, cov):
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "metric", "unit", "better", "mode", "rep",
                    "value"])
        for (wl, met, m), reps in sorted(vals.items()):
            _, unit, better = METRICS.get(met, (met, "", "lower"))
            for r, v in sorted(reps.items()):
                w.writerow([wl, met, unit, better or "", m, r, f"{v:g}"])
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "metric", "unit", "better", "mode", "median",
                    "min", "max", "n"])
        for (wl, met, m), (med, lo, hi, n) in sorted(stats.items()):
            _, unit, better = METRICS.get(met, (met, "", "lower"))
            w.writerow([wl, met, unit, better or "", m, f"{med:g}",
                        f"{lo:g}", f"{hi:g}", n])
    with open(os.path.join(out, "coverage.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "mode", "rep", "ms_after_last_touch",
                    "percent"])
        for row in cov:
            w.writerow([row[0], row[1], row[4], f"{row[2]:g}",
                        f"{row[3]:g}"])


BARS = [
    ("sparse-memory", "Sparse mapping: memory used (MiB)", False,
     [("sparse", "mem_kib", "after the touches", 1024),
      ("sparse", "mem_settled_kib", "after the settle time", 1024),
      ("sparse", "mem_reclaimed_kib",
       "after memory.reclaim of the untouched size", 1024)]),
    ("sparse-memcg-swap", "Sparse mapping in a small memcg: pages swapped out",
     False, [("sparse-memcg", "swapped_out", "pages swapped out", 1)]),
    ("fill-faults", "Dense fill: page faults per 2 MiB (log)", True,
     [("fill-seq", "faults_per_2m", "sequential", 1),
      ("fill-rand", "faults_per_2m", "random order", 1),
      ("fill-stride", "faults_per_2m", "strided", 1)]),
    ("fault-latency", "Fault latency, sequential fill (us, log)", True,
     [("latency", "fault_p50_us", "p50", 1),
      ("latency", "fault_p99_us", "p99", 1),
      ("latency", "fault_max_us", "max", 1)]),
    ("fork-cow", "Fork, child writes one word per 64 KiB: memory (MiB)", False,
     [("fork", "child_write_mem_kib", "memory taken by the child writes",
       1024)]),
    ("gups", "GUPS: ns per random update", False,
     [("gups", "ns_per_update", "ns per update", 1)]),
]


def plots(out, res, cov, modes, accel):
    gp = shutil.which("gnuplot")
    if not gp:
        print("report: gnuplot not installed, no plots")
        return
    tag = "" if accel == "kvm" else " [TCG: not hardware times]"
    with tempfile.TemporaryDirectory() as tmp:
        script = ["set terminal png size 900,500",
                  "set datafile missing '?'",
                  "set key below", "set grid ytics",
                  "set xtics rotate by -30"]
        for name, title, log, series in BARS:
            if not any((wl, met, m) in res for wl, met, _l, _d in series
                       for m in modes):
                continue
            timed = any(s[1].endswith(("_us", "_ms", "ns_per_update"))
                        for s in series)
            dat = os.path.join(tmp, name + ".dat")
            with open(dat, "w") as f:
                for m in modes:
                    vals = []
                    for wl, met, _label, div in series:
                        v = res.get((wl, met, m))
                        if v is None or (log and v <= 0):
                            vals.append("?")
                        else:
                            vals.append(f"{v / div:g}")
                    f.write(f"\"{m}\" " + " ".join(vals) + "\n")
            plot = ", ".join(
                f"'{dat}' using {i + 2}{':xtic(1)' if i == 0 else ''} "
                f"title '{s[2]}'" for i, s in enumerate(series))
            script += [f"set output '{os.path.join(out, name + '.png')}'",
                       f"set title '{title}{tag if timed else ''}'",
                       "set style data histograms",
                       "set style histogram clustered gap 1",
                       "set style fill solid 0.8 border -1",
                       "set logscale y" if log else "unset logscale y",
                       "set yrange [*:*]" if log else "set yrange [0:*]",
                       "plot " + plot]
        for wl in ("fill-seq", "fill-rand", "fill-stride"):
            series = []
            for m in modes:
                # The first repetition's samples.
                reps = sorted({r for (w, mm, _t, _p, r) in cov
                               if w == wl and mm == m})
                pts = [(t, p) for (w, mm, t, p, r) in cov
                       if w == wl and mm == m and r == reps[0]] if reps \
                    else []
                if not pts:
                    continue
                dat = os.path.join(tmp, f"cov-{wl}-{m}.dat")
                with open(dat, "w") as f:
                    for t, p in pts:
                        f.write(f"{t / 1000:g} {p:g}\n")
                series.append(f"'{dat}' using 1:2 with steps lw 2 "
                              f"title '{m}'")
            if not series:
                continue
            script += [f"set output '{os.path.join(out, 'coverage-' + wl + '.png')}'",
                       f"set title '{wl}: huge-mapped share after the last "
                       f"touch (repetition 1){tag}'",
                       "unset logscale y", "set yrange [0:105]",
                       "set xlabel 'seconds after the last touch'",
                       "set ylabel '% huge-mapped'",
                       "set logscale x", "set xrange [0.005:*]",
                       "set xtics norotate",
                       "plot " + ", ".join(series),
                       "unset logscale x", "set xrange [*:*]",
                       "set xtics rotate by -30",
                       "unset xlabel", "unset ylabel"]
        gpf = os.path.join(tmp, "plots.gp")
        with open(gpf, "w") as f:
            f.write("\n".join(script) + "\n")
        r = subprocess.run([gp, gpf], capture_output=True, text=True)
        if r.returncode:
            print("report: gnuplot failed:\n" + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--kernel", default="bench")
    ap.add_argument("--commit", default="unknown")
    a = ap.parse_args()
    vals, cov, info, notes = parse(a.log)
    if not vals:
        print("report: no results in " + a.log)
        return 1
    stats = summarize(vals)
    res = {k: v[0] for k, v in stats.items()}
    present = {m for (_w, _met, m) in res}
    modes = [m for m, _ in MODES if m in present]
    os.makedirs(a.out, exist_ok=True)
    write_csv(a.out, vals, stats, cov)
    lines = write_table(a.out, stats, info, notes, a.accel, a.kernel,
                        a.commit, modes)
    plots(a.out, res, cov, modes, a.accel)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
