#!/usr/bin/env python3
"""The benchmark report: runs the list and tree kernels under every
allocator and hint path, side by side in one run, and writes REPORT.md
(tables normalised to glibc and to the ideal layout, the product's goals,
the machine and versions) and PNG plots (time against K per predicate,
peers as horizontal lines, as the Defero paper's Figs. 3 and 4).

  bench_report.py --scale smoke|full --out DIR --plain BIN --plugin BIN
                  --stlpatch BIN --libdefero LIB
                  [--peer NAME=LIB]... [--ks 12,16,20,24,28]
                  [--app 'NAME|PLAIN|PLUGIN|STLPATCH[|CLANG]']...
                  [--replay BIN] [--soak BIN]
                  [--pair-cost BIN] [--churn-bench BIN] [--malloc-benchmark BIN]

Progress goes to stdout, one line per run. A run that fails, or kernels
whose checksums differ between allocators, end it with a one-line error
(exit 1).
"""
import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

PROG = "bench_report.py"
SCALES = {
    # list nodes, tree nodes, repetitions, K sweep. The headline rows take
    # the median of the repetitions; the sweep's other points (K != 20) and
    # the defero::allocator variants run once each, to keep the full run
    # near an hour and a half on a 2-core machine.
    "smoke": (20000, 20000, 1, (12, 20, 28)),
    "full": (1000000, 3000000, 3, (12, 16, 20, 24, 28)),
}
PREDICATES = ("first", "best", "path", "auto")
# The label of the applications' plain clang++-19 build (the plugin's
# compiler without the plugin).
CLANG_BUILD = "clang++-19 build"
# The applications' arguments at each scale (full: their defaults).
APP_ARGS = {
    "smoke": {"md_cells": ["--particles", "20000", "--steps", "4"],
              "debruijn_net": ["--bits", "12", "--rounds", "3", "--messages", "20"],
              "mini_compiler": ["--functions", "50", "--instructions", "1000"]},
    "full": {},
}
PHASES = {
    "List": ("build", "for_each", "sort", "for_each_sorted", "clear"),
    "Tree": ("build", "find", "for_each", "destroy"),
}


# What a run's environment must not inherit from the caller's: each run
# sets the allocator and Defero's knobs itself.
RUN_KNOBS = ("LD_PRELOAD", "DEFERO_POLICY", "DEFERO_K", "DEFERO_STATS", "DEFERO_STATS_FILE",
             "DEFERO_TRACE")


def environment(env):
    """The caller's environment without RUN_KNOBS, plus env."""
    out = {k: v for k, v in os.environ.items() if k not in RUN_KNOBS}
    out.update(env)
    return out


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


class Runner:
    def __init__(self, a, list_n, tree_n, reps):
        self.a, self.list_n, self.tree_n, self.reps = a, list_n, tree_n, reps
        self.count = 0

    def run(self, label, binary, env, bench_filter, reps=None):
        """Runs one binary; returns {"List/std": {phase: ns, "checksum": c}, ...}.
        reps: the repetitions, if not the scale's."""
        reps = self.reps if reps is None else reps
        self.count += 1
        print(f"{PROG}: [{self.count}] {label} ...", flush=True)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            cmd = [binary, f"--list-n={self.list_n}", f"--tree-n={self.tree_n}",
                   f"--benchmark_filter={bench_filter}", "--benchmark_min_time=0.01",
                   f"--benchmark_repetitions={reps}",
                   "--benchmark_report_aggregates_only=true" if reps > 1 else
                   "--benchmark_report_aggregates_only=false",
                   f"--benchmark_out={out}", "--benchmark_out_format=json"]
            try:
                p = subprocess.run(cmd, env=environment(env), capture_output=True, text=True,
                                   timeout=7200)
            except FileNotFoundError:
                fail(f"{label}: no such program: {binary}")
            if p.returncode != 0:
                last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                fail(f"{label}: {os.path.basename(binary)} exited {p.returncode}: {last}")
            try:
                with open(out) as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                fail(f"{label}: no benchmark results ({(p.stderr.strip().splitlines() or ['?'])[-1]})")
        result = {}
        for b in doc.get("benchmarks", []):
            if b.get("error_occurred"):
                fail(f"{label}: {b['name']}: {b.get('error_message', 'error')}")
            if reps > 1 and b.get("aggregate_name") != "median":
                continue
            name = b["name"].split("/manual_time")[0]
            kernel = name.split("/")[0]
            row = {ph: b[ph + "_ns"] for ph in PHASES[kernel] if ph + "_ns" in b}
            row["checksum"] = b.get("checksum")
            row["hw_counters"] = b.get("hw_counters", 0)
            for ph in PHASES[kernel]:  # present only where the machine counts them
                for ev in ("l1d_misses", "ll_misses"):
                    if f"{ph}_{ev}" in b:
                        row[f"{ph}_{ev}"] = b[f"{ph}_{ev}"]
            result[name] = row
        if not result:
            fail(f"{label}: no benchmark matched '{bench_filter}'")
        return result


def run_app(self, label, binary, env, args):
    """Runs an application; returns (milliseconds, checksum, peak RSS bytes)
    from the line it prints."""
    self.count += 1
    print(f"{PROG}: [{self.count}] {label} ...", flush=True)
    p = subprocess.run([binary] + args, env=environment(env), capture_output=True, text=True,
                       timeout=7200)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        fail(f"{label}: {os.path.basename(binary)} exited {p.returncode}: {last}")
    fields = dict(kv.split("=", 1) for kv in p.stdout.split() if "=" in kv)
    try:
        return float(fields["time_ms"]), fields["checksum"], int(fields["peak_rss_bytes"])
    except (KeyError, ValueError):
        fail(f"{label}: no time_ms=/checksum=/peak_rss_bytes= in its output")


