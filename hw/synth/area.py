#!/usr/bin/env python3
"""Area of RBS and OBS: synthesises each controller (the allocator core
without its RAM, as the paper counts it) with yosys to iCE40 LUT4s and
flip-flops, and writes a table next to the paper's figure (3,988 LUTs on a
Virtex-E XCV1000E, whose slices also hold 4-input LUTs).

  area.py --yosys yosys --rtl hw/rtl --heap-log 20 --min-log 4 --out REPORT.md
"""
import argparse
import os
import re
import subprocess
import sys

PROG = "area.py"
PAPER_LUTS = 3988


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def synth(a, fast):
    rtl = [os.path.join(a.rtl, f) for f in ("sklansky_find.sv", "buddy_ctrl.sv")]
    script = (f"read_verilog -sv {' '.join(rtl)}; "
              f"chparam -set FAST {fast} -set HEAP_LOG {a.heap_log} -set MIN_LOG {a.min_log} buddy_ctrl; "
              f"synth_ice40 -top buddy_ctrl; stat")
    try:
        r = subprocess.run([a.yosys, "-p", script], capture_output=True, text=True)
    except FileNotFoundError:
        fail(f"yosys not found: {a.yosys}")
    out = r.stdout + r.stderr
    if r.returncode != 0:
        err = [l for l in out.splitlines() if "ERROR" in l] or out.splitlines()[-1:]
        fail(f"yosys failed: {err[0] if err else '?'}")
    stats = out.rsplit("Printing statistics.", 1)[-1]  # the final `stat`
    cells = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(SB_\w+)\s+(\d+)$", stats, re.M)}
    if "SB_LUT4" not in cells:
        fail("no SB_LUT4 count in yosys's statistics")
    luts = cells["SB_LUT4"]
    ffs = sum(v for k, v in cells.items() if k.startswith("SB_DFF"))
    carries = cells.get("SB_CARRY", 0)
    return luts, ffs, carries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--yosys", default="yosys")
    ap.add_argument("--rtl", required=True)
    ap.add_argument("--heap-log", type=int, default=20)
    ap.add_argument("--min-log", type=int, default=4)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not (4 <= a.min_log <= a.heap_log <= 62 and a.heap_log - a.min_log < 40):
        fail(f"need 4 <= --min-log <= --heap-log <= 62 (got {a.min_log}, {a.heap_log})")
    rows = []
    for name, fast in (("RBS", 0), ("OBS", 1)):
        print(f"{PROG}: synthesising {name} (heap 2^{a.heap_log} bytes, blocks from 2^{a.min_log}) ...",
              flush=True)
        rows.append((name,) + synth(a, fast))
    lines = [
        "# Area of the hardware buddy allocators",
        "",
        f"yosys `synth_ice40`, controller only (no RAM), heap 2^{a.heap_log} bytes, "
        f"smallest block 2^{a.min_log} bytes ({a.heap_log - a.min_log + 1} free lists).",
        "",
        "| design | LUT4 | flip-flops | carry cells | LUTs vs the paper's OBS (3,988) |",
        "|---|---|---|---|---|",
    ]
    for name, luts, ffs, carries in rows:
        lines.append(f"| {name} | {luts} | {ffs} | {carries} | {luts / PAPER_LUTS:.2f} |")
    lines.append("")
    lines.append(f"OBS against RBS (Fast-Find and Fast-Return): {rows[1][1] - rows[0][1]:+d} LUTs "
                 "(synthesis noise of a few LUTs either way).")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
