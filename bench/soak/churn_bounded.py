#!/usr/bin/env python3
"""churn_bounded.py - runs a build of container_churn that carries the
hints (container_churn_plugin) at two round counts and fails when the
heap's peak footprint (DEFERO_STATS) grew by more than --slack bytes from
the first to the second: a container churned at a constant size must not
grow a hinted heap without bound.

  churn_bounded.py --program P --container C [--entries N] [--rounds A,B]
                   [--slack BYTES]
  prints: churn_bounded container=C rounds=A,B footprint=X,Y grew=D slack=S
  exit 0 if D <= S, 1 if not, 2 on a bad argument or a failed run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PROG = "churn_bounded.py"


def fail(msg, code=2):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def footprint(program, container, entries, rounds):
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "stats.json")
        env = dict(os.environ, DEFERO_STATS_FILE=stats)
        p = subprocess.run([program, "--container", str(container), "--entries", str(entries),
                            "--rounds", str(rounds)], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"{program} --rounds {rounds} exited {p.returncode}: {last}")
        try:
            with open(stats) as f:
                return int(json.load(f)["peak_footprint_bytes"])
        except (OSError, ValueError, KeyError) as e:
            fail(f"{program} wrote no peak_footprint_bytes to DEFERO_STATS_FILE ({e})")


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True)
    ap.add_argument("--container", type=int, required=True, choices=range(4))
    ap.add_argument("--entries", type=int, default=50000)
    ap.add_argument("--rounds", default="30,300")
    ap.add_argument("--slack", type=int, default=4 * 65536)
    a = ap.parse_args()
    try:
        first, second = (int(x) for x in a.rounds.split(","))
    except ValueError:
        fail(f"--rounds '{a.rounds}' is not valid; accepted: two round counts, A,B")
    if not os.access(a.program, os.X_OK):
        fail(f"--program '{a.program}' is not an executable file")
    x = footprint(a.program, a.container, a.entries, first)
    y = footprint(a.program, a.container, a.entries, second)
    print(f"churn_bounded container={a.container} rounds={first},{second} footprint={x},{y} "
          f"grew={y - x} slack={a.slack}")
    sys.exit(0 if y - x <= a.slack else 1)


if __name__ == "__main__":
    main()
