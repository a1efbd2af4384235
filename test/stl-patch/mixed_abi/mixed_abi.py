#!/usr/bin/env python3
"""Objects compiled with and without the patched include path link together.

  mixed_abi.py --cxx g++ [--cxx2 clang++-19] --include build/stl-patch/include
               --libdefero libdefero.so --opt 2 --workdir DIR

Compiles library.cpp and main.cpp each way, links the four combinations
(library patched or not x main patched or not; with --cxx2 the patched
library is compiled by that compiler), and requires of every one, with and
without the runtime preloaded: the same output as the all-plain program,
"layouts agree", exit 0. The patched objects define the same strong
symbols (the program's functions) as the plain ones, and the patched ones
send hints when the runtime is there. One line on stderr, exit 1, on a
failure; exit 2 on bad usage.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import driver  # noqa: E402

PROG = "mixed_abi.py"
HERE = os.path.dirname(os.path.abspath(__file__))


Parser = driver.parser_class(PROG)


def fail(msg):
    driver.fail(PROG, msg)


def run(cmd, env=None, what=""):
    return driver.run(PROG, cmd, env=env, what=what).stdout


def strong_symbols(cxx_nm, obj):
    out = run(["nm", "--defined-only", obj], what=f"nm {obj}")
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            syms.add(parts[2])
    return syms


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--cxx2", help="compiles the patched library instead of --cxx")
    ap.add_argument("--include", required=True)
    ap.add_argument("--libdefero", required=True)
    ap.add_argument("--opt", default="2", choices=["0", "1", "2", "3"])
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.include, "bits/defero_stl_hints.h")):
        ap.error(f"patched include path not found: {a.include}")
    if not os.path.isfile(a.libdefero):
        ap.error(f"libdefero not found: {a.libdefero}")
    os.makedirs(a.workdir, exist_ok=True)
    flags = [f"-O{a.opt}", "-std=c++17", "-Wall", "-Wextra", "-I", HERE]

    def obj(src, patched, cxx):
        out = os.path.join(a.workdir, f"{src}.{'patched' if patched else 'plain'}."
                                      f"{os.path.basename(cxx)}.O{a.opt}.o")
        run([cxx] + (["-isystem", a.include] if patched else []) + flags +
            ["-c", os.path.join(HERE, src + ".cpp"), "-o", out], what=f"compiling {out}")
        return out

    lib_cxx = a.cxx2 or a.cxx
    lib = {False: obj("library", False, a.cxx), True: obj("library", True, lib_cxx)}
    main_ = {False: obj("main", False, a.cxx), True: obj("main", True, a.cxx)}
    for name, objs in (("library", lib), ("main", main_)):
        plain, patched = strong_symbols(a.cxx, objs[False]), strong_symbols(a.cxx, objs[True])
        if plain != patched:
            diff = sorted(plain ^ patched)
            fail(f"{name}: the patched object defines other symbols than the plain one: {diff[0]}")

    bare = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("DEFERO_")}
    reference = None
    for lp in (False, True):
        for mp in (False, True):
            exe = os.path.join(a.workdir, f"mixed.lib{int(lp)}.main{int(mp)}.O{a.opt}")
            run([a.cxx, lib[lp], main_[mp], "-o", exe], what=f"linking {exe}")
            out = run([exe], env=bare, what=exe)
            stats = exe + ".json"
            env = dict(bare, LD_PRELOAD=a.libdefero, DEFERO_STATS_FILE=stats)
            out_rt = run([exe], env=env, what=exe + " under libdefero")
            if "layouts agree" not in out:
                fail(f"{exe}: {out.splitlines()[0] if out else 'no output'}")
            if reference is None:
                reference = out
            for o, how in ((out, "alone"), (out_rt, "under libdefero")):
                if o != reference:
                    fail(f"{exe} ({how}) prints {o.splitlines()} instead of {reference.splitlines()}")
            with open(stats) as f:
                hinted = json.load(f)["hinted_allocs"]
            if (lp or mp) != (hinted > 0):
                fail(f"{exe}: {hinted} hinted allocations (patched library {lp}, main {mp})")
            print(f"{os.path.basename(exe)}: {reference.splitlines()[-1]}, {hinted} hinted allocations")


if __name__ == "__main__":
    main()
