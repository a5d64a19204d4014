"""Compile time of npudist._C in compiler CPU seconds: unity chunks vs units alone (vs a PCH).

Reads the compiler and flags torch's BuildExtension wrote into ``build/temp.*/build.ninja`` (run
``./run.sh setup`` or ``./run.sh build`` first), then compiles, one at a time, into a scratch
directory with ccache disabled (CCACHE_DISABLE=1), in the modes asked for, interleaved:

- ``unity``: the translation units the default build compiles (csrc_unity.py: the units of one
  layer grouped into a few generated ``unity_<layer>_<k>.cpp``, plus units compiled alone);
- ``units``: every .cpp under csrc/ as its own translation unit (``NPUDIST_BUILD_UNITY=0``, the
  build before the unity build);
- ``pch``: every .cpp alone with ``-include`` of a GCC precompiled header of csrc/precompiled.h
  (as ``NPUDIST_BUILD_PCH=1`` builds it, with ``NPUDIST_BUILD_UNITY=0``); the .gch is timed too.

Then it links the objects of each mode once (``c++ -shared`` against torch's libraries) and
prints, per mode, the sum of CPU seconds and the estimate of a quiet cold build at ``--jobs``
parallel compiles: the compile jobs scheduled as ninja runs them (in build order, each on the
first free job), plus the link. Times are the compiler's CPU seconds (user + system, from
``getrusage`` of the child), which a busy shared machine stretches far less than wall time; on a
quiet machine a job's wall time is its CPU time.

``--whole`` instead runs the real build (``setup.py build_ext``, MAX_JOBS=``--jobs``) into scratch
build directories and reports its CPU seconds (every child: compiles, link, Python) and wall time
with ccache off, through a cold ccache (an empty CCACHE_DIR) and a warm one (the same again), and
then the incremental rebuild after touching ``--touch`` (default a kernel file).

    python benchmarks/build_time.py [--modes unity,units] [--only REGEX] [--repeat 1] [--jobs 2]
                                    [--json benchmarks/results/build_time.json]
    python benchmarks/build_time.py --whole [--touch csrc/core/aten/half_gemm.cpp] [--jobs 2]

``--modes unity,units`` takes about 10 minutes of CPU (unity ~3, units ~7); ``--whole`` about 8.
"""
import argparse
import glob
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time

from _results import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
import csrc_unity  # noqa: E402  (after the repository is on sys.path)
from csrc_includes import includes_heavy_headers  # noqa: E402  (after the repository is on sys.path)

PCH_FLAGS = ("-Winvalid-pch", "-fpch-preprocess")


def read_ninja(path):
    """(cxx argv, cflags, post_cflags) from torch's build.ninja."""
    variables = {}
    for line in open(path):
        m = re.match(r"^(cxx|cflags|post_cflags) = (.*)$", line.rstrip("\n"))
        if m:
            variables[m.group(1)] = m.group(2)
    missing = {"cxx", "cflags", "post_cflags"} - variables.keys()
    if missing:
        raise SystemExit(f"{path}: no {sorted(missing)} line; was it written by torch's BuildExtension?")
    return shlex.split(variables["cxx"]), shlex.split(variables["cflags"]), shlex.split(variables["post_cflags"])


def strip_pch(flags):
    """``flags`` without ``-include <npudist_pch.h>`` and the PCH-only flags."""
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
            continue
        if f == "-include":
            skip = True
            continue
        if f not in PCH_FLAGS:
            out.append(f)
    return out


