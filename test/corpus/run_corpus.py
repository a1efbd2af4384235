#!/usr/bin/env python3
"""Corpus test of the Defero compiler plugin for one program.

  run_corpus.py --defero-cxx W --plugin SO --libdefero SO [--cxx CXX]
                [--opt 0|1|2|3|s|z] [--std c++20] [--workdir DIR] program.cpp

Builds the program three ways at the same -O level and -std:
  plain   CXX (no plugin)
  defero  the defero-c++ wrapper (plugin + libdefero linked with an rpath)
  hints   CXX -fplugin=SO without libdefero (hints must be no-ops)
and runs:
  plain                               -> the reference stdout
  plain + LD_PRELOAD=libdefero        -> same stdout, stats report 0 hints
  defero (LD_PRELOAD unset)           -> same stdout, stats report > 0 hints
                                         of every kind the program declares
  defero, DEFERO_POLICY=first|path|best (path with DEFERO_K=12) -> same stdout
  hints (no runtime)                  -> same stdout, no stats file written
  hints + LD_PRELOAD=libdefero        -> same stdout
Every build must be free of diagnostics under -Wall -Wextra, every run must
exit 0. The program declares its hint kinds in a line
`// EXPECT-HINTS: neighbor tree container` (any non-empty subset).
On the first mismatch: one line on stderr, exit 1. Bad usage: exit 2.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import driver  # noqa: E402

PROG = "run_corpus.py"
KINDS = ("neighbor", "tree", "container")


Failure = driver.Failure
OneLineParser = driver.parser_class(PROG, " (see --help)")
one_line = driver.clip


def usage_error(msg):
    driver.usage_error(PROG, msg)


def expected_kinds(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*//\s*EXPECT-HINTS:(.*)$", line)
            if m:
                kinds = m.group(1).split()
                bad = [k for k in kinds if k not in KINDS]
                if not kinds or bad:
                    raise Failure(f"{path}: EXPECT-HINTS names {' '.join(bad) or 'nothing'};"
                                  f" accepted: {' '.join(KINDS)}")
                return kinds
    raise Failure(f"{path}: no '// EXPECT-HINTS: <kinds>' line")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("DEFERO_")}
    env.update(extra)
    return env


def compile_one(tag, cmd, where):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    diag = p.stderr.strip()
    if p.returncode != 0:
        first = diag.splitlines()[0] if diag else f"exit {p.returncode}"
        raise Failure(f"{where}: {tag} build failed: {one_line(first)}")
    if diag:
        raise Failure(f"{where}: {tag} build is not diagnostic-free: {one_line(diag.splitlines()[0])}")


def run_one(tag, exe, env, where):
    try:
        p = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure(f"{where}: {tag} run timed out after 120 s")
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        raise Failure(f"{where}: {tag} run exited {p.returncode}" + (f": {one_line(last)}" if last else ""))
    return p.stdout


def same_output(tag, ref, out, where):
    if out == ref:
        return
    a, b = ref.splitlines(), out.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<end of output>"
        y = b[i] if i < len(b) else "<end of output>"
        if x != y:
            raise Failure(f"{where}: {tag} stdout differs from plain at line {i + 1}:"
                          f" plain {one_line(x, 100)!r} vs {tag} {one_line(y, 100)!r}")
    raise Failure(f"{where}: {tag} stdout differs from plain (line endings)")


def read_stats(tag, path, where):
    try:
        with open(path) as f:
            doc = json.load(f)
        hints = doc["hints"]
        return doc, {k: int(hints[k]) for k in KINDS}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Failure(f"{where}: {tag} stats file {path}: {one_line(str(e))}")


def main():
    ap = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cxx", default="clang++-19", help="plain compiler (default clang++-19)")
    ap.add_argument("--defero-cxx", required=True, help="the defero-c++ wrapper")
    ap.add_argument("--plugin", required=True, help="DeferoPlugin.so")
    ap.add_argument("--libdefero", required=True, help="libdefero.so")
    ap.add_argument("--opt", default="2", choices=["0", "1", "2", "3", "s", "z"])
    ap.add_argument("--std", default="c++20", help="-std= value (default c++20)")
    ap.add_argument("--workdir", default=".", help="where builds and stats go")
    ap.add_argument("program")
    a = ap.parse_args()

    if not os.path.isfile(a.program):
        usage_error(f"no such program: {a.program}")
    cxx = shutil.which(a.cxx)
    if not cxx:
        usage_error(f"compiler not found: {a.cxx}")
    for opt, path in (("--defero-cxx", a.defero_cxx), ("--plugin", a.plugin),
                      ("--libdefero", a.libdefero)):
        if not os.path.isfile(path):
            usage_error(f"{opt}: no such file: {path}")
    if not re.fullmatch(r"(c|gnu)\+\+\d\w", a.std):
        usage_error(f"--std: expected e.g. c++20, got {a.std!r}")

    name = os.path.splitext(os.path.basename(a.program))[0]
    where = f"{name} -O{a.opt} -std={a.std}"
    wd = os.path.join(os.path.abspath(a.workdir), f"{name}.O{a.opt}.{a.std.replace('+', 'x')}")
    os.makedirs(wd, exist_ok=True)
    exe = {k: os.path.join(wd, k) for k in ("plain", "defero", "hints")}
    stats = lambda tag: os.path.join(wd, f"{tag}.stats.json")
    for f in list(exe.values()) + [stats(t) for t in ("preload", "defero", "hints", "hints-preload")]:
        if os.path.exists(f):
            os.unlink(f)
    lib = os.path.abspath(a.libdefero)

    try:
        kinds = expected_kinds(a.program)
        flags = [f"-std={a.std}", f"-O{a.opt}", "-Wall", "-Wextra", a.program, "-o"]
        compile_one("plain", [cxx] + flags + [exe["plain"]], where)
        compile_one("defero-c++", [a.defero_cxx] + flags + [exe["defero"]], where)
        compile_one("plugin-only", [cxx, f"-fplugin={os.path.abspath(a.plugin)}"] + flags
                    + [exe["hints"]], where)

        ref = run_one("plain", exe["plain"], clean_env(), where)
        if not ref.strip():
            raise Failure(f"{where}: plain run printed nothing")

        out = run_one("plain+LD_PRELOAD", exe["plain"],
                      clean_env(LD_PRELOAD=lib, DEFERO_STATS_FILE=stats("preload")), where)
        same_output("plain+LD_PRELOAD", ref, out, where)
        doc, got = read_stats("plain+LD_PRELOAD", stats("preload"), where)
        if any(got.values()) or doc.get("hinted_allocs", 0):
            raise Failure(f"{where}: plain+LD_PRELOAD reports hints without the plugin: {got}")
        if not doc.get("allocs"):
            raise Failure(f"{where}: plain+LD_PRELOAD stats report no allocations")

        out = run_one("defero", exe["defero"], clean_env(DEFERO_STATS_FILE=stats("defero")), where)
        same_output("defero", ref, out, where)
        doc, got = read_stats("defero", stats("defero"), where)
        missing = [k for k in kinds if got[k] <= 0]
        if missing:
            raise Failure(f"{where}: defero build made no {'/'.join(missing)} hints"
                          f" (EXPECT-HINTS: {' '.join(kinds)}; got {got})")
        print(f"{where}: hints {got}, hinted_allocs {doc.get('hinted_allocs')},"
              f" same_class {doc.get('hint_same_class')}, allocs {doc.get('allocs')}")

        for policy, k in (("first", None), ("path", "12"), ("best", None)):
            env = clean_env(DEFERO_POLICY=policy, **({"DEFERO_K": k} if k else {}))
            tag = f"defero[DEFERO_POLICY={policy}{' DEFERO_K=' + k if k else ''}]"
            same_output(tag, ref, run_one(tag, exe["defero"], env, where), where)

        out = run_one("plugin-only", exe["hints"], clean_env(DEFERO_STATS_FILE=stats("hints")), where)
        same_output("plugin-only", ref, out, where)
        if os.path.exists(stats("hints")):
            raise Failure(f"{where}: plugin-only build has the runtime (it wrote stats)")

        out = run_one("plugin-only+LD_PRELOAD", exe["hints"],
                      clean_env(LD_PRELOAD=lib, DEFERO_STATS_FILE=stats("hints-preload")), where)
        same_output("plugin-only+LD_PRELOAD", ref, out, where)
        _, got = read_stats("plugin-only+LD_PRELOAD", stats("hints-preload"), where)
        print(f"{where}: plugin-only+LD_PRELOAD hints {got}")
    except Failure as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 1
    except (OSError, subprocess.SubprocessError) as e:
        sys.stderr.write(f"{PROG}: {where}: {one_line(str(e))}\n")
        return 1
    print(f"{where}: PASS ({len(ref.splitlines())} identical lines in 9 runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