Runner.run_app = run_app


def versions(a):
    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "?"

    def pkg(name):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True,
                           text=True)
        return r.stdout if r.returncode == 0 else "not installed"

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return [
        f"- machine: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}",
        f"- compilers: {first_line(['g++', '--version'])}; {first_line(['clang++-19', '--version'])}",
        f"- glibc {platform.libc_ver()[1]}; jemalloc {pkg('libjemalloc2')}; mimalloc "
        f"{pkg('libmimalloc2.0')}; tcmalloc (gperftools) {pkg('libgoogle-perftools4')}; "
        f"Google Benchmark {pkg('libbenchmark-dev')}",
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plain", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--stlpatch", required=True)
    ap.add_argument("--clang", default="")
    ap.add_argument("--libdefero", required=True)
    ap.add_argument("--peer", action="append", default=[])
    ap.add_argument("--ks", default="")
    ap.add_argument("--app", action="append", default=[])
    ap.add_argument("--replay", default="")
    ap.add_argument("--soak", default="")
    for prog in ALLOC_SCRIPTS:
        ap.add_argument(f"--{prog.replace('_', '-')}", default="", dest=prog)
    a = ap.parse_args()
    if a.scale not in SCALES:
        fail(f"--scale '{a.scale}' is not valid, accepted: {', '.join(SCALES)}")
    list_n, tree_n, reps, ks = SCALES[a.scale]
    if a.ks:
        try:
            ks = tuple(int(k) for k in a.ks.split(","))
        except ValueError:
            ks = ()
        if not ks or any(k < 0 or k > 32 for k in ks):
            fail(f"--ks '{a.ks}' is not valid, accepted: comma-separated integers from 0 to 32")
    for opt in (("plain", "plugin", "stlpatch", "libdefero") + (("clang",) if a.clang else ()) +
                (("soak",) if a.soak else ()) + tuple(p for p in ALLOC_SCRIPTS if getattr(a, p))):
        path = getattr(a, opt)
        if not os.path.isfile(path):
            fail(f"--{opt.replace('_', '-')} {path}: no such file")
    peers = []
    for spec in a.peer:
        name, sep, lib = spec.partition("=")
        if not sep or not name or not lib:
            fail(f"--peer '{spec}' is not valid, accepted: NAME=LIBRARY")
        peers.append((name, lib))
    apps = []
    for spec in a.app:
        parts = spec.split("|")
        if len(parts) not in (4, 5) or not all(parts):
            fail(f"--app '{spec}' is not valid, accepted: 'NAME|PLAIN|PLUGIN|STLPATCH[|CLANG]'")
        for path in parts[1:]:
            if not os.path.isfile(path):
                fail(f"--app {parts[0]}: {path}: no such file")
        apps.append(parts + [None] * (5 - len(parts)))

    r = Runner(a, list_n, tree_n, reps)
    rows = []  # (config label, group, kernel, result row)
    std = "^(List|Tree)/std/"

    def add(label, group, res, variant="std"):
        for kernel in PHASES:
            key = f"{kernel}/{variant}"
            if key in res:
                rows.append((label, group, kernel, res[key]))

    base = r.run("glibc (and the ideal layout)", a.plain, {}, "^(List|Tree)/(std|ideal)/")
    add("glibc", "peer", base)
    add("ideal layout", "ideal", base, "ideal")
    missing = []
    for name, lib in peers:
        if not os.path.isfile(lib):
            missing.append(name)
            continue
        add(name, "peer", r.run(name, a.plain, {"LD_PRELOAD": lib}, std))
    add("defero, preloaded (no hints)", "defero",
        r.run("defero preloaded, no hints", a.plain, {"LD_PRELOAD": a.libdefero}, std))
    if a.clang:  # the plugin's compiler without the plugin, under every peer
        add(f"glibc, {CLANG_BUILD}", "peer-clang", r.run(f"glibc, {CLANG_BUILD}", a.clang, {}, std))
        for name, lib in peers:
            if os.path.isfile(lib):
                add(f"{name}, {CLANG_BUILD}", "peer-clang",
                    r.run(f"{name}, {CLANG_BUILD}", a.clang, {"LD_PRELOAD": lib}, std))
        add(f"defero, preloaded (no hints), {CLANG_BUILD}", "defero",
            r.run(f"defero preloaded, no hints, {CLANG_BUILD}", a.clang,
                  {"LD_PRELOAD": a.libdefero}, std))
    sweep = {}  # (pred, k) -> {kernel: row}
    for pred in PREDICATES:
        for k in ks:
            res = r.run(f"defero plugin, {pred}, K={k}", a.plugin,
                        {"DEFERO_POLICY": pred, "DEFERO_K": str(k)}, std,
                        reps=None if k == 20 else 1)
            sweep[(pred, k)] = {kern: res.get(f"{kern}/std") for kern in PHASES}
            if k == 20:
                add(f"defero plugin, {pred}", "defero", res)
    add("defero stl-patch, auto", "defero", r.run("defero stl-patch (auto)", a.stlpatch, {}, std))
    res = r.run("defero::allocator (stl-patch)", a.stlpatch, {}, "^(List|Tree)/defero/.*$", reps=1)
    for key in sorted(res):
        if key.startswith("List/defero/"):
            add(f"defero::allocator {key[len('List/defero/'):]} (stl-patch)", "defero", res,
                key[len("List/"):])

    # Every allocator must compute the same thing.
    for kernel in PHASES:
        sums = {lab: row["checksum"] for lab, _, kern, row in rows if kern == kernel}
        sums.update({f"plugin {p} K={k}": v[kernel]["checksum"]
                     for (p, k), v in sweep.items() if v.get(kernel)})
        if len(set(sums.values())) != 1:
            fail(f"{kernel} checksums differ between allocators: {sums}")

    app_rows = run_apps(r, a, apps, peers, reps)
    frag_rows = run_fragmentation(r, a, apps, peers) if a.replay else []
    loc_rows, build_rows = run_locality(r, a, peers)
    soak = run_soak(r, a, peers) if a.soak else []
    alloc = run_alloc(r, a, peers)
    write_report(a, rows, sweep, ks, list_n, tree_n, reps, missing, app_rows, frag_rows,
                 loc_rows, soak, build_rows, alloc)


