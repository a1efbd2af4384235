#!/usr/bin/env python3
"""Cycle report of a real-time libdefero: runs programs under each hardware
backend (LD_PRELOAD, DEFERO_BACKEND, DEFERO_STATS_FILE) and tabulates the
cycles the Verilated RTL counted (the stats JSON's `hw` object).

  cycle_report.py --lib build-rt/lib/libdefero.so --out REPORT.md \\
      [--backends hw-obs,hw-rbs] [--heap-bytes 64M] \\
      --program 'mt_program|build-rt/bin/rt_mt_program 4 6' [--program ...]

Exits 1 with a one-line error if a program fails or reports no cycles.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

PROG = "cycle_report.py"
BACKENDS = ("hw-obs", "hw-rbs")


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def run(lib, backend, heap, cmd):
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "stats.json")
        env = dict(os.environ, LD_PRELOAD=lib, DEFERO_BACKEND=backend, DEFERO_STATS_FILE=stats)
        if heap:
            env["DEFERO_HEAP_BYTES"] = heap
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        except FileNotFoundError:
            fail(f"no such program: {cmd[0]}")
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"{' '.join(cmd)} under {backend} exited {p.returncode}: {last}")
        try:
            with open(stats) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{' '.join(cmd)} under {backend}: no stats JSON ({e})")
    hw = doc.get("hw")
    if not isinstance(hw, dict) or not hw.get("allocs"):
        fail(f"{' '.join(cmd)} under {backend}: the stats JSON has no hw cycles")
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--heap-bytes", default="")
    ap.add_argument("--program", action="append", default=[], required=True,
                    help="'name|command args' (repeatable)")
    a = ap.parse_args()
    if not os.path.isfile(a.lib):
        fail(f"--lib {a.lib}: no such file")
    backends = [b for b in a.backends.split(",") if b]
    bad = [b for b in backends if b not in BACKENDS]
    if bad or not backends:
        fail(f"--backends: '{a.backends}' is not valid, accepted: a comma-separated list of "
             f"{', '.join(BACKENDS)}")
    programs = []
    for spec in a.program:
        name, sep, cmd = spec.partition("|")
        if not sep or not name or not cmd.strip():
            fail(f"--program '{spec}' is not valid, accepted: 'name|command args'")
        programs.append((name, shlex.split(cmd)))

    rows = []
    for name, cmd in programs:
        for backend in backends:
            print(f"{PROG}: {name} on {backend} ...", flush=True)
            doc = run(a.lib, backend, a.heap_bytes, cmd)
            rows.append((name, backend, doc))

    def mmm(hw, kind):
        return (f"{hw[kind + '_cycles_min']} / {hw[kind + '_cycles_mean']:.2f} / "
                f"{hw[kind + '_cycles_max']}")

    heap = rows[0][2]["heap_bytes"]
    lines = [
        "# Real-time backends: cycles counted in the RTL",
        "",
        f"Heap {heap} bytes, smallest block 16 bytes, RAM latency 1 cycle. "
        "Cycles from a request's acceptance to its response (min / mean / max); "
        "*find*: cycles spent finding the free list; *Block*: OBS's background "
        "splitting after an early answer (a request arriving sooner waits for it).",
        "",
        "| program | backend | allocations | find | alloc | free | Block max | out of memory |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, backend, doc in rows:
        hw = doc["hw"]
        lines.append(f"| {name} | {backend} | {hw['allocs']} | {mmm(hw, 'find')} | "
                     f"{mmm(hw, 'alloc')} | {mmm(hw, 'free')} | {hw['block_cycles_max']} | "
                     f"{doc['out_of_memory']} |")
    lines += ["", "The paper (Donahue et al. 2002, Virtex-E): RBS worst case 125 cycles, "
              "OBS 13, OBS average/worst 0.92."]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
