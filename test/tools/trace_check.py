#!/usr/bin/env python3
"""Runs a command under libdefero with DEFERO_TRACE and checks the trace.

  trace_check.py --lib LIBDEFERO --trace PATH [--no-live-check]
                 [--once LO:HI] -- command args...

Always: the command exits 0 and every line is a well-formed event.
Unless --no-live-check (for traces several processes write): replaying the
trace in order is consistent - every free and realloc names a live block and
no malloc returns a block that is still live (what a concurrent program's
trace must satisfy if it is to be replayed).
--once LO:HI: malloc events with a size in LO..HI appear exactly HI-LO+1
times (the program allocates each such size once).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from defero_run import run_under_defero  # noqa: E402

EVENT = re.compile(r"^(?:m (0x[0-9a-f]+) (\d+)|f (0x[0-9a-f]+)|"
                   r"r (0x[0-9a-f]+) (0x[0-9a-f]+) (\d+))$")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--no-live-check", action="store_true")
    ap.add_argument("--once")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not run_under_defero(a.lib, "DEFERO_TRACE", a.trace, cmd):
        return 1
    lo = hi = None
    if a.once:
        lo, hi = (int(x) for x in a.once.split(":"))
    once = 0
    live = set()
    n = 0
    with open(a.trace) as f:
        for n, line in enumerate(f, 1):
            m = EVENT.match(line.rstrip("\n"))
            if not m:
                print(f"FAIL: line {n}: malformed: {line!r}")
                return 1
            kind = line[0]
            if kind == "m":
                if lo is not None and lo <= int(m.group(2)) <= hi:
                    once += 1
                if not a.no_live_check and m.group(1) in live:
                    print(f"FAIL: line {n}: malloc returned {m.group(1)}, "
                          "which the trace says is still live")
                    return 1
                live.add(m.group(1))
            elif a.no_live_check:
                continue
            elif kind == "f":
                if m.group(3) not in live:
                    print(f"FAIL: line {n}: free of {m.group(3)}, not live")
                    return 1
                live.discard(m.group(3))
            else:
                if m.group(4) not in live:
                    print(f"FAIL: line {n}: realloc of {m.group(4)}, not live")
                    return 1
                live.discard(m.group(4))
                if m.group(5) in live:
                    print(f"FAIL: line {n}: realloc returned {m.group(5)}, "
                          "which the trace says is still live")
                    return 1
                live.add(m.group(5))
    print(f"{n} events")
    if n < 1000:
        print("FAIL: trace too short")
        return 1
    if lo is not None and once != hi - lo + 1:
        print(f"FAIL: {once} malloc events with sizes {lo}..{hi}, expected "
              f"{hi - lo + 1} (the program made each exactly once)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