def run_apps(r, a, apps, peers, reps):
    """[(app, config label, group, ms, peak RSS bytes)], checksums checked
    equal per app."""
    out = []
    for name, plain, plugin, stlpatch, clang in apps:
        args = APP_ARGS[a.scale].get(name, [])
        configs = [("glibc", "peer", plain, {})]
        configs += [(p, "peer", plain, {"LD_PRELOAD": lib}) for p, lib in peers
                    if os.path.isfile(lib)]
        configs += [("defero, preloaded (no hints)", "defero", plain, {"LD_PRELOAD": a.libdefero}),
                    ("defero plugin, auto", "defero", plugin, {}),
                    # The same binary with placement off: what the hints' placement
                    # itself gains or costs each program.
                    ("defero plugin, first (no placement)", "defero", plugin,
                     {"DEFERO_POLICY": "first"}),
                    ("defero stl-patch, auto", "defero", stlpatch, {})]
        if clang:  # the plugin's compiler without the plugin, under every peer
            configs += [(f"glibc, {CLANG_BUILD}", "peer-clang", clang, {})]
            configs += [(f"{p}, {CLANG_BUILD}", "peer-clang", clang, {"LD_PRELOAD": lib})
                        for p, lib in peers if os.path.isfile(lib)]
            configs += [(f"defero, preloaded (no hints), {CLANG_BUILD}", "defero", clang,
                         {"LD_PRELOAD": a.libdefero})]
        # Round by round, every configuration once a round: a slow spell of
        # this shared machine falls on all of them alike, not on the few
        # that happened to run then (ratios to the peers stay comparable).
        sums, times, rss = {}, {c[0]: [] for c in configs}, {c[0]: 0 for c in configs}
        for _ in range(reps):
            for label, group, binary, env in configs:
                ms, checksum, peak = r.run_app(f"{name}, {label}", binary, env, args)
                times[label].append(ms)
                rss[label] = max(rss[label], peak)
                sums[label] = checksum
        for label, group, _, _ in configs:
            t = sorted(times[label])
            out.append((name, label, group, t[len(t) // 2], rss[label]))
        if len(set(sums.values())) != 1:
            fail(f"{name}: checksums differ between allocators: {sums}")
    return out


def run_fragmentation(r, a, apps, peers):
    """Traces (DEFERO_TRACE, under libdefero) of the applications, of
    programs nobody here wrote and of every process of a g++ build,
    replayed under every allocator:
    [(trace, allocator, fragmentation %)]."""
    if not os.path.isfile(a.replay):
        fail(f"--replay {a.replay}: no such file")
    work = os.path.join(a.out, "traces")
    os.makedirs(work, exist_ok=True)
    programs = [(name, [plain] + APP_ARGS[a.scale].get(name, [])) for name, plain, *_ in apps]
    # Programs nobody here wrote, one process each (a trace file belongs to
    # one process): python3, and GCC's compiler proper on a preprocessed file.
    n = 20000 if a.scale == "smoke" else 400000
    programs.append(("python3 (dicts, strings, JSON, regex)", [
        "/usr/bin/python3", "-c",
        "import json, re\n"
        f"d = {{f'k{{i}}': [i, str(i) * 3, {{'v': i}}] for i in range({n})}}\n"
        "s = sorted(d, key=lambda k: -d[k][0])\n"
        "t = json.loads(json.dumps({k: d[k] for k in s[::3]}))\n"
        "print(len(re.findall(r'k(\\d+)', ' '.join(s))), len(t))"]))
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps", "mini_compiler.cpp")
    pre = os.path.join(work, "mini_compiler.ii")
    cc1plus = subprocess.run(["g++", "-print-prog-name=cc1plus"], capture_output=True,
                             text=True).stdout.strip()
    if subprocess.run(["g++", "-std=c++20", "-E", src, "-o", pre]).returncode != 0 or \
            not os.path.isfile(cc1plus):
        fail("cannot preprocess mini_compiler.cpp with g++ for the compiler trace")
    programs.append(("cc1plus -O2 (GCC compiling mini_compiler.cpp)",
                     [cc1plus, "-quiet", "-O2", "-std=c++20", pre, "-o",
                      os.path.join(work, "mini_compiler.s")]))
    # A multi-process build: the g++ driver compiling two files (the
    # driver, then cc1plus and as for each), every process traced to a file
    # of its own (DEFERO_TRACE with %p), each replayed alone.
    apps_dir = os.path.dirname(src)
    build = ["g++", "-std=c++20", "-c"] + (
        ["-O0", os.path.join(apps_dir, "mini_compiler.cpp")] if a.scale == "smoke" else
        ["-O2", os.path.join(apps_dir, "mini_compiler.cpp"), os.path.join(apps_dir, "md_cells.cpp")])
    traces = []
    for label, cmd in programs + [(None, build)]:
        per_process = label is None
        stem = "gxx" if per_process else label.split()[0].replace("/", "_")
        path = os.path.join(work, stem + (".%p.trace" if per_process else ".trace"))
        r.count += 1
        print(f"{PROG}: [{r.count}] tracing {label or ' '.join(cmd[:4]) + ' ... (every process)'} ...",
              flush=True)
        for old in glob.glob(path.replace("%p", "*")):
            os.unlink(old)
        env = environment({"LD_PRELOAD": a.libdefero, "DEFERO_TRACE": path})
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=7200,
                           cwd=work if per_process else None)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"tracing {label or cmd[0]}: exited {p.returncode}: {last}")
        if not per_process:
            traces.append((label, path))
            continue
        # Pids in start order (no wrap-around in a short run); processes
        # with fewer than 1000 events (a linker stub, say) are left out.
        files = sorted(glob.glob(path.replace("%p", "*")),
                       key=lambda f: int(f.rsplit(".", 2)[-2]))
        if len(files) < 3:
            fail(f"tracing {' '.join(build)}: {len(files)} trace files, expected one per "
                 "process (driver, cc1plus, as)")
        for i, f in enumerate(files, 1):
            with open(f) as fh:
                events = sum(1 for line in fh if not line.startswith("#"))
            if events >= 1000:
                traces.append((f"{' '.join(build[:2] + build[3:4])} -c of "
                               f"{len(build) - 4} file(s): process {i} of {len(files)}", f))
            else:
                os.unlink(f)
    allocators = [("glibc", {})] + [(n, {"LD_PRELOAD": lib}) for n, lib in peers
                                    if os.path.isfile(lib)]
    allocators += [(f"defero {pred}", {"LD_PRELOAD": a.libdefero, "DEFERO_POLICY": pred})
                   for pred in PREDICATES]
    out = []
    for label, path in traces:
        for name, env in allocators:
            r.count += 1
            print(f"{PROG}: [{r.count}] replaying {label} under {name} ...", flush=True)
            p = subprocess.run([a.replay, path], env=environment(env), capture_output=True, text=True,
                               timeout=7200)
            if p.returncode != 0:
                last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                fail(f"replaying {label} under {name}: {last}")
            fields = dict(kv.split("=", 1) for kv in p.stdout.split() if "=" in kv)
            out.append((label, name, float(fields["fragmentation_pct"]),
                        int(fields["peak_live_bytes"]), int(fields["events"])))
        os.unlink(path) # traces are large; the table keeps what they said
    return out


# Memory over time: soak_phases (bench/soak), its allocation sizes shifting
# in phases over several threads, under every allocator. One run each (its
# figures are resident bytes, not times).
SOAK_ARGS = {"smoke": ["--threads", "2", "--phases", "6", "--ops", "200000", "--phase-mb", "16",
                       "--idle-ms", "200"],
             "full": ["--threads", "4", "--phases", "12", "--ops", "100000000",
                      "--phase-mb", "256", "--idle-ms", "1000"]}
# The footprint ceiling Defero also runs soak_phases under (DEFERO_MAX_RESIDENT).
SOAK_CEILING = {"smoke": "32M", "full": "512M"}


def run_soak(r, a, peers):
    """[(allocator, seconds, {summary key: int}, [(ms, heap bytes)])]."""
    import time
    allocators = [("glibc", {})] + [(n, {"LD_PRELOAD": lib}) for n, lib in peers
                                    if os.path.isfile(lib)]
    allocators.append(("defero", {"LD_PRELOAD": a.libdefero}))
    allocators.append((f"defero, DEFERO_MAX_RESIDENT={SOAK_CEILING[a.scale]}",
                       {"LD_PRELOAD": a.libdefero, "DEFERO_MAX_RESIDENT": SOAK_CEILING[a.scale]}))
    out = []
    for name, env in allocators:
        r.count += 1
        print(f"{PROG}: [{r.count}] soak_phases under {name} ...", flush=True)
        t0 = time.monotonic()
        p = subprocess.run([a.soak] + SOAK_ARGS[a.scale], env=environment(env),
                           capture_output=True, text=True, timeout=7200)
        secs = time.monotonic() - t0
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"soak_phases under {name}: exited {p.returncode}: {last}")
        samples, summary = [], {}
        for line in p.stdout.splitlines():
            f = line.split()
            if f and f[0] == "sample" and len(f) == 4:
                samples.append((float(f[1]), int(f[2])))
            elif f and f[0] == "soak_phases":
                summary = {k: int(v) for k, v in (x.split("=", 1) for x in f[1:])}
        if "peak_rss_bytes" not in summary or not samples:
            fail(f"soak_phases under {name}: no summary line")
        out.append((name, secs, summary, samples))
    return out


