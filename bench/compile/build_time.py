#!/usr/bin/env python3
"""Build time with defero-c++ against clang++-19, per set of programs.

Builds every source of each set to an executable (one compile-and-link
command per source, as a small project's build would) with the plain
compiler and with the wrapper, alternating sides round by round (clang
first in even rounds, defero-c++ first in odd ones), after one untimed
round of each that warms the file cache. Reports the median over the runs
of each side's CPU time (user + system of the compiler processes: a busy
machine disturbs it less than wall time) and wall time, and their ratio.

  build_time.py --clangxx clang++-19 --defero-cxx build/bin/defero-c++ --runs 3 \\
      --set 'apps|-std=c++20 -O2 -g|bench/apps/md_cells.cpp bench/apps/...' \\
      --set 'corpus|-std=c++20 -O2|test/corpus/dijkstra.cpp ...' \\
      --out build/bench-report/COMPILE_TIME.md
"""
import argparse
import datetime
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print(f"build_time.py: {msg}", file=sys.stderr)
    sys.exit(2)


def build(compiler, flags, sources, outdir):
    """Builds each source to an executable; returns (CPU s, wall s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    for src in sources:
        exe = os.path.join(outdir, os.path.splitext(os.path.basename(src))[0])
        cmd = [compiler] + flags + [src, "-o", exe]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["(no message)"])[0]
            fail(f"build failed (exit {r.returncode}): {' '.join(cmd)}: {first}")
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def parse_set(text):
    parts = text.split("|")
    if len(parts) != 3 or not parts[0] or not parts[2].split():
        fail(f"--set '{text}' is not valid, accepted: 'NAME|FLAGS|SOURCES'")
    name, flags, sources = parts[0], shlex.split(parts[1]), parts[2].split()
    for s in sources:
        if not os.path.isfile(s):
            fail(f"--set {name}: no such source: {s}")
    return name, flags, sources


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clangxx", required=True)
    ap.add_argument("--defero-cxx", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--out", help="write the Markdown table here too")
    a = ap.parse_args()
    if a.runs < 1:
        fail(f"--runs must be at least 1 (got {a.runs})")
    if not a.sets:
        fail("no --set given")
    sets = [parse_set(s) for s in a.sets]
    sides = [("clang++-19", a.clangxx), ("defero-c++", a.defero_cxx)]
    for label, path in sides:
        if subprocess.run(["sh", "-c", 'command -v "$1"', "sh", path],
                          stdout=subprocess.DEVNULL).returncode != 0:
            fail(f"{label} not found: {path}")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, sources in sets:
            times = {label: [] for label, _ in sides}
            for _, compiler in sides:  # warm-up, untimed
                build(compiler, flags, sources, tmp)
            for r in range(a.runs):
                for label, compiler in (sides if r % 2 == 0 else sides[::-1]):
                    times[label].append(build(compiler, flags, sources, tmp))
                print(f"{name}: round {r + 1}/{a.runs}: " + ", ".join(
                    f"{label} {times[label][-1][0]:.2f} s CPU" for label, _ in sides), flush=True)
            med = {label: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
                   for label, ts in times.items()}
            rows.append((name, len(sources), " ".join(flags), med, times))

    lines = [
        "# Compile time: defero-c++ against clang++-19",
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.node()} "
        f"({os.cpu_count()} CPUs); each set built {a.runs} times per side, alternating, "
        "after one untimed build per side; medians. CPU = user + system time of the "
        "compiler processes.",
        "",
        "| set | programs | flags | clang++-19 CPU s | defero-c++ CPU s | ratio (CPU) "
        "| clang++-19 wall s | defero-c++ wall s | ratio (wall) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, flags, med, _ in rows:
        c, d = med["clang++-19"], med["defero-c++"]
        lines.append(f"| {name} | {n} | `{flags}` | {c[0]:.2f} | {d[0]:.2f} | {d[0] / c[0]:.3f}× "
                     f"| {c[1]:.2f} | {d[1]:.2f} | {d[1] / c[1]:.3f}× |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
