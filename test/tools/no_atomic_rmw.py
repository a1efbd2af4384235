#!/usr/bin/env python3
"""Checks that functions of a shared library execute no atomic
read-modify-write: no lock-prefixed instruction, no xchg with memory (locked
implicitly), no cmpxchg, xadd or mfence. Issue 12's owner fast path (malloc,
free, operator new and delete, the C API's and the hint ABI's entry points)
takes no lock and no atomic RMW: their bodies are the inline fast paths,
everything else leaves them by a tail call to a function of its own.

  no_atomic_rmw.py --lib LIB [--objdump PATH] SYMBOL...

SYMBOL is the name objdump -d prints (mangled for C++). Prints one line per
function checked; exits 1 naming the first offending instruction, or a
symbol the library does not define; 2 on bad arguments.
"""
import argparse
import re
import shutil
import subprocess
import sys

PROG = "no_atomic_rmw"
# x86-64: lock prefix; xchg with a memory operand; cmpxchg(8b/16b); xadd; mfence.
ATOMIC = re.compile(r"\block\b|\bxchg\w*\s+[^#]*\(|\bcmpxchg|\bxadd|\bmfence")


def fail(msg, code=1):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def bodies(lib, objdump):
    """{symbol: [instruction lines]} of lib's text."""
    p = subprocess.run([objdump, "-d", "--no-show-raw-insn", lib], capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        fail(f"{lib}: objdump failed: {last}")
    out, name = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif not line.strip():
            name = None
        elif name is not None:
            out[name].append(line.strip())
    return out


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--objdump", default="objdump")
    ap.add_argument("symbols", nargs="+")
    try:
        a = ap.parse_args()
    except SystemExit as e:
        sys.exit(2 if e.code else 0)
    if not shutil.which(a.objdump):
        fail(f"objdump not found: {a.objdump}", 2)
    code = bodies(a.lib, a.objdump)
    for sym in a.symbols:
        if sym not in code:
            fail(f"{a.lib}: no function {sym}")
        for ins in code[sym]:
            if ATOMIC.search(ins.split(":", 1)[-1]):
                fail(f"{sym}: atomic read-modify-write: {ins}")
        print(f"{PROG}: {sym}: {len(code[sym])} instructions, no atomic read-modify-write")


if __name__ == "__main__":
    main()
