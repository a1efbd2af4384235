#!/usr/bin/env python3
"""Builds a consumer project with the Defero wrappers the way a user's build
system would, runs it, and checks the result. One scenario per run:

  build_systems.py cmake --lto off|thin|full   CMake + Ninja, CC=defero-cc CXX=defero-c++
  build_systems.py clang-tidy                  -fplugin-arg-defero-stl-patch in the flags, then
                                               clang-tidy-19 on the compile_commands.json
  build_systems.py ccache                      CMAKE_<LANG>_COMPILER_LAUNCHER=ccache
  build_systems.py make                        make CXX=defero-c++ CC=defero-cc (a plain Makefile)
  build_systems.py configure                   autoconf, then ./configure CXX=defero-c++ CC=defero-cc

Common options: --bin (the build's bin/, holding the wrappers), --lib
(its lib/), --cmake, --workdir, --ccache, --clang-tidy, --autoconf,
--make-wrapper (plugin/tools/make_wrapper.cmake) and --template
(plugin/tools/defero-cc.in).

Every scenario builds test/build-systems/consumer (a static library, a shared
library, a C static library and an executable) and checks that the program
prints the expected checksum and that its DEFERO_STATS_FILE reports exactly
the hints the program makes (1000 neighbour, 12 tree, 200 container): the
hints reached the runtime. A failed check is one line and exit 1; bad usage
exit 2.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import driver  # noqa: E402

PROG = "build_systems.py"
HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer")
EXPECTED_OUTPUT = "distinct 200 weight 10064 digest -5501219948894752268 mix -5501219958253086716"
EXPECTED_HINTS = {"neighbor": 1000, "tree": 12, "container": 200}


def fail(msg):
    driver.fail(PROG, msg)


def run(cmd, env=None, cwd=None, what=None):
    """Runs cmd; on failure, fails with the first line that says why."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).splitlines()
        why = next((l for l in lines if re.search(r"error|Error|FAILED|not found", l)),
                   lines[-1] if lines else "(no output)")
        fail(f"{what or os.path.basename(cmd[0])} failed (exit {r.returncode}): {driver.clip(why.strip())}")
    return r


