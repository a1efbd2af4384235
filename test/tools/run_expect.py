#!/usr/bin/env python3
"""Runs a command and checks how it ended: exit status and output.

  run_expect.py [--env K=V]... [--exit N|nonzero|abort] [--stderr REGEX]...
                [--stdout REGEX]... [--stderr-lines N] [--json-file PATH]
                [--json-min KEY=N]... [--json-max KEY=N]... [--json-eq KEY=V]...
                -- command args...

--exit abort means killed by SIGABRT. --stderr-lines N checks stderr has
exactly N lines (a one-line error is one line). --json-file reads a JSON
file the command wrote; --json-min KEY=N requires key (dotted for nested)
to be >= N, --json-max <= N; --json-eq KEY=V requires its value to print
as V (a string as is, null as null, a number as Python prints it). Prints what it checked; exits 1 on the first mismatch.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--exit", default="0")
    ap.add_argument("--stderr", action="append", default=[])
    ap.add_argument("--stdout", action="append", default=[])
    ap.add_argument("--stderr-lines", type=int)
    ap.add_argument("--json-file")
    ap.add_argument("--json-min", action="append", default=[])
    ap.add_argument("--json-max", action="append", default=[])
    ap.add_argument("--json-eq", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        print("run_expect.py: no command given", file=sys.stderr)
        return 2
    env = dict(os.environ)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    if a.json_file and os.path.exists(a.json_file):
        os.unlink(a.json_file)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=a.timeout)
    out, err, rc = p.stdout, p.stderr, p.returncode
    print(f"command: {' '.join(cmd)}\nexit: {rc}\nstdout:\n{out[-2000:]}\nstderr:\n{err[-2000:]}")

    def fail(msg: str) -> int:
        print(f"FAIL: {msg}")
        return 1

    if a.exit == "nonzero":
        if rc <= 0:
            return fail(f"expected a non-zero exit status, got {rc}")
    elif a.exit == "abort":
        if rc != -signal.SIGABRT:
            return fail(f"expected SIGABRT, got {rc}")
    elif rc != int(a.exit):
        return fail(f"expected exit {a.exit}, got {rc}")
    for rx in a.stderr:
        if not re.search(rx, err, re.M):
            return fail(f"stderr does not match /{rx}/")
    for rx in a.stdout:
        if not re.search(rx, out, re.M):
            return fail(f"stdout does not match /{rx}/")
    if a.stderr_lines is not None:
        n = len(err.splitlines())
        if n != a.stderr_lines:
            return fail(f"expected {a.stderr_lines} stderr line(s), got {n}")
    if a.json_file:
        try:
            with open(a.json_file) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            return fail(f"{a.json_file}: {e}")
        def lookup(key):
            v = doc
            for part in key.split("."):
                if not isinstance(v, dict) or part not in v:
                    return False, None
                v = v[part]
            return True, v

        checks = ([(s, ">=") for s in a.json_min] + [(s, "<=") for s in a.json_max] +
                  [(s, "==") for s in a.json_eq])
        for spec, op in checks:
            key, _, want = spec.partition("=")
            found, v = lookup(key)
            if not found:
                return fail(f"JSON has no key {key}")
            if op == "==":
                shown = "null" if v is None else str(v)
                if shown != want:
                    return fail(f"JSON {key}={shown}, expected {want}")
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return fail(f"JSON {key}={v} is not a number")
            if (op == ">=" and v < float(want)) or (op == "<=" and v > float(want)):
                return fail(f"JSON {key}={v}, expected {op} {want}")
        print(f"json: {json.dumps(doc)}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
