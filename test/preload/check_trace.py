#!/usr/bin/env python3
"""Checks a DEFERO_TRACE file: every line is a well-formed event, every free
and realloc names a block that is live at that point, and the trace is
long enough to be a real run. Usage: check_trace.py TRACE"""
import re
import sys

EVENT = re.compile(r"^(m (0x[0-9a-f]+) (\d+)|f (0x[0-9a-f]+)|r (0x[0-9a-f]+) (0x[0-9a-f]+) (\d+))$")


def main() -> int:
    live = set()
    counts = {"m": 0, "f": 0, "r": 0}
    with open(sys.argv[1]) as f:
        for n, line in enumerate(f, 1):
            m = EVENT.match(line.rstrip("\n"))
            if not m:
                print(f"line {n}: malformed: {line!r}")
                return 1
            kind = line[0]
            counts[kind] += 1
            if kind == "m":
                live.add(m.group(2))
            elif kind == "f":
                if m.group(4) not in live:
                    print(f"line {n}: free of {m.group(4)}, not live")
                    return 1
                live.discard(m.group(4))
            else:
                if m.group(5) not in live:
                    print(f"line {n}: realloc of {m.group(5)}, not live")
                    return 1
                live.discard(m.group(5))
                live.add(m.group(6))
    print(f"events: {counts}, live at end: {len(live)}")
    if counts["m"] < 1000 or counts["f"] < 1000:
        print("trace too short for the run it recorded")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