# The allocation benchmarks of bench/alloc_cost, each its own script with
# its own table, run by the report with every allocator: {program option:
# (script, title, what it measures, [arguments at each scale])}.
ALLOC_SCRIPTS = {
    "pair_cost": ("pair_cost.py", "Instructions per malloc+free pair (callgrind)",
                  "`pair_cost`, a plain C program, under each allocator preloaded: 32-byte "
                  "blocks in batches of 1000 freed in scrambled order, the loop included; "
                  "Defero's hinted columns send the hint the plugin and the stl-patch "
                  "headers send. Deterministic.",
                  {"smoke": ["--rounds", "2"], "full": []}),
    "churn_bench": ("workloads.py", "Allocation-bound workloads (`churn_bench`, preloaded)",
                    "Single-threaded churn of mixed sizes (x1, and four threads each its "
                    "own: x4), cross-thread hand-off (larson: threads free each other's "
                    "blocks), and 5-25 MiB blocks (large); the median of the runs, and "
                    "Defero's time over the best peer's (below 1 is faster).",
                    {"smoke": ["--ops", "20000", "--reps", "1"], "full": []}),
    "malloc_benchmark": ("malloc_vs_peers.py", "malloc_benchmark: Defero's throughput over each "
                         "allocator's",
                         "Google Benchmark's malloc/free pairs by size mix, batch (1: freed at "
                         "once; 1000: a batch freed in scrambled order) and threads; the same "
                         "binary calls Defero's C API and the system malloc, with each allocator "
                         "preloaded as the system malloc in turn; alternated runs, the medians. "
                         "Above 1, Defero is faster.",
                         {"smoke": ["--reps", "1", "--min-time", "0.01"], "full": []}),
}