def cpu_of(cmd, env=None, cwd=None):
    """(CPU seconds, wall seconds) of running ``cmd`` (user + system of it and its waited-for
    children): unlike wall time, barely stretched by other jobs on a shared machine (cache and
    memory-bandwidth contention remain)."""
    env = env or dict(os.environ, CCACHE_DISABLE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"failed:\n{shlex.join(cmd)}\n{(r.stderr or r.stdout)[-3000:]}")
    if ".gch" in r.stderr:  # -Winvalid-pch: GCC says why it did not use the header
        raise SystemExit(f"GCC rejected the precompiled header:\n{r.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def schedule(costs, jobs):
    """Makespan of running ``costs`` in order on ``jobs`` workers, each job taking the next
    compile when it is free (ninja's order is the build file's: the sources as setup.py lists them)."""
    free = [0.0] * max(1, jobs)
    for c in costs:
        i = free.index(min(free))
        free[i] += c
    return max(free)


def link_command(cxx, objects, out):
    from torch.utils.cpp_extension import library_paths

    return [*cxx, "-shared", *objects, *(f"-L{p}" for p in library_paths()), "-lc10", "-ltorch", "-ltorch_cpu",
            "-ltorch_python", "-o", out]


def per_unit(args, ninja):
    cxx, cflags, post = read_ninja(ninja)
    if os.path.basename(cxx[0]) in ("ccache", "sccache"):  # torch prefixes ccache when installed
        cxx = cxx[1:]
    post = strip_pch(post)
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("unity", "units", "pch"):
            raise SystemExit(f"--modes: unknown mode {m!r}; use unity, units and/or pch")
    os.chdir(REPO)
    units = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
    results = {"ninja": ninja, "compiler": subprocess.run([*cxx, "--version"], capture_output=True,
                                                          text=True).stdout.splitlines()[0],
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load_avg_start": os.getloadavg(),
               "jobs": args.jobs, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="npudist-build-time-") as tmp:
        chunks = csrc_unity.plan(units)
        unity_sources = csrc_unity.write(chunks, os.path.join(tmp, "unity"))
        members = {src: m for src, (_, m) in zip(unity_sources, chunks, strict=True)}
        header = os.path.join(tmp, "npudist_pch.h")
        with open(header, "w") as f:
            f.write(f'#include "{os.path.join(REPO, "csrc", "precompiled.h")}"\n')
        jobs = {"unity": [(s, post) for s in unity_sources], "units": [(s, post) for s in units],
                "pch": [(s, [*post, "-include", header, "-Winvalid-pch"] if includes_heavy_headers(s) else post)
                        for s in units]}
        if args.only:
            jobs = {m: [(s, f) for s, f in js if re.search(args.only, s) or
                        any(re.search(args.only, u) for u in members.get(s, []))] for m, js in jobs.items()}
        if "pch" in modes:
            gch_cmd = [*cxx, *cflags, "-x", "c++-header", header, "-o", header + ".gch", *post]
            results["pch_build_s"] = min(cpu_of(gch_cmd)[0] for _ in range(args.repeat))
            print(f"precompiled header: {results['pch_build_s']:.1f} s CPU", flush=True)
        rows = {m: [] for m in modes}
        # interleaved: the i-th compile of every mode, then the next, so all modes see the same load
        for i in range(max(len(jobs[m]) for m in modes)):
            for m in modes:
                if i >= len(jobs[m]):
                    continue
                src, flags = jobs[m][i]
                obj = os.path.join(tmp, m, f"{i}.o")
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                cmd = [*cxx, *cflags, "-c", src, "-o", obj, *flags]
                cpu = min(cpu_of(cmd)[0] for _ in range(args.repeat))
                name = os.path.basename(src) if src.startswith(tmp) else os.path.relpath(src, "csrc")
                row = {"unit": name, "cpu_s": cpu, "object": obj,
                       "members": [os.path.relpath(u, "csrc") for u in members.get(src, [src])]}
                rows[m].append(row)
                print(f"{m:6} {name:44} {cpu:7.1f} s" + (f"  ({len(row['members'])} units)"
                                                        if len(row["members"]) > 1 else ""), flush=True)
        for m in modes:
            link_s = None
            if not args.only:
                link_s = cpu_of(link_command(cxx, [r["object"] for r in rows[m]], os.path.join(tmp, m, "_C.so")))[0]
            total = sum(r["cpu_s"] for r in rows[m])
            est = schedule([r["cpu_s"] for r in rows[m]], args.jobs) + (link_s or 0.0) + (
                results.get("pch_build_s", 0.0) if m == "pch" else 0.0)
            for r in rows[m]:
                r.pop("object")
            results["modes"][m] = {"translation_units": len(rows[m]), "sum_s": total, "link_s": link_s,
                                   "cold_build_estimate_s": est, "rows": rows[m]}
    results["load_avg_end"] = os.getloadavg()
    print("-" * 78)
    print(f"{'mode':6} {'TUs':>4} {'sum of compiles':>16} {'link':>6} {f'cold build at {args.jobs} jobs':>22}")
    for m in modes:
        r = results["modes"][m]
        link = f"{r['link_s']:6.1f}" if r["link_s"] is not None else "     -"
        print(f"{m:6} {r['translation_units']:4d} {r['sum_s']:14.1f} s {link} {r['cold_build_estimate_s']:20.1f} s")
    if "unity" in modes and "units" in modes:
        ratio = results["modes"]["units"]["cold_build_estimate_s"] / results["modes"]["unity"]["cold_build_estimate_s"]
        results["units_over_unity"] = ratio
        print(f"units alone / unity: {ratio:.2f}x (cold build estimate)")
    print(f"load average {results['load_avg_start']} -> {results['load_avg_end']} on {os.cpu_count()} cores "
          "(CPU seconds; a busy machine still stretches them somewhat)")
    return results


def whole(args):
    """The real build, timed as a whole, ccache off / cold / warm, then one incremental rebuild."""
    py = sys.executable
    touch = os.path.join(REPO, args.touch)
    if not os.path.exists(touch):
        raise SystemExit(f"--touch {args.touch}: no such file under {REPO}")
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load_avg_start": os.getloadavg(),
               "jobs": args.jobs, "unity": os.environ.get("NPUDIST_BUILD_UNITY", "1"), "builds": []}
    with tempfile.TemporaryDirectory(prefix="npudist-build-whole-") as tmp:
        ccache_dir = os.path.join(tmp, "ccache")
        base = {k: v for k, v in os.environ.items() if not k.startswith("CCACHE_")}
        base.update(MAX_JOBS=str(args.jobs), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        no_cc = dict(base, CCACHE_DISABLE="1", TORCH_NO_COMPILER_WRAPPER="1",
                     PATH=os.pathsep.join(p for p in base.get("PATH", "").split(os.pathsep) if "ccache" not in p))
        with_cc = dict(base, CCACHE_DIR=ccache_dir, PATH="/usr/lib/ccache" + os.pathsep + base.get("PATH", ""))

        def build(label, env, build_dir):
            cmd = [py, "setup.py", "-q", "build_ext", "--build-temp", os.path.join(build_dir, "temp"),
                   "--build-lib", os.path.join(build_dir, "lib")]
            cpu, wall = cpu_of(cmd, env=env, cwd=REPO)
            results["builds"].append({"build": label, "cpu_s": cpu, "wall_s": wall})
            print(f"{label:44} {cpu:7.1f} s CPU {wall:7.1f} s wall", flush=True)

        build("cold, ccache off", no_cc, os.path.join(tmp, "off"))
        build("cold, ccache cold (empty cache)", with_cc, os.path.join(tmp, "cc1"))
        build("cold build dir, ccache warm", with_cc, os.path.join(tmp, "cc2"))
        os.utime(touch)
        build(f"incremental: touched {args.touch} (ccache off)", no_cc, os.path.join(tmp, "off"))
    results["load_avg_end"] = os.getloadavg()
    print(f"load average {results['load_avg_start']} -> {results['load_avg_end']} on {os.cpu_count()} cores; "
          f"a quiet machine's wall time is about CPU / {args.jobs} for the compiles")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ninja", help="build.ninja to read (default: the newest build/temp.*/build.ninja)")
    ap.add_argument("--modes", default="unity,units", help="comma list of unity, units, pch (default unity,units)")
    ap.add_argument("--only", help="regex: time only the translation units whose sources (or members) match")
    ap.add_argument("--repeat", type=int, default=1, help="compiles per translation unit and mode; the best is kept")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles (MAX_JOBS) of the estimate / build")
    ap.add_argument("--whole", action="store_true", help="time the real build: ccache off, cold, warm; incremental")
    ap.add_argument("--touch", default="csrc/core/aten/half_gemm.cpp", help="file touched for the incremental build")
    ap.add_argument("--json", default=os.path.join(REPO, "benchmarks", "results", "build_time.json"))
    args = ap.parse_args()
    if args.whole:
        write_json(args.json, whole(args))
        return
    ninja = args.ninja or max(glob.glob(os.path.join(REPO, "build", "temp.*", "build.ninja")),
                              key=os.path.getmtime, default=None)
    if not ninja or not os.path.exists(ninja):
        raise SystemExit("no build.ninja: run ./run.sh setup (or ./run.sh build) first, or pass --ninja")
    write_json(args.json, per_unit(args, ninja))


if __name__ == "__main__":
    main()
