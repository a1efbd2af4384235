"""allocators.py - what pair_cost.py and workloads.py share: their common
options (--program, --allocator NAME=LIBRARY, --json), their checks, the
allocators' parsing and the environment a run under one of them gets."""
import argparse
import os
import sys


def fail(prog, msg):
    print(f"{prog}: {msg}", file=sys.stderr)
    sys.exit(1)


def parser(prog, description):
    """An argument parser with the options both scripts take."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--program", required=True)
    ap.add_argument("--allocator", action="append", default=[])
    ap.add_argument("--json")
    return ap


def check_program(prog, program):
    """A --program that is not an executable is a one-line error."""
    if not os.access(program, os.X_OK):
        fail(prog, f"--program '{program}' is not an executable")


def check_range(prog, option, value, lo, hi, unit=""):
    """A numeric option outside lo..hi is a one-line error."""
    if not lo <= value <= hi:
        fail(prog, f"--{option} '{value}' is not valid, accepted: {lo}..{hi}{unit}")


def open_json(prog, path):
    """The --json file opened for writing before any run (None without
    one), so that a bad path is told before minutes of runs."""
    if not path:
        return None
    try:
        return open(path, "w")
    except OSError as e:
        fail(prog, f"--json '{path}': cannot write it: {e.strerror}")


def parse(prog, texts):
    """[(name, library)] from NAME=LIBRARY texts ('glibc=-': nothing
    preloaded); a bad one is a one-line error."""
    out = []
    for t in texts:
        name, sep, lib = t.partition("=")
        if not sep or not name or not lib:
            fail(prog, f"--allocator '{t}' is not valid, accepted: NAME=LIBRARY")
        if lib != "-" and not os.path.exists(lib):
            fail(prog, f"--allocator {name}: no such library '{lib}'")
        out.append((name, lib))
    if not out:
        fail(prog, "no --allocator given")
    return out


def environment(lib):
    """This process's environment without DEFERO_* or LD_PRELOAD, with lib
    preloaded unless it is '-'."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DEFERO_") and k != "LD_PRELOAD"}
    if lib != "-":
        env["LD_PRELOAD"] = lib
    return env
