"""Compile time of each unit of npudist._C alone, with and without the precompiled header.

Reads the compile commands torch's BuildExtension wrote into ``build/temp.*/build.ninja`` (run
``./run.sh setup`` or ``./run.sh build`` first), then compiles every unit by itself, one at a
time, into a scratch directory with ccache disabled (CCACHE_DISABLE=1), in two modes side by
side, interleaved unit by unit:

- ``pch``: with ``-include`` of a GCC precompiled header of csrc/precompiled.h, built here with
  the units' flags as setup.py builds it under NPUDIST_BUILD_PCH=1;
- ``nopch``: the command without it (the default build).

(With NPUDIST_BUILD_PCH=1 setup.py gives the PCH only to units that include torch, ATen,
pybind11 or Python headers; the ``built`` column says which way such a build compiles each unit,
and the "PCH build" line sums that.)

It also times building the .gch itself. Prints one row per unit (seconds, ratio, whether the unit
includes torch/ATen/c10/pybind11 headers), the sums, and an estimate of the cold build at
``--jobs`` parallel compiles (sum / jobs, plus the .gch in pch mode; the link is not counted),
and writes JSON. Times are the compiler's CPU seconds (user + system), which a busy shared
machine stretches far less than wall time; the interleaving keeps both modes under the same
load, so read the ratio. On a quiet machine a unit's wall time is its CPU time.

    python benchmarks/build_time.py [--only REGEX] [--modes pch,nopch] [--repeat 1] [--jobs 2]
                                    [--json benchmarks/results/build_time.json]

A full run (68 units, both modes) takes about 15 minutes on a quiet 2-core machine.
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from csrc_includes import includes_heavy_headers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PCH_FLAGS = ("-Winvalid-pch", "-fpch-preprocess")


def read_ninja(path):
    """(cxx argv, cflags, post_cflags, [(object, source)]) from torch's build.ninja."""
    variables, builds = {}, []
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(cxx|cflags|post_cflags) = (.*)$", line)
        if m:
            variables[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^build (\S+\.o): compile (\S+)$", line)
        if m:
            builds.append((m.group(1), m.group(2)))
    missing = {"cxx", "cflags", "post_cflags"} - variables.keys()
    if missing:
        raise SystemExit(f"{path}: no {sorted(missing)} line; was it written by torch's BuildExtension?")
    return (shlex.split(variables["cxx"]), shlex.split(variables["cflags"]), shlex.split(variables["post_cflags"]),
            builds)


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


def uses_torch(source):
    text = open(source, errors="replace").read()
    return bool(re.search(r"#include\s*[<\"](torch|ATen|c10|pybind11|Python)[/.]", text))


def compile_once(cmd):
    """CPU seconds (user + system) of the compiler running ``cmd``: unlike wall time, barely
    stretched by other jobs on a shared machine (cache and memory-bandwidth contention remain)."""
    env = dict(os.environ, CCACHE_DISABLE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"compile failed:\n{shlex.join(cmd)}\n{r.stderr[-3000:]}")
    if ".gch" in r.stderr:  # -Winvalid-pch: GCC says why it did not use the header
        raise SystemExit(f"GCC rejected the precompiled header:\n{r.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ninja", help="build.ninja to read (default: the newest build/temp.*/build.ninja)")
    ap.add_argument("--only", help="regex: time only the units whose source path matches")
    ap.add_argument("--modes", default="pch,nopch", help="comma list of pch, nopch (default both)")
    ap.add_argument("--repeat", type=int, default=1, help="compiles per unit and mode; the best is kept")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles assumed by the cold-build estimate")
    ap.add_argument("--json", default=os.path.join(REPO, "benchmarks", "results", "build_time.json"))
    args = ap.parse_args()

    ninja = args.ninja or max(glob.glob(os.path.join(REPO, "build", "temp.*", "build.ninja")),
                              key=os.path.getmtime, default=None)
    if not ninja or not os.path.exists(ninja):
        raise SystemExit("no build.ninja: run ./run.sh setup (or ./run.sh build) first, or pass --ninja")
    cxx, cflags, post, builds = read_ninja(ninja)
    # setup.py compiles the units that include nothing heavier than c10 without the PCH, in their
    # own ninja build (build_temp/light): same flags otherwise.
    light_ninja = os.path.join(os.path.dirname(ninja), "light", "build.ninja")
    if os.path.exists(light_ninja):
        builds = sorted(builds + read_ninja(light_ninja)[3], key=lambda b: b[1])
    # torch prefixes ccache when it is installed; time the compiler itself.
    if os.path.basename(cxx[0]) in ("ccache", "sccache"):
        cxx = cxx[1:]
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("pch", "nopch"):
            raise SystemExit(f"--modes: unknown mode {m!r}; use pch and/or nopch")
    if args.only:
        builds = [(o, s) for o, s in builds if re.search(args.only, s)]
    results = {"units": [], "ninja": ninja, "compiler": subprocess.run([*cxx, "--version"], capture_output=True,
                                                                        text=True).stdout.splitlines()[0],
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load_avg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="npudist-build-time-") as tmp:
        # the PCH setup.py builds with NPUDIST_BUILD_PCH=1, built here the same way (whichever way
        # the tree was built): a wrapper of csrc/precompiled.h, the units' flags, the .gch beside it
        header = os.path.join(tmp, "npudist_pch.h")
        with open(header, "w") as f:
            f.write(f'#include "{os.path.join(REPO, "csrc", "precompiled.h")}"\n')
        pch_flags = [*strip_pch(post), "-include", header, "-Winvalid-pch"]
        if "pch" in modes:
            gch_cmd = [*cxx, *cflags, "-x", "c++-header", header, "-o", header + ".gch", *strip_pch(post)]
            results["pch_build_s"] = min(compile_once(gch_cmd) for _ in range(args.repeat))
            print(f"precompiled header: {results['pch_build_s']:.1f} s CPU", flush=True)
        print(f"{'unit':48} {'torch':>5} {'built':>5} " + " ".join(f"{m + ' cpu s':>11}" for m in modes)
              + ("   ratio" if len(modes) == 2 else ""), flush=True)
        for _, source in builds:
            row = {"unit": os.path.relpath(source, REPO), "torch_headers": uses_torch(source),
                   "built_with": "pch" if includes_heavy_headers(source) else "plain"}
            for m in modes:
                flags = pch_flags if m == "pch" else strip_pch(post)
                cmd = [*cxx, *cflags, "-c", source, "-o", os.path.join(tmp, "unit.o"), *flags]
                row[m] = min(compile_once(cmd) for _ in range(args.repeat))
            ratio = row["nopch"] / row["pch"] if len(modes) == 2 else None
            print(f"{row['unit']:48} {'yes' if row['torch_headers'] else 'no':>5} {row['built_with']:>5} "
                  + " ".join(f"{row[m]:11.1f}" for m in modes) + (f" {ratio:7.2f}x" if ratio else ""), flush=True)
            results["units"].append(row)
    results["load_avg_end"] = os.getloadavg()
    print("-" * 72)
    for m in modes:
        total = sum(r[m] for r in results["units"])
        est = total / args.jobs + (results.get("pch_build_s", 0.0) if m == "pch" else 0.0)
        results[f"{m}_sum_s"] = total
        results[f"{m}_cold_build_estimate_s"] = est
        print(f"{m:6}: sum of {len(results['units'])} units {total:7.1f} s; cold build at {args.jobs} jobs "
              f"~{est:6.1f} s" + (" (incl. the .gch, which builds first)" if m == "pch" else ""))
    if len(modes) == 2 and results["units"]:
        built = sum(r["pch"] if r["built_with"] == "pch" else r["nopch"] for r in results["units"])
        results["as_built_sum_s"] = built
        results["as_built_cold_build_estimate_s"] = built / args.jobs + results.get("pch_build_s", 0.0)
        print(f"PCH build (NPUDIST_BUILD_PCH=1: PCH for the units with torch/ATen/pybind11/Python headers): sum "
              f"{built:7.1f} s; cold build ~{results['as_built_cold_build_estimate_s']:6.1f} s; default (no PCH) / PCH "
              f"build: {results['nopch_cold_build_estimate_s'] / results['as_built_cold_build_estimate_s']:.2f}x")
    print(f"load average {results['load_avg_start']} -> {results['load_avg_end']} on {os.cpu_count()} cores "
          "(CPU seconds; a busy machine still stretches them somewhat)")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