def run_alloc(r, a, peers):
    """[(title, what, its table's Markdown lines)] of the allocation
    benchmarks given (ALLOC_SCRIPTS), each run by its own script."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "alloc_cost")
    out = []
    for opt, (script, title, what, args) in ALLOC_SCRIPTS.items():
        program = getattr(a, opt)
        if not program:
            continue
        if opt == "pair_cost" and not shutil.which("valgrind"):
            print(f"{PROG}: no valgrind: the instructions per pair are not counted", flush=True)
            out.append((title, what, ["Not counted: valgrind (callgrind) is not installed."]))
            continue
        cmd = [sys.executable, os.path.join(here, script), "--program", program,
               "--allocator", "glibc=-"]
        cmd += [x for n, lib in peers if os.path.isfile(lib) for x in ("--allocator", f"{n}={lib}")]
        if opt != "malloc_benchmark":  # (its Defero side is linked in)
            cmd += ["--allocator", f"defero={a.libdefero}"]
        r.count += 1
        print(f"{PROG}: [{r.count}] {script} ...", flush=True)
        p = subprocess.run(cmd + args[a.scale], env=environment({}), capture_output=True,
                           text=True, timeout=7200)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
            fail(f"{script}: exited {p.returncode}: {last}")
        table = [line for line in p.stdout.splitlines() if line.startswith("|")]
        if len(table) < 3:
            fail(f"{script}: no table on its output")
        out.append((title, what, table))
    return out


def alloc_section(alloc):
    lines = []
    for title, what, table in alloc:
        lines += [f"## {title}", "", what, ""] + table + [""]
    return lines


def soak_section(a, soak):
    """The report's section on soak_phases, and its plot (soak_rss.png)."""
    if not soak:
        return []
    args = " ".join(SOAK_ARGS[a.scale])
    glibc = next((s for n, _, s, _ in soak if n == "glibc"), None)
    lines = ["## Memory over time (soak_phases)", "",
             f"`soak_phases {args}`: allocation sizes shift band by band (16 B to 128 KiB), "
             "a tenth of each phase's blocks freed by another thread in the next phase, every "
             "block's contents checked when freed; the heap's resident memory (the process's, "
             "less the program's own bookkeeping) sampled over time. One run each.", "",
             "| allocator | seconds | peak resident, MB (×glibc) | after the last free, MB | "
             "after idling, MB |", "|---|---|---|---|---|"]
    for name, secs, s, _ in soak:
        ratio = f" ({s['peak_rss_bytes'] / glibc['peak_rss_bytes']:.2f})" if glibc else ""
        lines.append(f"| {name} | {secs:.1f} | {s['peak_rss_bytes'] / 1e6:.1f}{ratio} | "
                     f"{s['freed_rss_bytes'] / 1e6:.1f} | {s['idle_rss_bytes'] / 1e6:.1f} |")
    lines.append("")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return lines
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, _, _, samples in soak:
        ax.plot([t / 1000 for t, _ in samples], [b / 1e6 for _, b in samples], label=name)
    ax.set_xlabel("seconds")
    ax.set_ylabel("heap resident memory, MB")
    ax.set_title("soak_phases: resident memory over time")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "soak_rss.png"), dpi=100)
    plt.close(fig)
    return lines + ["![soak_phases resident memory](soak_rss.png)", ""]


# Locality, counted: callgrind's cache simulation (a fixed, machine-
# independent cache: 32 KiB 8-way L1d, 8 MiB 16-way last level, 64-byte
# lines) over just the traversal phases (the kernels' phase* functions).
LOCALITY_N = {"smoke": 5000, "full": 200000}
LOCALITY_PHASES = (("List for_each", "phaseListForEach", "List"),
                   ("Tree find", "phaseTreeFind", "Tree"),
                   ("Tree for_each", "phaseTreeForEach", "Tree"))
# The set's build, counted in the same runs: instructions per insert (the
# placement's cost, which the timings mix with the descent's misses).
BUILD_PHASE = ("Tree build", "phaseTreeBuild", "Tree")


def callgrind_cost(ann, events, fn):
    """The inclusive cost of fn's line in callgrind_annotate's output, as
    {event: count}; None if it has none."""
    for line in ann.splitlines():
        if f"::{fn}<" not in line:
            continue
        vals = []  # "20,005 (100.0%)" per event, "." for none
        for tok in line.split():
            if tok.startswith("("):
                continue
            if tok == "." or tok.replace(",", "").isdigit():
                vals.append(0 if tok == "." else int(tok.replace(",", "")))
            if len(vals) == len(events) or not (tok == "." or tok[0].isdigit()):
                break
        if len(vals) == len(events):
            return dict(zip(events, vals))
    return None


