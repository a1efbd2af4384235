#!/usr/bin/env python3
"""Compile-time overhead of the Defero plugin.

Compiles one source file with clang (the flags given after `--`) without
and with `-fplugin=DeferoPlugin.so`, alternating, `--runs` times each, and
prints the median CPU time (user + system of the compiler processes) of
each and their ratio. CPU time, not wall time, so a busy machine disturbs
it less; the alternation spreads the remaining drift over both sides.

  plugin_overhead.py --cxx clang++-19 --plugin build/lib/DeferoPlugin.so \
      --runs 5 -- -std=c++20 -O2 -Iruntime/include -c test/runtime/layers_test.cpp
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"plugin_overhead.py: {msg}", file=sys.stderr)
    sys.exit(2)


def cpu_time(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["(no message)"])[0]
        fail(f"compile failed (exit {r.returncode}): {' '.join(cmd)}: {first}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cxx", required=True, help="the compiler, e.g. clang++-19")
    ap.add_argument("--plugin", required=True, help="path of DeferoPlugin.so")
    ap.add_argument("--runs", type=int, default=5, help="compiles per side (>= 1)")
    ap.add_argument("args", nargs=argparse.REMAINDER,
                    help="-- then the compile flags and the source file")
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if not args:
        fail("no compile arguments after --")
    if a.runs < 1:
        fail(f"--runs must be at least 1 (got {a.runs})")
    if not os.path.isfile(a.plugin):
        fail(f"plugin not found: {a.plugin}")
    with tempfile.TemporaryDirectory() as tmp:
        out = ["-o", os.path.join(tmp, "out.o")]
        plain_cmd = [a.cxx] + args + out
        plugin_cmd = [a.cxx, f"-fplugin={a.plugin}"] + args + out
        try:
            cpu_time(plain_cmd)  # warm the file cache
        except FileNotFoundError:
            fail(f"compiler not found: {a.cxx}")
        plain, plugin = [], []
        for _ in range(a.runs):
            plain.append(cpu_time(plain_cmd))
            plugin.append(cpu_time(plugin_cmd))
    p, q = statistics.median(plain), statistics.median(plugin)
    print(f"compile: {' '.join(args)}")
    print(f"runs per side: {a.runs}")
    print(f"without plugin: median {p:.3f} s CPU (min {min(plain):.3f}, max {max(plain):.3f})")
    print(f"with plugin:    median {q:.3f} s CPU (min {min(plugin):.3f}, max {max(plugin):.3f})")
    print(f"overhead: {100.0 * (q / p - 1.0):+.1f}% (ratio {q / p:.3f})")


if __name__ == "__main__":
    main()
