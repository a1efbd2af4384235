#!/usr/bin/env python3
"""pair_cost.py - instructions per malloc+free pair under each allocator,
counted by callgrind (deterministic: the same on every run of a machine).

Runs pair_cost (one binary) with each allocator preloaded, counts the
instructions of its run_rounds function (loop included) and divides by the
pairs it made. For libdefero it also counts the hinted variants: a
neighbour hint before every malloc, as std::list::push_back sends; the
fused hinted operator new the plugin emits for it; and mixed, the same list
built while a second container takes every other node with the fused
container hint (a std::map's operator[] between the list's inserts).

  pair_cost.py --program build/bin/pair_cost --allocator defero=LIB \
      [--allocator NAME=LIB ...] [--rounds N] [--size B] [--json OUT]

The allocator named 'glibc' with LIB '-' is the system's (nothing preloaded).
Prints a Markdown table; --json writes {name: {"plain": n, "hinted": n,
"fused": n, "mixed": n}}.
"""
import json
import os
import re
import subprocess
import tempfile

import allocators

PROG = "pair_cost.py"
BATCH = 1000  # pair_cost.c's kBatch


def fail(msg):
    allocators.fail(PROG, msg)


def count(program, lib, rounds, size, mode):
    """Instructions per pair of run_rounds under `lib` ('-': none)."""
    env = allocators.environment(lib)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=run_rounds",
               f"--callgrind-out-file={out}", program, str(rounds), str(size), mode]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"{' '.join(cmd)} exited {p.returncode}: {last}")
        with open(out) as f:
            text = f.read()
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if not m:
        fail(f"no instruction total in callgrind's output for {lib}")
    # The warm-up round (1) runs inside run_rounds too.
    return int(m.group(1)) / ((rounds + 1) * BATCH)


def main():
    ap = allocators.parser(PROG, __doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--size", type=int, default=32)
    a = ap.parse_args()
    allocators.check_program(PROG, a.program)
    allocators.check_range(PROG, "rounds", a.rounds, 1, 1000000)
    allocators.check_range(PROG, "size", a.size, 16, 1 << 20)
    out = allocators.open_json(PROG, a.json)
    res = {}
    for name, lib in allocators.parse(PROG, a.allocator):
        res[name] = {"plain": count(a.program, lib, a.rounds, a.size, "plain")}
        if name.startswith("defero"):
            res[name]["hinted"] = count(a.program, lib, a.rounds, a.size, "hinted")
            res[name]["fused"] = count(a.program, lib, a.rounds, a.size, "fused")
            res[name]["mixed"] = count(a.program, lib, a.rounds, a.size, "mixed")
    print(f"| allocator | instructions per {a.size} B malloc+free pair | with a neighbour hint "
          "| fused (__defero_new_hinted) | fused, a list and a map filled in turn |")
    print("|---|---|---|---|---|")
    for name, r in res.items():
        cols = [f"{r[m]:.1f}" if m in r else "—" for m in ("hinted", "fused", "mixed")]
        print(f"| {name} | {r['plain']:.1f} | " + " | ".join(cols) + " |")
    if out:
        with out as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