def wrapper_env(bin_dir, extra=None):
    env = dict(os.environ)
    env["CC"] = os.path.join(bin_dir, "defero-cc")
    env["CXX"] = os.path.join(bin_dir, "defero-c++")
    for k in ("CFLAGS", "CXXFLAGS", "LDFLAGS", "DEFERO_STATS", "DEFERO_STATS_FILE"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def check_program(program, workdir):
    """The program prints the checksum and its stats report the hints."""
    stats = os.path.join(workdir, "stats.json")
    if os.path.exists(stats):
        os.remove(stats)
    env = dict(os.environ, DEFERO_STATS_FILE=stats)
    r = run([program], env=env, what=os.path.basename(program))
    if r.stdout.strip() != EXPECTED_OUTPUT:
        fail(f"{program} printed '{driver.clip(r.stdout.strip())}', expected '{EXPECTED_OUTPUT}'")
    if not os.path.exists(stats):
        fail(f"{program} wrote no stats to {stats}: the Defero runtime is not linked")
    with open(stats) as f:
        hints = json.load(f)["hints"]
    if hints != EXPECTED_HINTS:
        fail(f"{program}: hints {hints}, expected {EXPECTED_HINTS}")
    print(f"{os.path.basename(program)}: output and hints {hints} as expected")


def cmake_configure(a, build, env, extra=()):
    shutil.rmtree(build, ignore_errors=True)
    run([a.cmake, "-S", CONSUMER, "-B", build, "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=RelWithDebInfo", *extra], env=env, what="cmake (configure)")


def cache_entries(build):
    entries = {}
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                entries[m.group(1)] = m.group(2)
    return entries


def check_toolchain(a, build):
    """The cache's tools are those of the LLVM whose clang the wrappers run:
    each resolves to the file that `defero-c++ -print-prog-name=<tool>`
    names."""
    cache = cache_entries(build)
    cxx = os.path.join(a.bin, "defero-c++")
    expected = {
        "CMAKE_AR": "llvm-ar", "CMAKE_RANLIB": "llvm-ranlib",
        "CMAKE_CXX_COMPILER_AR": "llvm-ar", "CMAKE_CXX_COMPILER_RANLIB": "llvm-ranlib",
        "CMAKE_C_COMPILER_AR": "llvm-ar", "CMAKE_C_COMPILER_RANLIB": "llvm-ranlib",
        "CMAKE_NM": "llvm-nm", "CMAKE_OBJCOPY": "llvm-objcopy",
        "CMAKE_OBJDUMP": "llvm-objdump", "CMAKE_STRIP": "llvm-strip",
    }
    # (Not CMAKE_LINKER: CMake prefers any ld.lld on the PATH to
    # defero-ld, and clang, not CMAKE_LINKER, runs the linker of a link.)
    for var, tool in expected.items():
        want = run([cxx, f"-print-prog-name={tool}"]).stdout.strip()
        if not os.path.isabs(want):
            fail(f"defero-c++ -print-prog-name={tool} gave '{want}', not a path")
        got = cache.get(var, "(unset)")
        if not os.path.isabs(got) or os.path.realpath(got) != os.path.realpath(want):
            fail(f"{var} is '{got}', expected the clang's {tool} ({os.path.realpath(want)})")
    print(f"CMakeCache: {len(expected)} tools are clang's own (archiver {cache['CMAKE_CXX_COMPILER_AR']})")


def check_bitcode(a, build, expect_bitcode):
    """Under LTO the objects are LLVM bitcode carrying the hint calls."""
    obj = os.path.join(build, "CMakeFiles", "catalog.dir", "catalog.cpp.o")
    with open(obj, "rb") as f:
        is_bitcode = f.read(4) == b"BC\xc0\xde"
    if is_bitcode != expect_bitcode:
        fail(f"{obj} is {'' if is_bitcode else 'not '}LLVM bitcode")
    nm = run([os.path.join(a.bin, "defero-llvm-nm"), obj]).stdout
    if "__defero_" not in nm:
        fail(f"{obj} calls no __defero_ entry point: the plugin did not run")


def scenario_cmake(a):
    build = os.path.join(a.workdir, "build")
    extra = ["-DCONSUMER_REQUIRE_IPO=ON"]
    flags = {}
    if a.lto == "thin":
        # CMake's own IPO: -flto=thin for clang, archived with
        # CMAKE_CXX_COMPILER_AR.
        extra.append("-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON")
    elif a.lto == "full":
        # Full LTO by flags: archived with CMAKE_AR.
        flags = {"CFLAGS": "-flto=full", "CXXFLAGS": "-flto=full", "LDFLAGS": "-flto=full"}
    env = wrapper_env(a.bin, flags)
    cmake_configure(a, build, env, extra)
    check_toolchain(a, build)
    run([a.cmake, "--build", build], env=env, what="cmake --build")
    check_bitcode(a, build, a.lto != "off")
    check_program(os.path.join(build, "consumer"), a.workdir)


def scenario_clang_tidy(a):
    build = os.path.join(a.workdir, "build")
    env = wrapper_env(a.bin)
    # The patched include path, spelled as a plugin argument: the build gets
    # the same hints, and the database holds a flag clang-tidy ignores.
    cmake_configure(a, build, env, ["-DCMAKE_CXX_FLAGS=-fplugin-arg-defero-stl-patch"])
    run([a.cmake, "--build", build], env=env, what="cmake --build")
    check_program(os.path.join(build, "consumer"), a.workdir)
    db = os.path.join(build, "compile_commands.json")
    with open(db) as f:
        entries = json.load(f)
    if not any("defero-c++" in e["command"] and "-fplugin-arg-defero-stl-patch" in e["command"]
               for e in entries):
        fail(f"{db} holds no defero-c++ command with -fplugin-arg-defero-stl-patch")
    # A check that fires on the consumer's own code: clang-tidy parsed it
    # with the database's flags (the wrapper as the compiler, a plugin
    # argument).
    src = os.path.join(CONSUMER, "catalog.cpp")
    r = subprocess.run([a.clang_tidy, "-p", build, "--checks=-*,modernize-use-trailing-return-type",
                        src], capture_output=True, text=True)
    out = r.stdout + r.stderr
    errors = [l for l in out.splitlines() if "error:" in l]
    if r.returncode != 0 or errors:
        fail(f"clang-tidy failed (exit {r.returncode}): {driver.clip((errors or [out.strip()])[0])}")
    if "catalog.cpp:" not in out or "[modernize-use-trailing-return-type]" not in out:
        fail(f"clang-tidy found nothing in {src}: {driver.clip(out.strip())}")
    print("clang-tidy-19: the compilation database is usable (a warning in catalog.cpp, no error)")


def ccache_stats(a, env):
    r = run([a.ccache, "--print-stats"], env=env)
    stats = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)
    hits = int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0))
    return hits, int(stats.get("cache_miss", 0))


