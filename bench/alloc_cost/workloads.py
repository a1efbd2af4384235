#!/usr/bin/env python3
"""workloads.py - allocation-bound programs under each allocator preloaded:
churn_bench's single-threaded and multi-threaded churn, its larson-style
cross-thread hand-off and its large-buffer churn (5..25 MiB blocks, --ops /
20000 of them), median of --reps runs, in one table with each allocator's
time over the best peer's.

  workloads.py --program build/bin/churn_bench --allocator NAME=LIB ...
      [--ops N] [--reps R] [--json OUT]

The allocator named 'glibc' with LIB '-' is the system's (nothing
preloaded); every name but those starting with 'defero' is a peer.
"""
import json
import statistics
import subprocess

import allocators

PROG = "workloads.py"
CASES = [("churn", 1), ("churn", 4), ("larson", 2), ("larson", 8), ("large", 1)]
LARGE_OPS_DIVISOR = 20000  # a large block is ~20,000 small ones' bytes


def fail(msg):
    allocators.fail(PROG, msg)


def run(program, lib, mode, threads, ops):
    p = subprocess.run([program, mode, str(threads), str(ops)], env=allocators.environment(lib),
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        fail(f"{mode} {threads} under {lib}: exited {p.returncode}: {last}")
    f = dict(kv.split("=", 1) for kv in p.stdout.split() if "=" in kv)
    return float(f["time_ms"]), f["checksum"]


def main():
    ap = allocators.parser(PROG, __doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=8000000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    allocators.check_program(PROG, a.program)
    allocators.check_range(PROG, "reps", a.reps, 1, 99)
    allocators.check_range(PROG, "ops", a.ops, 16, 10**9)
    out = allocators.open_json(PROG, a.json)
    allocs = allocators.parse(PROG, a.allocator)
    res = {}
    for mode, threads in CASES:
        case = f"{mode} x{threads}"
        res[case] = {}
        sums = set()
        for name, lib in allocs:
            times = []
            for _ in range(a.reps):
                ops = max(16, a.ops // LARGE_OPS_DIVISOR) if mode == "large" else a.ops
                ms, checksum = run(a.program, lib, mode, threads, ops)
                times.append(ms)
                sums.add(checksum)
            res[case][name] = statistics.median(times)
        if len(sums) != 1:
            fail(f"{case}: the allocators computed different checksums")
    names = [n for n, _ in allocs]
    print("| workload | " + " | ".join(names) + " | Defero / best peer |")
    print("|---|" + "---|" * (len(names) + 1))
    for case, r in res.items():
        peers = [r[n] for n in names if not n.startswith("defero")]
        ours = [r[n] for n in names if n.startswith("defero")]
        ratio = f"{min(ours) / min(peers):.2f}" if peers and ours else "—"
        print(f"| {case} | " + " | ".join(f"{r[n]:.0f} ms" for n in names) + f" | {ratio} |")
    if out:
        with out as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
