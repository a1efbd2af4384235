#!/usr/bin/env python3
"""malloc_vs_peers.py - malloc_benchmark's throughput, Defero's over each allocator's, in one binary.

malloc_benchmark times every size mix, batch and thread count twice in one
process: through the system malloc ('system/') and through the Defero heap
linked in ('defero/'). Run once with nothing preloaded, the system malloc is
glibc's; run with a peer preloaded, it is the peer's. So each ratio below
compares Defero with one allocator inside the same run of the same binary
(issue 12's bar: at least 1.0x glibc's and 0.9x mimalloc's on every mix).
Each figure is the median of --reps runs.

  malloc_vs_peers.py --program build/bin/malloc_benchmark --allocator glibc=- \\
      --allocator mimalloc=LIB [--reps 3] [--min-time S] [--json OUT]

Prints a Markdown table (a row per mix, a column per allocator, the lowest
ratio of each column last); --json writes {mix: {allocator: ratio}}.
"""
import json
import statistics
import subprocess

import allocators

PROG = "malloc_vs_peers.py"
FILTER = "BM_MallocFree"


def fail(msg):
    allocators.fail(PROG, msg)


def run(program, lib, min_time):
    """{benchmark name: items per second} of one run under lib."""
    cmd = [program, f"--benchmark_filter={FILTER}", "--benchmark_format=json",
           f"--benchmark_min_time={min_time}"]
    p = subprocess.run(cmd, env=allocators.environment(lib), capture_output=True, text=True,
                       timeout=3600)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        fail(f"{program} under {lib}: exited {p.returncode}: {last}")
    try:
        runs = json.loads(p.stdout)["benchmarks"]
    except (ValueError, KeyError):
        fail(f"{program} under {lib}: no Google Benchmark JSON on its output")
    return {b["name"]: float(b["items_per_second"]) for b in runs
            if b.get("run_type", "iteration") == "iteration" and "items_per_second" in b}


def ratios(results):
    """{mix: Defero's median throughput over the system malloc's} from the
    runs of one allocator."""
    out = {}
    for name in results[0]:
        if "/defero/" not in name:
            continue
        system = name.replace("/defero/", "/system/")
        if system not in results[0]:
            continue
        mix = name.split("/defero/", 1)[1].replace("/real_time", "")
        ours = statistics.median(r[name] for r in results)
        theirs = statistics.median(r[system] for r in results)
        out[mix] = ours / theirs if theirs > 0 else float("nan")
    if not out:
        fail(f"the program ran no {FILTER} benchmark with a system/ and a defero/ side")
    return out


def main():
    ap = allocators.parser(PROG, __doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2)
    a = ap.parse_args()
    allocators.check_program(PROG, a.program)
    allocators.check_range(PROG, "reps", a.reps, 1, 99)
    allocators.check_range(PROG, "min-time", a.min_time, 0.001, 60, " (seconds)")
    allocs = allocators.parse(PROG, a.allocator)
    out = allocators.open_json(PROG, a.json)
    for name, lib in allocs:
        if name.startswith("defero"):
            fail(f"--allocator {name}: Defero is the benchmark's own other side; "
                 "name the allocators to compare it with")
    # Alternated (each rep runs every allocator) so a slow spell of the
    # machine falls on all of them alike.
    results = {name: [] for name, _ in allocs}
    for _ in range(a.reps):
        for name, lib in allocs:
            results[name].append(run(a.program, lib, a.min_time))
    table = {name: ratios(r) for name, r in results.items()}
    names = [n for n, _ in allocs]
    mixes = list(table[names[0]])
    print("| mix | " + " | ".join(f"Defero / {n}" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for mix in mixes:
        print(f"| {mix} | " + " | ".join(f"{table[n].get(mix, float('nan')):.2f}" for n in names)
              + " |")
    print("| **lowest** | " + " | ".join(f"**{min(table[n].values()):.2f}**" for n in names) + " |")
    if out:
        with out:
            json.dump({mix: {n: table[n].get(mix) for n in names} for mix in mixes}, out, indent=1)


if __name__ == "__main__":
    main()