def scenario_ccache(a):
    """A second clean build hits; a changed plugin or runtime misses. The
    wrappers here are written by make_wrapper.cmake, as the build writes
    them, around copies of the libraries that the scenario then changes."""
    lib = os.path.join(a.workdir, "lib")
    bin_dir = os.path.join(a.workdir, "bin")
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(lib)
    os.makedirs(bin_dir)
    runtime = os.path.basename(os.path.realpath(os.path.join(a.lib, "libdefero.so")))
    libs = {name: os.path.join(lib, name)
            for name in ("DeferoPlugin.so", "DeferoClangPlugin.so", runtime)}
    libs["libdefero.so"] = libs.pop(runtime)
    for name in os.listdir(a.lib):  # the libraries, and libdefero's links
        if name in ("DeferoPlugin.so", "DeferoClangPlugin.so") or name.startswith("libdefero.so"):
            shutil.copy2(os.path.join(a.lib, name), lib, follow_symlinks=False)
    stlpatch = os.path.join(os.path.dirname(a.lib), "stl-patch", "include")

    def write_wrappers():
        for name, lang in (("defero-c++", "C++"), ("defero-cc", "C")):
            with open(os.path.join(a.bin, name)) as f:
                real = re.search(r'^compiler="(.*)"$', f.read(), re.M).group(1)
            run([a.cmake, f"-DTEMPLATE={a.template}", f"-DOUT={os.path.join(bin_dir, name)}",
                 f"-DNAME={name}", f"-DLANG={lang}", f"-DCOMPILER={real}",
                 f"-DPLUGIN={libs['DeferoPlugin.so']}",
                 f"-DCLANG_PLUGIN={libs['DeferoClangPlugin.so']}",
                 f"-DRUNTIME={libs['libdefero.so']}", f"-DSTLPATCH={stlpatch}",
                 "-P", a.make_wrapper], what="make_wrapper.cmake")

    write_wrappers()
    env = wrapper_env(bin_dir, {"CCACHE_DIR": os.path.join(a.workdir, "ccache")})
    for k in list(env):
        if k.startswith("CCACHE_") and k != "CCACHE_DIR":
            del env[k]
    build = os.path.join(a.workdir, "build")
    cmake_configure(a, build, env, ["-DCMAKE_CXX_COMPILER_LAUNCHER=" + a.ccache,
                                    "-DCMAKE_C_COMPILER_LAUNCHER=" + a.ccache])
    sources = 4

    def clean_build(label, want_hits):
        run([a.cmake, "--build", build, "--target", "clean"], env=env, what="cmake --build --target clean")
        run([a.ccache, "--zero-stats"], env=env)
        run([a.cmake, "--build", build], env=env, what=f"cmake --build ({label})")
        hits, misses = ccache_stats(a, env)
        print(f"{label}: {hits} hits, {misses} misses")
        if want_hits and (hits, misses) != (sources, 0):
            fail(f"{label}: {hits} hits and {misses} misses, expected {sources} hits")
        if not want_hits and (hits, misses) != (0, sources):
            fail(f"{label}: {hits} hits and {misses} misses, expected {sources} misses")
        check_program(os.path.join(build, "consumer"), a.workdir)

    clean_build("first build", want_hits=False)
    clean_build("second clean build", want_hits=True)
    for name in ("DeferoPlugin.so", "libdefero.so"):
        with open(libs[name], "ab") as f:  # a changed library: one more byte
            f.write(b"\0")
        write_wrappers()
        clean_build(f"after {name} changed", want_hits=False)
        clean_build(f"again after {name} changed", want_hits=True)