def run_locality(r, a, peers):
    """([(config, phase label, D1 misses per node, LL misses per node)],
    [(config, instructions per insert of the set's build)])."""
    import shutil
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        print(f"{PROG}: valgrind is missing: no cache-miss counts", file=sys.stderr)
        return [], []
    n = LOCALITY_N[a.scale]
    configs = [("glibc", a.plain, {}, "std"), ("ideal layout", a.plain, {}, "ideal")]
    configs += [(p, a.plain, {"LD_PRELOAD": lib}, "std") for p, lib in peers if os.path.isfile(lib)]
    configs += [("defero, preloaded (no hints)", a.plain, {"LD_PRELOAD": a.libdefero}, "std"),
                ("defero plugin, auto", a.plugin, {}, "std")]
    # The build's instructions on the plugin's compiler too (a descent
    # compiled by g++ costs other instructions than clang++-19's).
    if a.clang:
        configs += [(f"glibc, {CLANG_BUILD}", a.clang, {}, "std"),
                    (f"defero, preloaded (no hints), {CLANG_BUILD}", a.clang,
                     {"LD_PRELOAD": a.libdefero}, "std")]
    out, build = [], []
    for label, binary, env, variant in configs:
        for kernel in ("List", "Tree"):
            if label.endswith(CLANG_BUILD) and kernel == "List":
                continue
            r.count += 1
            print(f"{PROG}: [{r.count}] callgrind, {kernel} kernel, {label} ...", flush=True)
            with tempfile.TemporaryDirectory() as d:
                cg = os.path.join(d, "callgrind.out")
                cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--D1=32768,8,64",
                       "--I1=32768,8,64", "--LL=8388608,16,64", f"--callgrind-out-file={cg}"]
                cmd += [f"--toggle-collect=*{fn}*" for _, fn, k in LOCALITY_PHASES + (BUILD_PHASE,)
                        if k == kernel]
                cmd += [binary, f"--list-n={n}", f"--tree-n={n}",
                        f"--benchmark_filter=^{kernel}/{variant}/", "--benchmark_min_time=0.0001"]
                p = subprocess.run(cmd, env=environment(env), capture_output=True, text=True, timeout=7200)
                if p.returncode != 0:
                    last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                    fail(f"callgrind, {kernel}, {label}: exited {p.returncode}: {last}")
                ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", cg],
                                     capture_output=True, text=True).stdout
            events = []
            for line in ann.splitlines():
                if line.startswith("Events shown:"):
                    events = line.split(":", 1)[1].split()
            if kernel == BUILD_PHASE[2]:
                cost = callgrind_cost(ann, events, BUILD_PHASE[1])
                if not cost or "Ir" not in cost:
                    fail(f"callgrind, {label}: no instruction count for {BUILD_PHASE[1]}")
                build.append((label, cost["Ir"] / n))
            for phase, fn, k in LOCALITY_PHASES:
                if k != kernel or label.endswith(CLANG_BUILD):
                    continue
                cost = callgrind_cost(ann, events, fn)
                if not cost or "D1mr" not in cost:
                    fail(f"callgrind, {label}: no cache counts for {fn}")
                # Read and write misses: for_each's ++x is a read-modify-write,
                # which callgrind counts as a write.
                out.append((label, phase, (cost["D1mr"] + cost.get("D1mw", 0)) / n,
                            (cost.get("DLmr", 0) + cost.get("DLmw", 0)) / n))
    return out, build


def ratio(x, y):
    return x / y if y else float("inf")


