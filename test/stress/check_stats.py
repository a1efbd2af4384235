#!/usr/bin/env python3
"""Runs a command under libdefero with DEFERO_STATS_FILE and checks the file
it leaves: valid JSON (one object, one line), every key the stats JSON has
in every build (DESIGN.md's and the runtime's, README "Using the runtime")
with the right type, and allocs - frees within SLACK for a program that frees
everything it allocates (libc and libstdc++ keep a few blocks of their own).

  check_stats.py --lib LIBDEFERO --file PATH [--slack N] [--min-allocs N]
                 [--backend kbit|hw-obs|hw-rbs|sw-buddy] -- command args...

--backend B also requires "backend": B and, for a real-time backend, the
real-time build's own keys after the common ones (bootstrap_allocs,
heap_bytes, out_of_memory, hw: an object for the hardware backends, null
for sw-buddy); for kbit, none of them. A bad --backend is a one-line error
(exit 1) before anything runs.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from defero_run import run_under_defero  # noqa: E402

# Every key of the stats JSON, in its order (stats.cpp's writer), but hints.
KEYS = {
    "allocs": int, "frees": int, "peak_live_bytes": int,
    "peak_footprint_bytes": int, "hinted_allocs": int, "hint_same_class": int,
    "policy": str, "k": int, "backend": str, "live_bytes": int,
    "large_mapped_bytes": int, "container_policies": int, "policy_allocs": int,
    "released_bytes": int, "resident_bytes": int, "checked": bool,
}
HINT_KEYS = ("neighbor", "tree", "container")
NON_NEGATIVE = ("allocs", "frees", "peak_live_bytes", "peak_footprint_bytes",
                "hinted_allocs", "hint_same_class", "large_mapped_bytes",
                "container_policies", "policy_allocs", "released_bytes",
                "resident_bytes")
# A real-time build's own keys, after the common ones (hw apart).
REALTIME_KEYS = ("bootstrap_allocs", "heap_bytes", "out_of_memory")
BACKENDS = ("kbit", "hw-obs", "hw-rbs", "sw-buddy")


def type_ok(v, t) -> bool:
    # (bool is an int in Python: a count must not be true/false.)
    return isinstance(v, t) and (t is bool or not isinstance(v, bool))


def check_backend(doc, backend):
    """The message of the first mismatch with --backend, or None."""
    if doc["backend"] != backend:
        return f"backend {doc['backend']}, expected {backend}"
    keys = list(doc)
    if backend == "kbit":
        extra = [k for k in REALTIME_KEYS + ("hw",) if k in doc]
        return f"real-time keys {extra} with backend kbit" if extra else None
    for k in REALTIME_KEYS:
        if not type_ok(doc.get(k), int) or doc[k] < 0:
            return f"key {k} missing or not a non-negative int"
    if "hw" not in doc:
        return "key hw missing"
    if backend == "sw-buddy" and doc["hw"] is not None:
        return "hw is not null for sw-buddy"
    if backend != "sw-buddy" and not isinstance(doc["hw"], dict):
        return f"hw is not an object for {backend}"
    common = [k for k in keys if k in KEYS or k == "hints"]
    if keys[:len(common)] != common:
        return f"the common keys do not come first: {keys}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--slack", type=int, default=64)
    ap.add_argument("--min-allocs", type=int, default=1000)
    ap.add_argument("--backend")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.backend is not None and a.backend not in BACKENDS:
        print(f"check_stats.py: --backend: '{a.backend}' is not valid, accepted: "
              f"{', '.join(BACKENDS)}", file=sys.stderr)
        return 1
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
        if not type_ok(doc.get(k), t):
            print(f"FAIL: key {k} missing or not {t.__name__}")
            return 1
    if not isinstance(doc.get("hints"), dict) or any(
            not type_ok(doc["hints"].get(k), int) for k in HINT_KEYS):
        print("FAIL: hints.{neighbor,tree,container} missing")
        return 1
    if a.backend is not None:
        msg = check_backend(doc, a.backend)
        if msg:
            print(f"FAIL: {msg}")
            return 1
    for k in NON_NEGATIVE:
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
