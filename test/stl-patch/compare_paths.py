#!/usr/bin/env python3
"""The stl-patch path sends the plugin's hints, exactly.

  compare_paths.py --clang clang++-19 --plugin DeferoPlugin.so
                   --cxx g++ --include build/stl-patch/include
                   --libdefero libdefero.so [--opt 2] [--std c++20]
                   --workdir DIR program.cpp

Builds the program with clang and the plugin, and with --cxx and the
patched include path (no plugin), at the same -O level and -std, runs both
under libdefero with DEFERO_STATS_FILE, and requires the same output and
the same statistics JSON, byte for byte (the allocator is deterministic
for a single-threaded program given the same allocations and hints). Also
runs the stl-patch build without the runtime: the same output as the
program built with --cxx and the unpatched headers. One line on stderr and
exit 1 on a difference; exit 2 on bad usage.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import driver  # noqa: E402

PROG = "compare_paths.py"
Parser = driver.parser_class(PROG)
first_difference = driver.first_difference


def fail(msg):
    driver.fail(PROG, msg)


def run(cmd, env=None, what=""):
    return driver.run(PROG, cmd, env=env, what=what)


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    for opt in ("--clang", "--plugin", "--cxx", "--include", "--libdefero", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--opt", default="2", choices=["0", "1", "2", "3"])
    ap.add_argument("--std", default="c++20")
    ap.add_argument("program")
    a = ap.parse_args()
    if not os.path.isfile(a.program):
        ap.error(f"no such program: {a.program}")
    for what, path in (("plugin", a.plugin), ("libdefero", a.libdefero),
                       ("patched include path", os.path.join(a.include, "bits/defero_stl_hints.h"))):
        if not os.path.isfile(path):
            ap.error(f"{what} not found: {path}")
    os.makedirs(a.workdir, exist_ok=True)
    name = os.path.splitext(os.path.basename(a.program))[0]
    tag = f"{name}.{os.path.basename(a.cxx)}.O{a.opt}.{a.std}"
    flags = [f"-O{a.opt}", f"-std={a.std}", "-Wall", "-Wextra"]
    plugin_bin = os.path.join(a.workdir, tag + ".plugin")
    patch_bin = os.path.join(a.workdir, tag + ".stlpatch")
    run([a.clang, f"-fplugin={a.plugin}"] + flags + [a.program, "-o", plugin_bin],
        what="the plugin build")
    run([a.cxx, "-isystem", a.include] + flags + [a.program, "-o", patch_bin],
        what="the stl-patch build")

    def under_runtime(binary, stats):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEFERO_")}
        env.update(LD_PRELOAD=a.libdefero, DEFERO_STATS_FILE=stats)
        out = run([binary], env=env, what=os.path.basename(binary)).stdout
        with open(stats) as f:
            return out, f.read()

    out_p, stats_p = under_runtime(plugin_bin, plugin_bin + ".json")
    out_s, stats_s = under_runtime(patch_bin, patch_bin + ".json")
    if out_p != out_s:
        fail(f"{tag}: output differs between the plugin and stl-patch builds at "
             + first_difference(out_p, out_s))
    if '"hinted_allocs": 0,' in stats_p:
        fail(f"{tag}: the plugin build sent no hints: {stats_p.strip()}")
    if stats_p != stats_s:
        fail(f"{tag}: statistics differ: plugin {stats_p.strip()} vs stl-patch {stats_s.strip()}")
    plain_bin = os.path.join(a.workdir, tag + ".plain")
    run([a.cxx] + flags + [a.program, "-o", plain_bin], what="the plain build")
    bare = {k: v for k, v in os.environ.items()
            if k != "LD_PRELOAD" and not k.startswith("DEFERO_")}
    plain = run([plain_bin], env=bare, what=os.path.basename(plain_bin)).stdout
    alone = run([patch_bin], env=bare,
                what=os.path.basename(patch_bin) + " without the runtime").stdout
    if alone != plain:
        fail(f"{tag}: without the runtime the stl-patch build and the plain build differ at "
             + first_difference(plain, alone))
    print(f"{tag}: same output and statistics: {stats_s.strip()}")


if __name__ == "__main__":
    main()
