#!/usr/bin/env python3
"""Runs a command under libdefero with DEFERO_STATS_FILE and checks the file
it leaves: valid JSON (one object, one line), every key DESIGN.md promises
with the right type, and allocs - frees within SLACK for a program that frees
everything it allocates (libc and libstdc++ keep a few blocks of their own).

  check_stats.py --lib LIBDEFERO --file PATH [--slack N] [--min-allocs N]
                 -- command args...
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from defero_run import run_under_defero  # noqa: E402

KEYS = {
    "allocs": int, "frees": int, "peak_live_bytes": int,
    "peak_footprint_bytes": int, "hinted_allocs": int, "hint_same_class": int,
    "policy": str, "k": int, "backend": str,
}
HINT_KEYS = ("neighbor", "tree", "container")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--slack", type=int, default=64)
    ap.add_argument("--min-allocs", type=int, default=1000)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not run_under_defero(a.lib, "DEFERO_STATS_FILE", a.file, cmd):
        return 1
    with open(a.file) as f:
        text = f.read()
    print(f"stats file: {text!r}")
    try:
        doc = json.loads(text)
    except ValueError as e:
        print(f"FAIL: not JSON: {e}")
        return 1
    if not isinstance(doc, dict):
        print("FAIL: not a JSON object")
        return 1
    for k, t in KEYS.items():
        if not isinstance(doc.get(k), t) or isinstance(doc.get(k), bool):
            print(f"FAIL: key {k} missing or not {t.__name__}")
            return 1
    if not isinstance(doc.get("hints"), dict) or any(
            not isinstance(doc["hints"].get(k), int) for k in HINT_KEYS):
        print("FAIL: hints.{neighbor,tree,container} missing")
        return 1
    for k in ("allocs", "frees", "peak_live_bytes", "peak_footprint_bytes",
              "hinted_allocs", "hint_same_class"):
        if doc[k] < 0:
            print(f"FAIL: {k} is negative")
            return 1
    if doc["hint_same_class"] > doc["hinted_allocs"]:
        print("FAIL: hint_same_class > hinted_allocs")
        return 1
    if doc["allocs"] < a.min_allocs:
        print(f"FAIL: allocs {doc['allocs']} < {a.min_allocs}")
        return 1
    left = doc["allocs"] - doc["frees"]
    if left < 0 or left > a.slack:
        print(f"FAIL: allocs - frees = {left}, expected 0..{a.slack} for a "
              "program that frees what it allocates")
        return 1
    print(f"PASS (allocs - frees = {left})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
