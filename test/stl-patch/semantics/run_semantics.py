#!/usr/bin/env python3
"""Container semantics under the stl-patch include path equal the unpatched ones.

  run_semantics.py --include DIR --libdefero SO [--cxx CXX]... [--opt 0|1|2|3]
                   [--std c++17|c++20|c++23] [--runtime-include DIR]
                   [--workdir DIR] [--jobs N] [--cxxflag=FLAG]... program.cpp

Builds program.cpp with every --cxx (default: g++ and clang++-19) twice:
  plain    the compiler's own libstdc++ headers
  patched  the same plus -isystem DIR (the stl-patch include path)
all at the same -O level and -std, with -Wall -Wextra (any diagnostic
fails), and runs each binary twice: as is, and with LD_PRELOAD=SO and
DEFERO_STATS_FILE. Requires:
  - every build free of diagnostics, every run exit 0;
  - every stdout the same as the first plain build's (run without the
    runtime), line for line, except lines `defero-hints <name>: <n>`: 0 in
    plain builds, > 0 and the same in every patched build;
  - no failure marker in stdout (PENDING LEAK, LEAK, VIOLATED, MISMATCH,
    DID NOT THROW, FAILED), at least one "pending ok" and the "no leaks"
    line;
  - on stderr only the program's closing line, which says the runtime was
    present (with > 0 statistics checks) exactly when it was preloaded;
  - preloaded: the stats JSON reports no hints for plain builds, hints of
    every kind for patched builds, and hints == hinted_allocs (none left
    pending at exit).
On the first mismatch: one line on stderr, exit 1. Bad usage: exit 2.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

PROG = "run_semantics.py"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import driver  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RUNTIME_INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "runtime", "include"))
HINT_LINE = re.compile(r"^defero-hints (\S+): (\d+)$")
MARKERS = ("PENDING LEAK", "LEAK", "VIOLATED", "MISMATCH", "DID NOT THROW", "FAILED")
KINDS = ("neighbor", "tree", "container")


Failure = driver.Failure
Parser = driver.parser_class(PROG, " (see --help)")


def usage_error(msg):
    driver.usage_error(PROG, msg)


def clip(s, limit=200):
    return driver.clip(s, limit)


def first_line(s):
    for line in s.splitlines():
        if line.strip():
            return line.strip()
    return "(nothing)"


class Build:
    def __init__(self, cxx, patched, a, outdir):
        self.cxx = cxx
        self.patched = patched
        self.name = (f"{os.path.basename(cxx)} {'patched' if patched else 'plain'} -O{a.opt} "
                     f"-std={a.std}{''.join(' ' + f for f in a.cxxflag)}")
        tag = re.sub(r"[^A-Za-z0-9_.+-]", "_", os.path.basename(cxx))
        self.exe = os.path.join(outdir, f"{tag}-{'patched' if patched else 'plain'}")
        self.cmd = [cxx, f"-std={a.std}", f"-O{a.opt}", "-Wall", "-Wextra", "-pthread",
                    "-I", a.runtime_include] + a.cxxflag
        if patched:
            self.cmd += ["-isystem", a.include]
        self.cmd += [a.program, "-o", self.exe]

    def compile(self):
        p = subprocess.run(self.cmd, capture_output=True, text=True, timeout=600)
        diag = (p.stderr + p.stdout).strip()
        # The diagnostic itself, not its "In function ..." preamble.
        lines = diag.splitlines()
        main = next((l for l in lines if re.search(r"\b(error|warning|note):", l)), first_line(diag))
        if p.returncode != 0:
            raise Failure(f"{self.name}: build failed (exit {p.returncode}): {clip(main.strip())}")
        if diag:
            raise Failure(f"{self.name}: compiler diagnostic: {clip(main.strip())}")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("DEFERO_")}
    env.update(extra)
    return env


def run(build, preload, a, prog_name, stats_path):
    what = f"{build.name}{' + LD_PRELOAD=libdefero' if preload else ''}"
    env = clean_env()
    if preload:
        env = clean_env(LD_PRELOAD=a.libdefero, DEFERO_STATS_FILE=stats_path)
        if os.path.exists(stats_path):
            os.unlink(stats_path)
    try:
        p = subprocess.run([build.exe], capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what}: did not finish in 120 s")
    if p.returncode != 0:
        bad = [l for l in p.stdout.splitlines() if any(m in l for m in MARKERS)]
        detail = bad[0].strip() if bad else first_line(p.stderr)
        raise Failure(f"{what}: exit {p.returncode}: {clip(detail)}")
    for line in p.stdout.splitlines():
        if any(m in line for m in MARKERS):
            raise Failure(f"{what}: {clip(line.strip())}")
    if "pending ok" not in p.stdout:
        raise Failure(f"{what}: no 'pending ok' line in the transcript")
    if not re.search(r"^no leaks$", p.stdout, re.M):
        raise Failure(f"{what}: no 'no leaks' line in the transcript")
    # stderr: only the closing line, and it must agree with the preload.
    err = p.stderr.strip().splitlines()
    m = re.fullmatch(rf"{re.escape(prog_name)}: runtime (present|absent), (\d+) statistics checks",
                     err[-1].strip()) if err else None
    if not m or len(err) != 1:
        raise Failure(f"{what}: unexpected stderr: {clip(p.stderr.strip() or '(empty)')}")
    present, checks = m.group(1) == "present", int(m.group(2))
    if present != preload:
        raise Failure(f"{what}: the program says the runtime is {m.group(1)}"
                      f"{' (was the weak defero_stats_json resolved?)' if preload else ''}")
    if preload and checks == 0:
        raise Failure(f"{what}: the runtime was present but no statistics check ran")
    if preload:
        check_stats(what, build.patched, stats_path)
    return p.stdout


def check_stats(what, patched, path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(f"{what}: no stats JSON from DEFERO_STATS_FILE: {e}")
    try:
        hints = {k: int(doc["hints"][k]) for k in KINDS}
        hinted = int(doc["hinted_allocs"])
    except (KeyError, TypeError, ValueError):
        raise Failure(f"{what}: stats JSON lacks hints.neighbor/tree/container or hinted_allocs")
    if not patched and any(hints.values()):
        raise Failure(f"{what}: unpatched headers sent hints: {hints}")
    if patched:
        missing = [k for k in KINDS if hints[k] == 0]
        if missing:
            raise Failure(f"{what}: no {'/'.join(missing)} hints from the patched headers: {hints}")
    if sum(hints.values()) != hinted:
        raise Failure(f"{what}: at exit hints {sum(hints.values())} != hinted_allocs {hinted}"
                      " (a hint was left pending or lost)")


def compare(ref_name, ref, name, out, patched, hint_ref):
    """Line by line; hint lines: 0 plain, > 0 and equal among patched builds."""
    rl, ol = ref.splitlines(), out.splitlines()
    for i in range(max(len(rl), len(ol))):
        r = rl[i] if i < len(rl) else "(end of transcript)"
        o = ol[i] if i < len(ol) else "(end of transcript)"
        mr, mo = HINT_LINE.match(r), HINT_LINE.match(o)
        if mr and mo and mr.group(1) == mo.group(1):
            n = int(mo.group(2))
            if not patched and n != 0:
                raise Failure(f"{name}: line {i + 1}: '{o}': an unpatched build passed hints")
            if patched:
                if n == 0:
                    raise Failure(f"{name}: line {i + 1}: '{o}': the patched headers passed no "
                                  "hint through allocate(n, hint)")
                key = (i, mo.group(1))
                if key in hint_ref and hint_ref[key][1] != n:
                    raise Failure(f"{name}: line {i + 1}: '{o}' but {hint_ref[key][0]} "
                                  f"counted {hint_ref[key][1]}")
                hint_ref.setdefault(key, (name, n))
            continue
        if r != o:
            raise Failure(f"{name} differs from {ref_name} at line {i + 1}: "
                          f"expected '{clip(r, 150)}', got '{clip(o, 150)}'")


def main():
    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--include", required=True, help="the stl-patch include dir")
    ap.add_argument("--libdefero", required=True, help="libdefero.so (LD_PRELOADed)")
    ap.add_argument("--cxx", action="append", help="a C++ compiler (repeat; default g++ clang++-19)")
    ap.add_argument("--opt", default="2", choices=["0", "1", "2", "3"])
    ap.add_argument("--std", default="c++20", choices=["c++17", "c++20", "c++23"])
    ap.add_argument("--runtime-include", default=DEFAULT_RUNTIME_INCLUDE,
                    help="Defero's runtime/include (defero/allocator.h)")
    ap.add_argument("--workdir", default=os.path.join(os.getcwd(), "semantics-work"))
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    ap.add_argument("--cxxflag", action="append", default=[],
                    help="one more compiler flag for every build (repeat; --cxxflag=-DX)")
    ap.add_argument("program")
    a = ap.parse_args()

    if not os.path.isfile(a.program):
        usage_error(f"no such program: {a.program}")
    if not os.path.isfile(os.path.join(a.include, "bits", "defero_stl_hints.h")):
        usage_error(f"--include {a.include}: not an stl-patch include dir "
                    "(no bits/defero_stl_hints.h; build the stl-patch target)")
    if not os.path.isfile(a.libdefero):
        usage_error(f"--libdefero {a.libdefero}: no such file")
    if not os.path.isfile(os.path.join(a.runtime_include, "defero", "allocator.h")):
        usage_error(f"--runtime-include {a.runtime_include}: no defero/allocator.h there")
    if a.jobs < 1:
        usage_error(f"--jobs {a.jobs}: must be at least 1")
    compilers = a.cxx or ["g++", "clang++-19"]
    for i, cxx in enumerate(compilers):
        found = shutil.which(cxx)
        if not found:
            usage_error(f"--cxx {cxx}: compiler not found")
        compilers[i] = found
    a.program = os.path.abspath(a.program)
    a.include = os.path.abspath(a.include)
    a.libdefero = os.path.abspath(a.libdefero)
    prog_name = os.path.splitext(os.path.basename(a.program))[0]
    flags_tag = re.sub(r"[^A-Za-z0-9_.+=-]", "_", "".join(a.cxxflag))
    outdir = os.path.join(a.workdir, f"{prog_name}-O{a.opt}-{a.std}{flags_tag}")
    os.makedirs(outdir, exist_ok=True)

    builds = [Build(cxx, patched, a, outdir) for cxx in compilers for patched in (False, True)]
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = [pool.submit(b.compile) for b in builds]
            for f in futures:  # in order: the first failure is deterministic
                f.result()
        stats = os.path.join(outdir, "stats.json")
        ref_name = ref = None
        hint_ref = {}
        runs = 0
        for b in builds:
            for preload in (False, True):
                out = run(b, preload, a, prog_name, stats)
                name = f"{b.name}{' + LD_PRELOAD=libdefero' if preload else ''}"
                if ref is None:
                    ref_name, ref = name, out
                compare(ref_name, ref, name, out, b.patched, hint_ref)
                runs += 1
    except Failure as e:
        sys.stderr.write(f"{PROG}: {prog_name}: {e}\n")
        return 1
    except subprocess.TimeoutExpired as e:
        sys.stderr.write(f"{PROG}: {prog_name}: timed out: {' '.join(map(str, e.cmd))[:200]}\n")
        return 1
    hint_lines = ", ".join(f"{k[1]}={v[1]}" for k, v in sorted(hint_ref.items()))
    print(f"{prog_name}: {len(builds)} builds x 2 runs = {runs} transcripts of "
          f"{len(ref.splitlines())} lines agree (-O{a.opt} -std={a.std}; "
          f"{', '.join(os.path.basename(c) for c in compilers)}); "
          f"patched defero::allocator hints: {hint_lines or 'none in this program'}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