def scenario_make(a):
    work = os.path.join(a.workdir, "make")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run(["make", "-f", os.path.join(HERE, "make", "Makefile"), f"SRC={CONSUMER}",
         "CXX=" + os.path.join(a.bin, "defero-c++"), "CC=" + os.path.join(a.bin, "defero-cc")],
        env=wrapper_env(a.bin), cwd=work, what="make")
    check_program(os.path.join(work, "consumer"), a.workdir)


def scenario_configure(a):
    work = os.path.join(a.workdir, "configure")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for d in (os.path.join(HERE, "autoconf"), CONSUMER):
        for name in os.listdir(d):
            if name.endswith((".ac", ".in", ".cpp", ".h", ".c")):
                shutil.copy2(os.path.join(d, name), work)
    run([a.autoconf], cwd=work, what="autoconf")
    env = wrapper_env(a.bin)
    r = run(["./configure", "CXX=" + env["CXX"], "CC=" + env["CC"]], env=env, cwd=work,
            what="./configure")
    for want in ("checking whether the C compiler works... yes",
                 "checking whether we are cross compiling... no",
                 "checking whether the compiler supports GNU C++... yes",
                 "checking for defero_malloc... yes"):
        if want not in r.stdout:
            fail(f"./configure did not say '{want}'")
    run(["make"], env=env, cwd=work, what="make")
    check_program(os.path.join(work, "consumer"), a.workdir)


def main():
    ap = driver.parser_class(PROG, " (see --help)")(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", choices=["cmake", "clang-tidy", "ccache", "make", "configure"])
    ap.add_argument("--lto", choices=["off", "thin", "full"], default="off")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--ccache", default="ccache")
    ap.add_argument("--clang-tidy", default="clang-tidy-19")
    ap.add_argument("--autoconf", default="autoconf")
    ap.add_argument("--make-wrapper")
    ap.add_argument("--template")
    a = ap.parse_args()
    for name in ("defero-c++", "defero-cc"):
        if not os.access(os.path.join(a.bin, name), os.X_OK):
            driver.usage_error(PROG, f"no {name} in {a.bin} (build the project first)")
    needs = {"ccache": a.ccache, "clang-tidy": a.clang_tidy, "configure": a.autoconf}
    tool = needs.get(a.scenario)
    if tool is not None and not shutil.which(tool):
        driver.usage_error(PROG, f"{tool} not found (bash setup.sh deps installs it)")
    if a.scenario == "ccache" and not (a.make_wrapper and a.template):
        driver.usage_error(PROG, "ccache needs --make-wrapper and --template")
    a.workdir = os.path.abspath(a.workdir)
    os.makedirs(a.workdir, exist_ok=True)
    {"cmake": scenario_cmake, "clang-tidy": scenario_clang_tidy, "ccache": scenario_ccache,
     "make": scenario_make, "configure": scenario_configure}[a.scenario](a)


if __name__ == "__main__":
    main()
