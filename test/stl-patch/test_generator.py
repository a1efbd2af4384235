#!/usr/bin/env python3
"""The stl-patch generator on headers it must refuse.

  test_generator.py --generator stl-patch/generate.py --cxx g++ --workdir DIR
                    [--cmake cmake --source-root .]

Copies the compiler's libstdc++ headers (those the generator reads, and
bits/c++config.h) into DIR, then checks, each time on a fresh copy:
  - an unaltered copy (--source-dir) gives exactly the headers --cxx gives;
  - an anchor removed from bits/stl_tree.h: exit 1, one line naming the
    header, the anchor and the release, and nothing written;
  - _GLIBCXX_RELEASE 99: one line naming the release and the supported ones;
  - a header missing; a compiler that does not exist;
  - an abi.h (--abi-header) without a hint's name or kind, or none at all.
With --cmake, also configures the project with DEFERO_STL_PATCH_SOURCE_DIR
pointing at the altered copy and checks that building the stl-patch target
fails with the same line. Exit 1 with one line on the first failed check.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

PROG = "test_generator.py"


def fail(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(1)


def gen(a, *args):
    return subprocess.run([sys.executable, a.generator] + list(args),
                          capture_output=True, text=True)


def expect_refusal(r, pattern, what, out_dir=None):
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1:
        fail(f"{what}: exit {r.returncode}, expected 1 (stderr: {lines[:1]})")
    if len(lines) != 1 or not re.fullmatch(pattern, lines[0]):
        fail(f"{what}: expected one line matching {pattern!r}, got {lines}")
    if out_dir and os.path.exists(out_dir):
        fail(f"{what}: {out_dir} was written although the generator failed")
    return lines[0]


def copy_headers(a, dest):
    r = gen(a, "--cxx", a.cxx, "--print-sources")
    if r.returncode != 0:
        fail(f"--print-sources failed: {r.stderr.strip()}")
    sources = r.stdout.split()
    probe = subprocess.run([a.cxx, "-std=c++17", "-xc++", "-M", "-"], input="#include <list>\n",
                           capture_output=True, text=True).stdout.replace("\\\n", " ").split()
    cfg = [p for p in probe if p.endswith("/bits/c++config.h")]
    if not cfg:
        fail("cannot find bits/c++config.h of " + a.cxx)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.join(dest, "bits"))
    for s in sources + cfg[:1]:
        shutil.copy(s, os.path.join(dest, "bits", os.path.basename(s)))
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator", required=True)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--cmake")
    ap.add_argument("--source-root")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)

    # An unaltered copy gives what the compiler's own headers give.
    src = copy_headers(a, os.path.join(a.workdir, "copy"))
    ref_out, copy_out = os.path.join(a.workdir, "ref"), os.path.join(a.workdir, "from-copy")
    for out, args in ((ref_out, ["--cxx", a.cxx]), (copy_out, ["--source-dir", src])):
        shutil.rmtree(out, ignore_errors=True)
        r = gen(a, *args, "--out", out)
        if r.returncode != 0:
            fail(f"generator {' '.join(args)} failed: {r.stderr.strip()}")
    for name in sorted(os.listdir(os.path.join(ref_out, "bits"))):
        with open(os.path.join(ref_out, "bits", name)) as f1, \
             open(os.path.join(copy_out, "bits", name)) as f2:
            # Only the banner's source path may differ.
            if f1.read().split("\n", 1)[1] != f2.read().split("\n", 1)[1]:
                fail(f"bits/{name} from the copy differs from the compiler's")

    # An anchor that is gone.
    tree = os.path.join(src, "bits", "stl_tree.h")
    with open(tree) as f:
        text = f.read()
    with open(tree, "w") as f:
        f.write(text.replace("_Auto_node __z(*this, std::forward<_Args>(__args)...);",
                             "_Auto_node __node(*this, std::forward<_Args>(__args)...);"))
    out = os.path.join(a.workdir, "altered-out")
    shutil.rmtree(out, ignore_errors=True)
    anchor_line = expect_refusal(
        gen(a, "--source-dir", src, "--out", out),
        r"stl-patch: bits/stl_tree\.h: anchor '_Auto_node __z\(\*this, "
        r"std::forward<_Args>\(__args\)\.\.\.\);' found 0 time\(s\), expected 4, "
        r"in libstdc\+\+ 12 at .*/bits/stl_tree\.h", "altered stl_tree.h", out)

    # An unknown release.
    src2 = copy_headers(a, os.path.join(a.workdir, "copy-99"))
    cfg = os.path.join(src2, "bits", "c++config.h")
    with open(cfg) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(re.sub(r"#define _GLIBCXX_RELEASE \d+", "#define _GLIBCXX_RELEASE 99", text))
    expect_refusal(gen(a, "--source-dir", src2, "--out", out),
                   r"stl-patch: libstdc\+\+ 99 \(found at .*/bits/c\+\+config\.h\) is not "
                   r"supported \(supported: 12\)", "release 99", out)

    # A header missing; a compiler that does not exist.
    src3 = copy_headers(a, os.path.join(a.workdir, "copy-missing"))
    os.remove(os.path.join(src3, "bits", "hashtable_policy.h"))
    expect_refusal(gen(a, "--source-dir", src3, "--out", out),
                   r"stl-patch: bits/hashtable_policy\.h: header not found in libstdc\+\+ 12 "
                   r"\(next to .*\)", "missing header", out)
    expect_refusal(gen(a, "--cxx", "/nonexistent/g++", "--out", out),
                   r"stl-patch: compiler not found: /nonexistent/g\+\+", "no compiler", out)

    # The hint ABI's names: an abi.h that lacks one, and one that is not there.
    abi = os.path.join(a.workdir, "abi.h")
    with open(abi, "w") as f:
        f.write('#define DEFERO_FN_HINT_NEIGHBOR "__defero_hint_neighbor"\n'
                '#define DEFERO_FN_HINT_CONTAINER "__defero_hint_container"\n')
    expect_refusal(gen(a, "--cxx", a.cxx, "--abi-header", abi, "--out", out),
                   r"stl-patch: .*/abi\.h: no #define of DEFERO_FN_HINT_TREE \(the hint ABI's "
                   r"names\)", "abi.h without the tree hint", out)
    # ... and one whose hint kinds are not numbers the generator can write.
    with open(abi, "w") as f:
        f.write('#define DEFERO_FN_HINT_NEIGHBOR "__defero_hint_neighbor"\n'
                '#define DEFERO_FN_HINT_TREE "__defero_hint_tree"\n'
                '#define DEFERO_FN_HINT_CONTAINER "__defero_hint_container"\n'
                '#define DEFERO_FN_NEW_HINTED "__defero_new_hinted"\n'
                '#define DEFERO_HINT_NONE 0\n#define DEFERO_HINT_NEIGHBOR 1\n'
                '#define DEFERO_HINT_TREE two\n#define DEFERO_HINT_CONTAINER 3\n')
    expect_refusal(gen(a, "--cxx", a.cxx, "--abi-header", abi, "--out", out),
                   r"stl-patch: .*/abi\.h: no #define of DEFERO_HINT_TREE \(the hint ABI's "
                   r"names\)", "abi.h whose tree kind is not a number", out)
    expect_refusal(gen(a, "--cxx", a.cxx, "--abi-header", abi + ".missing", "--out", out),
                   r"stl-patch: .*/abi\.h\.missing: cannot read the hint ABI's names: "
                   r"No such file or directory", "no abi.h", out)

    if a.cmake:
        build = os.path.join(a.workdir, "build")
        shutil.rmtree(build, ignore_errors=True)
        r = subprocess.run([a.cmake, "-S", a.source_root, "-B", build,
                            f"-DDEFERO_STL_PATCH_SOURCE_DIR={src}", "-DDEFERO_BUILD_TESTS=OFF",
                            "-DDEFERO_BUILD_BENCH=OFF"], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"configure failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        r = subprocess.run([a.cmake, "--build", build, "--target", "stl-patch"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            fail("building stl-patch from the altered headers succeeded")
        if anchor_line not in r.stdout + r.stderr:
            fail(f"the build failed without the generator's line: {anchor_line}")
    print("generator refusals: ok")


if __name__ == "__main__":
    main()
