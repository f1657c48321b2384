#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark guest's output into bench/results/.

Reads the "R workload mode metric value", "S workload mode ms percent" and
"I key value" lines that harness/guest/bench.sh and sp_bench print, and
writes:
  results.csv   one row per (workload, metric, mode)
  coverage.csv  huge-mapping coverage samples over time
  table.md      per workload, every mode's figure and each superpage
                mode's ratio to the best other mode
  *.png         plots, drawn with gnuplot (when it is installed)
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
    ("khugepaged", "THP madvise + khugepaged"),
    ("mthp64", "mTHP 64 KiB"),
    ("hugetlb", "hugetlbfs"),
    ("sp512", "superpages, threshold 512"),
    ("sp128", "superpages, threshold 128"),
]
SP_MODES = ["sp512", "sp128"]
MODE_NAME = dict(MODES)

WORKLOADS = [
    ("sparse", "Sparse: one 4 KiB write per 64 KiB of a large mapping"),
    ("sparse-memcg", "Sparse in a memory cgroup smaller than the mapping, "
                     "zram swap"),
    ("fill-seq", "Dense sequential fill (first write to every page), then "
                 "wait for huge-mapping coverage"),
    ("fill-rand", "Dense fill in random page order, then wait for coverage"),
    ("gups", "Random 8-byte updates over the filled mapping (GUPS-style)"),
    ("latency", "Fault latency of a sequential fill, each touch timed"),
    ("fork", "Fork of a filled heap; the child writes one word per 64 KiB "
             "(Redis-style snapshot)"),
    ("procs", "Short-lived processes, each writing every page of 4 MiB"),
]

# metric: (description, unit, better): better is "lower", "higher" or None
# (a fact, not a score: no ratio).
METRICS = {
    "touches": ("pages touched", "", None),
    "faults": ("page faults", "", "lower"),
    "faults_per_2m": ("page faults per 2 MiB", "", "lower"),
    "ns_per_touch": ("time per touch", "ns", "lower"),
    "fault_p50_us": ("fault latency p50", "us", "lower"),
    "fault_p99_us": ("fault latency p99", "us", "lower"),
    "fault_max_us": ("fault latency max", "us", "lower"),
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
    "mem_broken_kib": ("memory used once reservations' unused pages are "
                       "reclaimed", "KiB", "lower"),
    "swapped_by_break": ("pages swapped out by that reclaim", "pages",
                         "lower"),
    "fill_ms": ("fill time", "ms", "lower"),
    "cover99_ms": ("time from last touch to 99% huge-mapped", "ms",
                   "lower"),
    "cover_pct": ("huge-mapped at the end", "%", "higher"),
    "collapses": ("khugepaged collapses", "", None),
    "promotions": ("superpage promotions", "", None),
    "copied_kib": ("bytes copied to build huge mappings", "KiB", "lower"),
    "daemon_us_per_2m": ("daemon CPU time per 2 MiB mapping built", "us",
                         "lower"),
    "mmap_wait_p50_us": ("mmap() latency while the daemon works, p50", "us",
                         "lower"),
    "mmap_wait_p99_us": ("mmap() latency while the daemon works, p99", "us",
                         "lower"),
    "mmap_wait_max_us": ("mmap() latency while the daemon works, max", "us",
                         "lower"),
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
    ("sparse", "mem_kib"), ("sparse", "mem_broken_kib"),
    ("sparse", "faults"),
    ("sparse-memcg", "swapped_out"), ("sparse-memcg", "oom_kills"),
    ("fill-seq", "faults"), ("fill-seq", "fill_ms"),
    ("fill-seq", "cover99_ms"), ("fill-seq", "copied_kib"),
    ("fill-rand", "faults"), ("fill-rand", "cover99_ms"),
    ("gups", "ns_per_update"),
    ("latency", "fault_p99_us"),
    ("fork", "child_write_mem_kib"), ("fork", "child_write_ms"),
    ("procs", "us_per_process"),
    ("fill-seq", "daemon_us_per_2m"), ("fill-seq", "mmap_wait_max_us"),
]


def parse(path):
    res, cov, info, notes = {}, [], {}, []
    with open(path, errors="replace") as f:
        for line in f:
            w = line.strip().split()
            if len(w) == 5 and w[0] == "R":
                try:
                    res[(w[1], w[3], w[2])] = float(w[4])
                except ValueError:
                    pass
            elif len(w) == 5 and w[0] == "S":
                cov.append((w[1], w[2], float(w[3]), float(w[4])))
            elif len(w) >= 3 and w[0] == "I":
                info[w[1]] = " ".join(w[2:])
            elif line.startswith("# FAILED"):
                notes.append(line.strip("# \n"))
    return res, cov, info, notes


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


def metric_label(metric):
    desc, unit, _ = METRICS.get(metric, (metric, "", "lower"))
    return f"{desc} ({unit})" if unit else desc


