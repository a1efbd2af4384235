#!/usr/bin/env python3
"""Runs a command under libdefero with DEFERO_TRACE and checks the trace.

  trace_check.py --lib LIBDEFERO --trace PATH [--no-live-check]
                 [--once LO:HI] [--processes N --forked F] -- command args...

Always: the command exits 0 and every line is a well-formed event.
Unless --no-live-check (for traces several processes write): replaying the
trace in order is consistent - every free and realloc names a live block and
no malloc returns a block that is still live (what a concurrent program's
trace must satisfy if it is to be replayed).
--once LO:HI: malloc events with a size in LO..HI appear exactly HI-LO+1
times (the program allocates each such size once).

A PATH holding %p (one file per process): exactly N files appear (one per
process, named by its id); F of them begin "# forked from pid P" (a child
that did not exec), P a process of the run, and may free blocks they never
allocated (their parent's); the others (the first process, and processes
that exec'd: a new image) have no header. Each file passes the live check
on its own; --once counts over all files (no event in two of them).
"""
import argparse
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from defero_run import run_under_defero  # noqa: E402

EVENT = re.compile(r"^(?:m (0x[0-9a-f]+) (\d+)|f (0x[0-9a-f]+)|"
                   r"r (0x[0-9a-f]+) (0x[0-9a-f]+) (\d+))$")
FORKED = re.compile(r"^# forked from pid (\d+)$")


def parse_pattern(pattern):
    """DEFERO_TRACE's pattern as the runtime reads it (%p the process id,
    %% a percent sign): (names the process, regex of its files, glob of
    them, the file's path if it names no process)."""
    rx, gl, lit, names, i = "", "", "", False, 0
    while i < len(pattern):
        if pattern.startswith("%p", i):
            rx, gl, names, i = rx + r"(\d+)", gl + "*", True, i + 2
        elif pattern.startswith("%%", i):
            rx, gl, lit, i = rx + "%", gl + "%", lit + "%", i + 2
        else:
            c = pattern[i]
            rx, gl, lit, i = rx + re.escape(c), gl + glob.escape(c), lit + c, i + 1
    return names, re.compile("^" + rx + "$"), gl, lit


def check_file(path, live_check, lo, hi):
    """(error or None, events, events with a size in lo..hi, parent pid or None)."""
    once = 0
    live = set()
    n = 0
    parent = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if n == 1 and FORKED.match(line):
                parent = int(FORKED.match(line).group(1))
                continue
            m = EVENT.match(line)
            if not m:
                return f"{path}: line {n}: malformed: {line!r}", n, once, parent
            kind = line[0]
            if kind == "m":
                if lo is not None and lo <= int(m.group(2)) <= hi:
                    once += 1
                if live_check and m.group(1) in live:
                    return (f"{path}: line {n}: malloc returned {m.group(1)}, "
                            "which the trace says is still live"), n, once, parent
                live.add(m.group(1))
            elif not live_check:
                continue
            elif kind == "f":
                if m.group(3) not in live and parent is None:
                    return f"{path}: line {n}: free of {m.group(3)}, not live", n, once, parent
                live.discard(m.group(3))
            else:
                if m.group(4) not in live and parent is None:
                    return f"{path}: line {n}: realloc of {m.group(4)}, not live", n, once, parent
                live.discard(m.group(4))
                if m.group(5) in live:
                    return (f"{path}: line {n}: realloc returned {m.group(5)}, "
                            "which the trace says is still live"), n, once, parent
                live.add(m.group(5))
    return None, n, once, parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--no-live-check", action="store_true")
    ap.add_argument("--once")
    ap.add_argument("--processes", type=int)
    ap.add_argument("--forked", type=int, default=0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    per_process, name, pattern_glob, literal = parse_pattern(a.trace)
    if per_process != (a.processes is not None):
        print("FAIL: --processes goes with a --trace holding %p, and only with one")
        return 1
    for old in glob.glob(pattern_glob):
        os.unlink(old)
    if not run_under_defero(a.lib, "DEFERO_TRACE", a.trace, cmd):
        return 1
    lo = hi = None
    if a.once:
        lo, hi = (int(x) for x in a.once.split(":"))
    if not per_process:
        err, n, once, _ = check_file(literal, not a.no_live_check, lo, hi)
        if err:
            print(f"FAIL: {err}")
            return 1
        print(f"{n} events")
        if n < 1000:
            print("FAIL: trace too short")
            return 1
    else:
        files = {int(name.match(p).group(1)): p
                 for p in glob.glob(pattern_glob) if name.match(p)}
        if len(files) != a.processes:
            print(f"FAIL: {len(files)} trace files ({sorted(files.values())}), "
                  f"expected one per process: {a.processes}")
            return 1
        forked = total = once = 0
        for pid, path in sorted(files.items()):
            err, n, k, parent = check_file(path, not a.no_live_check, lo, hi)
            if err:
                print(f"FAIL: {err}")
                return 1
            print(f"{path}: {n} lines, " + (f"forked from {parent}" if parent else "a new image"))
            total += n
            once += k
            if parent is not None:
                forked += 1
                if parent not in files:
                    print(f"FAIL: {path}: forked from pid {parent}, which wrote no trace here")
                    return 1
        if forked != a.forked:
            print(f"FAIL: {forked} files begin with a fork header, expected {a.forked}")
            return 1
        if total < 1000:
            print("FAIL: traces too short")
            return 1
    if lo is not None and once != hi - lo + 1:
        print(f"FAIL: {once} malloc events with sizes {lo}..{hi}, expected "
              f"{hi - lo + 1} (the program made each exactly once)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