def write_report(a, rows, sweep, ks, list_n, tree_n, reps, missing, app_rows, frag_rows,
                 loc_rows, soak, build_rows, alloc):
    os.makedirs(a.out, exist_ok=True)
    get = {(lab, kern): row for lab, _, kern, row in rows}
    peers = [lab for lab, grp, kern, _ in rows if grp == "peer" and kern == "List"]
    lines = [
        "# Defero benchmark report",
        "",
        f"Scale `{a.scale}`: list kernel {list_n:,} nodes, tree kernel {tree_n:,} nodes, "
        f"{'median of %d runs per configuration (one run per point of the K sweep other than K=20, and per defero::allocator variant)' % reps if reps > 1 else 'one run per configuration'}. "
        "Times are nanoseconds per node of each phase (lower is better); every configuration "
        "computed the same checksums.",
        "",
    ] + versions(a) + [""]
    if missing:
        lines += [f"Not measured (library not found): {', '.join(missing)}.", ""]
    for kernel, phases in PHASES.items():
        lines += [f"## {kernel} kernel", "",
                  "| configuration | " + " | ".join(phases) + " | total |",
                  "|---|" + "---|" * (len(phases) + 1)]
        ideal = get.get(("ideal layout", kernel), {})
        glibc = get.get(("glibc", kernel), {})
        for lab, _, kern, row in rows:
            if kern != kernel:
                continue
            total = sum(row.get(ph, 0) for ph in phases)
            lines.append(f"| {lab} | " + " | ".join(f"{row.get(ph, 0):.1f}" for ph in phases) +
                         f" | {total:.1f} |")
        lines += ["", f"Against glibc (glibc's time / this one's: above 1 is faster) and against "
                  "the ideal layout (this one's time / ideal's: 1 is the physical limit):", "",
                  "| configuration | " + " | ".join(f"{ph} ×glibc" for ph in phases[1:3]) + " | " +
                  " | ".join(f"{ph} ÷ideal" for ph in phases[1:3]) + " |",
                  "|---|" + "---|" * 4]
        for lab, _, kern, row in rows:
            if kern != kernel:
                continue
            lines.append(f"| {lab} | " +
                         " | ".join(f"{ratio(glibc.get(ph, 0), row.get(ph, 0)):.2f}" for ph in phases[1:3]) +
                         " | " +
                         " | ".join(f"{ratio(row.get(ph, 0), ideal.get(ph, 0)):.2f}" for ph in phases[1:3]) +
                         " |")
        lines.append("")

    # The product's goals, for Defero's default configuration (the plugin's
    # hints, policy auto, K=20) against the best peer and the ideal layout.
    # The peers' g++ build, and (when measured) their clang++-19 build: the
    # plugin build is clang's code, whose tree descent alone is faster.
    clang_peers = [lab for lab, grp, kern, _ in rows if grp == "peer-clang" and kern == "List"]

    def best_peer(kernel, ph, among=None):
        vals = [get[(p, kernel)].get(ph, 0) for p in (among or peers) if (p, kernel) in get]
        return min(vals) if vals else 0

    d = "defero plugin, auto"
    same = " on the same compiler (the peers' clang++-19 build)"
    compilers = [("", peers)] + ([(same, clang_peers)] if clang_peers else [])
    goals = []
    for kernel, trav in (("List", "for_each"), ("Tree", "for_each")):
        row = get.get((d, kernel), {})
        ideal = get.get(("ideal layout", kernel), {})
        goals.append((f"{kernel} traversal ≤ 1.5× the ideal layout",
                      ratio(row.get(trav, 0), ideal.get(trav, 0)), "≤", 1.5))
        for text, among in compilers:
            goals.append((f"{kernel} traversal ≥ 4× faster than the best peer{text}",
                          ratio(best_peer(kernel, trav, among), row.get(trav, 0)), "≥", 4.0))
    row = get.get((d, "Tree"), {})
    for text, among in compilers:
        goals.append((f"set find ≥ 1.25× faster than the best peer{text}",
                      ratio(best_peer("Tree", "find", among), row.get("find", 0)), "≥", 1.25))
    for kernel in PHASES:
        row = get.get((d, kernel), {})
        for text, among in compilers:
            goals.append((f"{kernel} build ≤ 1.3× the best peer's time{text}",
                          ratio(row.get("build", 0), best_peer(kernel, "build", among)), "≤", 1.3))
    if app_rows:
        lines += ["## Applications", "",
                  "Milliseconds per run (glibc's time / this one's in brackets: above 1 is faster; the median of the runs); "
                  "every configuration printed the same checksum.", "",
                  "| configuration | " + " | ".join(sorted({n for n, *_ in app_rows})) + " |",
                  "|---|" + "---|" * len({n for n, *_ in app_rows})]
        names = sorted({n for n, *_ in app_rows})
        labels = []
        for _, lab, *_ in app_rows:
            if lab not in labels:
                labels.append(lab)
        t = {(n, lab): ms for n, lab, _, ms, _ in app_rows}
        rss = {(n, lab): peak for n, lab, _, _, peak in app_rows}
        for lab in labels:
            cells = []
            for n in names:
                ms = t.get((n, lab))
                cells.append("—" if ms is None else f"{ms:.0f} ({ratio(t.get((n, 'glibc'), 0), ms):.2f})")
            lines.append(f"| {lab} | " + " | ".join(cells) + " |")
        lines += ["", "Peak resident memory, MB (its ratio to glibc's in brackets):", "",
                  "| configuration | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for lab in labels:
            lines.append(f"| {lab} | " + " | ".join(
                "—" if (n, lab) not in rss else
                f"{rss[(n, lab)] / 1e6:.1f} ({ratio(rss[(n, lab)], rss.get((n, 'glibc'), 0)):.2f})"
                for n in names) + " |")
        lines.append("")
        for n in names:
            peer_best = min((ms for nn, lab, grp, ms, _ in app_rows if nn == n and grp == "peer"),
                            default=0)
            goals.append((f"{n} ≥ 1.15× faster than the best peer",
                          ratio(peer_best, t.get((n, d), 0)), "≥", 1.15))
            clang_best = min((ms for nn, lab, grp, ms, _ in app_rows
                              if nn == n and grp == "peer-clang"), default=0)
            if clang_best:
                goals.append((f"{n} ≥ 1.15× faster than the best peer on the same compiler "
                               f"(its {CLANG_BUILD})",
                               ratio(clang_best, t.get((n, d), 0)), "≥", 1.15))
            goals.append((f"{n}, stl-patch (g++) ≥ 1.15× faster than the best peer",
                          ratio(peer_best, t.get((n, "defero stl-patch, auto"), 0)), "≥", 1.15))
            goals.append((f"{n} peak RSS ≤ 1.15× glibc's",
                          ratio(rss.get((n, d), 0), rss.get((n, "glibc"), 0)), "≤", 1.15))
    if frag_rows:
        traces, allocs = [], []
        for tr, al, *_ in frag_rows:
            traces += [tr] if tr not in traces else []
            allocs += [al] if al not in allocs else []
        f = {(tr, al): pct for tr, al, pct, _, _ in frag_rows}
        info = {tr: (live, ev) for tr, _, _, live, ev in frag_rows}
        lines += ["## Fragmentation (trace replay)", "",
                  "Johnstone's measure: peak memory the allocator used (peak RSS of the replay) over "
                  "the peak of live requested bytes, minus one, in percent; every block is written, "
                  "so its pages count.", "",
                  "| trace (events, peak live) | " + " | ".join(allocs) + " |",
                  "|---|" + "---|" * len(allocs)]
        for tr in traces:
            live, ev = info[tr]
            lines.append(f"| {tr} ({ev:,}, {live / 1e6:.1f} MB) | " +
                         " | ".join(f"{f[(tr, al)]:.1f}" for al in allocs) + " |")
        means = {al: sum(f[(tr, al)] for tr in traces) / len(traces) for al in allocs}
        lines.append("| **mean** | " + " | ".join(f"**{means[al]:.1f}**" for al in allocs) + " |")
        lines.append("")
        goals.append(("fragmentation ≤ 5% on average over the traces (defero auto)",
                      means.get("defero auto", float("inf")), "≤", 5.0))
    lines += ["## Goals (Defero plugin, policy auto, K=20)", "",
              "| goal | measured | met |", "|---|---|---|"]
    for text, value, op, bound in goals:
        met = value <= bound if op == "≤" else value >= bound
        lines.append(f"| {text} | {value:.2f} | {'yes' if met else '**no**'} |")
    lines.append("")
    if loc_rows:
        phases = [p for p, _, _ in LOCALITY_PHASES]
        labels = []
        for lab, *_ in loc_rows:
            labels += [lab] if lab not in labels else []
        c = {(lab, ph): (d1, ll) for lab, ph, d1, ll in loc_rows}
        lines += ["## Cache misses of the traversal phases (callgrind)", "",
                  f"{LOCALITY_N[a.scale]:,} nodes, after the same warm-up and build as above; "
                  "simulated 32 KiB 8-way L1d and 8 MiB 16-way last level, 64-byte lines; data "
                  "misses (read and write) per node, L1d / last level (deterministic: no timing).", "",
                  "| configuration | " + " | ".join(phases) + " |", "|---|" + "---|" * len(phases)]
        for lab in labels:
            lines.append(f"| {lab} | " + " | ".join(
                f"{c[(lab, ph)][0]:.2f} / {c[(lab, ph)][1]:.2f}" if (lab, ph) in c else "—"
                for ph in phases) + " |")
        lines.append("")
    if build_rows:
        lines += ["## Instructions per insert of the set's build (callgrind)", "",
                  f"{LOCALITY_N[a.scale]:,} random inserts into a set, after the same warm-up, "
                  "counted by callgrind in the same runs (`phaseTreeBuild`, everything it calls: "
                  "libstdc++'s descent and rebalancing, and the allocation with its placement). "
                  "Deterministic: what the timings of the build mix with its cache misses.", "",
                  "| configuration | instructions per insert |", "|---|---|"]
        lines += [f"| {lab} | {ir:.0f} |" for lab, ir in build_rows]
        lines.append("")

    lines += soak_section(a, soak)
    lines += alloc_section(alloc)
    lines += hw_counter_section(rows)
    plots = plot(a.out, sweep, ks, get, peers)
    if plots:
        lines += ["## Time against K", ""] + [f"![{t}]({f})" for t, f in plots] + [""]
    path = os.path.join(a.out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{PROG}: wrote {path} with {len(plots)} plots")


def hw_counter_section(rows):
    """The traversal phases' hardware cache misses, as the kernels counted
    them with perf_event_open, or why there are none."""
    lines = ["## Hardware cache misses (perf_event_open)", ""]
    counted = [(lab, kern, row) for lab, _, kern, row in rows if row.get("hw_counters")]
    if not counted:
        why = "the kernels could not open the hardware cache events"
        try:
            p = subprocess.run(["perf", "stat", "-x", ",", "-e", "cache-misses", "true"],
                               capture_output=True, text=True, timeout=60)
            if "not supported" in p.stderr:
                why += " (`perf stat -e cache-misses` reports them <not supported> here too)"
        except (OSError, subprocess.TimeoutExpired):
            why += " (and `perf` is not installed to ask)"
        return lines + [f"Not counted on this machine: {why}. The callgrind counts above "
                        "stand in for them.", ""]
    phases = [("List", "for_each"), ("Tree", "find"), ("Tree", "for_each")]
    c = {(lab, kern): row for lab, kern, row in counted}
    labels = []
    for lab, _, _ in counted:
        labels += [lab] if lab not in labels else []
    lines += ["Data misses per node in the timed phase, L1d reads / last level, counted by "
              "the machine (the same runs as the tables above).", "",
              "| configuration | " + " | ".join(f"{k} {ph}" for k, ph in phases) + " |",
              "|---|" + "---|" * len(phases)]
    for lab in labels:
        cells = []
        for kern, ph in phases:
            row = c.get((lab, kern), {})
            cells.append("—" if f"{ph}_l1d_misses" not in row else
                         f"{row[f'{ph}_l1d_misses']:.2f} / {row[f'{ph}_ll_misses']:.2f}")
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    return lines + [""]


def plot(out, sweep, ks, get, peers):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{PROG}: python3-matplotlib is missing: no plots", file=sys.stderr)
        return []
    made = []
    for kernel, ph in (("List", "for_each"), ("List", "sort"), ("Tree", "find"), ("Tree", "for_each")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for pred in PREDICATES:
            ys = [sweep[(pred, k)][kernel][ph] for k in ks if sweep.get((pred, k), {}).get(kernel)]
            if len(ys) == len(ks):
                ax.plot(ks, ys, marker="o", label=f"defero {pred}")
        for i, lab in enumerate(peers + ["ideal layout"]):
            row = get.get((lab, kernel))
            if row and ph in row:
                ax.axhline(row[ph], linestyle="--" if lab != "ideal layout" else ":",
                           color=f"C{4 + i}", label=lab)
        ax.set_xlabel("K (K-class = 2^(32-K) bytes)")
        ax.set_ylabel("ns per node")
        ax.set_title(f"{kernel} kernel: {ph}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"{kernel.lower()}_{ph}.png"
        fig.savefig(os.path.join(out, name), dpi=100)
        plt.close(fig)
        made.append((f"{kernel} {ph}", name))
    return made


if __name__ == "__main__":
    main()