def write_table(out, res, info, notes, accel, kernel, modes):
    sp_modes = [m for m in SP_MODES if m in modes]
    lines = []
    add = lines.append
    add("# Superpage benchmark results")
    add("")
    add(f"Kernel `{info.get('kernel', '?')}` ({kernel} flavour), "
        f"{info.get('cpus', '?')} vCPUs, "
        f"{int(info.get('mem_kib', '0')) // 1024} MiB, "
        f"sizes `{info.get('size', '?')}`, accelerator **{accel}**; all "
        "modes in one boot, one after the other.")
    add("")
    if accel != "kvm":
        add("**Times are TCG (emulated CPU) times, not hardware times.** "
            "QEMU's TCG translates every guest access through its own "
            "software TLB of 4 KiB entries, so huge mappings save guest "
            "page-table walks but not TLB misses as a CPU would: read the "
            "time ratios as costs of kernel work (faults, zeroing, "
            "copying), and the fault, memory and swap figures as exact.")
        add("")
    add("Ratio columns: a superpage mode's figure divided by the best "
        "other mode's (lowest, or highest where higher is better, among "
        "4 KiB, THP, khugepaged, mTHP and hugetlbfs). Below 1x is better "
        "for \"lower is better\" figures. \"–\": the mode has no such "
        "figure (e.g. no huge mapping is ever built with 4 KiB pages).")
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
        vals = [res.get((wl, metric, m)) for m in modes]
        best, bm = best_other(res, wl, metric, modes)
        cells = [wl if show_wl else "", metric_label(metric)]
        cells += [fmt(v) for v in vals]
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
    targets(add, res)
    for wl, desc in WORKLOADS:
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


def targets(add, res):
    """Issue 7's targets, computed from the table (reported, not asserted)."""
    def get(wl, met, m):
        return res.get((wl, met, m))
    sp = get("fill-seq", "faults", "sp512")
    thp = get("fill-seq", "faults", "thp")
    k4 = get("fill-seq", "faults", "4k")
    mb_sp = get("sparse", "mem_broken_kib", "sp512")
    mb_4k = get("sparse", "mem_broken_kib", "4k")
    if None in (sp, thp, k4, mb_sp, mb_4k) or not thp or not k4 or not mb_4k:
        return
    add("## Fault-cluster targets")
    add("")
    add("| target | measured |")
    add("|---|---|")
    add(f"| dense fill faults within 20x of THP always | "
        f"{fmt(sp)} vs {fmt(thp)}: {sp / thp:.3g}x |")
    add(f"| dense fill faults at most 1/25 of 4 KiB pages | "
        f"{fmt(sp)} vs {fmt(k4)}: 1/{k4 / sp:.3g} |")
    add(f"| sparse memory, reservations broken, within 5% of 4 KiB | "
        f"{fmt(mb_sp)} KiB vs {fmt(mb_4k)} KiB: "
        f"{100 * (mb_sp - mb_4k) / mb_4k:+.1f}% |")
    add("")


def write_csv(out, res, cov):
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "metric", "unit", "better", "mode", "value"])
        for (wl, met, m), v in sorted(res.items()):
            _, unit, better = METRICS.get(met, (met, "", "lower"))
            w.writerow([wl, met, unit, better or "", m, f"{v:g}"])
    with open(os.path.join(out, "coverage.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "mode", "ms_after_last_touch", "percent"])
        for row in cov:
            w.writerow([row[0], row[1], f"{row[2]:g}", f"{row[3]:g}"])


BARS = [
    ("sparse-memory", "Sparse mapping: memory used (MiB)", False,
     [("sparse", "mem_kib", "after the touches", 1024),
      ("sparse", "mem_settled_kib", "after the settle time", 1024),
      ("sparse", "mem_broken_kib", "unused reservation pages reclaimed",
       1024)]),
    ("sparse-memcg-swap", "Sparse mapping in a small memcg: pages swapped out",
     False, [("sparse-memcg", "swapped_out", "pages swapped out", 1)]),
    ("fill-faults", "Dense fill: page faults per 2 MiB (log)", True,
     [("fill-seq", "faults_per_2m", "sequential", 1),
      ("fill-rand", "faults_per_2m", "random order", 1)]),
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
        for wl in ("fill-seq", "fill-rand"):
            series = []
            for m in modes:
                pts = [(t, p) for (w, mm, t, p) in cov if w == wl and mm == m]
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
                       f"set title '{wl}: huge-mapped share after the last touch{tag}'",
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
    a = ap.parse_args()
    res, cov, info, notes = parse(a.log)
    if not res:
        print("report: no results in " + a.log)
        return 1
    present = {m for (_w, _met, m) in res}
    modes = [m for m, _ in MODES if m in present]
    os.makedirs(a.out, exist_ok=True)
    write_csv(a.out, res, cov)
    lines = write_table(a.out, res, info, notes, a.accel, a.kernel, modes)
    plots(a.out, res, cov, modes, a.accel)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
