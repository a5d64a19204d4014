"""A newcomer's first minutes, measured on a fresh clone: time to the demo's first
progress line, the cold build of the extension, and the test command.

Clones this repository (``git clone --branch BRANCH``, default: the current branch; commit your
work first) into a temporary directory and, there, with ccache off (CCACHE_DISABLE=1,
TORCH_NO_COMPILER_WRAPPER=1, /usr/lib/ccache dropped from PATH) and MAX_JOBS=2:

1. ``./run.sh demo``: from nothing (a new .venv) to the demo's first ``step N/M | loss`` line,
   split into dependency install, cold build and training start, read from run.sh's log lines;
   the demo is stopped there (SIGINT, as a user's Ctrl-C).
2. cold builds side by side: ``rm -rf build npudist/_C*.so; ./run.sh build`` as by default
   (the unity build) and with every unit alone (NPUDIST_BUILD_UNITY=0), ``--repeat`` times,
   interleaved; with ``--ccache`` also a rebuild through ccache with a warm cache (the second
   of two ccache builds).
3. (``--tests``) ``./run.sh test`` (the default tier) wall time, and ``./run.sh demo`` again (a
   later run: nothing to install or build).

pip's download cache is used as it is on this machine (a first-ever run also downloads
torch, ~200 MB, and numpy); the table says so. Prints a table, writes JSON. A busy machine
stretches every figure: read the ratio of the two builds, which see the same load.

    python benchmarks/setup_time.py [--branch B] [--repeat 1] [--tests] [--ccache] [--keep]
                                    [--json benchmarks/results/setup_time.json] [--dry-run]

``--dry-run`` clones, prints the steps and checks run.sh has their commands (seconds, no build).

About 10 minutes without --tests on a quiet 2-core machine; the test tier adds its own time.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from _results import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PROGRESS = re.compile(r"step\s+\d+/\d+ \| loss")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), with AVX-512 / AMX when present: figures differ by CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "unknown CPU"
    name = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "unknown CPU")
    flags = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))
    extra = [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return name + (f" ({', '.join(extra)})" if extra else "")


def no_ccache_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NPUDIST_", "HCCL_", "TORCH_HCCL_", "PET_", "TORCHELASTIC_", "CCACHE_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "ccache" not in p)
    env.update(CCACHE_DISABLE="1", TORCH_NO_COMPILER_WRAPPER="1", MAX_JOBS="2")
    env.pop("VIRTUAL_ENV", None)
    env.update(extra or {})
    return env


def run_demo(clone, env, timeout):
    """./run.sh demo until the first progress line; {phase: seconds since start}."""
    t0 = time.perf_counter()
    marks = {}
    lines = []
    p = subprocess.Popen(["./run.sh", "demo", "--ckpt-dir", os.path.join(clone, "ckpt-bench"), "--no-resume"],
                         cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    found = threading.Event()

    def read():
        for line in p.stdout:
            now = time.perf_counter() - t0
            lines.append(line)
            if "installing the run dependencies" in line:
                marks.setdefault("deps_start", now)
            elif "installing npudist" in line:
                marks.setdefault("deps_done", now)
            elif "building the C++ extension" in line:
                marks.setdefault("build_start", now)
            elif "train_gpt:" in line:
                marks.setdefault("train_start", now)
            elif PROGRESS.search(line):
                marks.setdefault("first_progress", now)
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    found.wait(timeout)
    try:
        os.killpg(p.pid, signal.SIGINT)
        p.wait(60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    if "first_progress" not in marks:
        raise SystemExit(f"the demo printed no progress line within {timeout} s:\n{''.join(lines[-40:])}")
    return marks


def timed(cmd, cwd, env, timeout=3600):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return dt, r


def cold_build(clone, env):
    shutil.rmtree(os.path.join(clone, "build"), ignore_errors=True)
    for name in os.listdir(os.path.join(clone, "npudist")):
        if name.startswith("_C") and name.endswith(".so"):
            os.unlink(os.path.join(clone, "npudist", name))
    dt, _ = timed(["./run.sh", "build"], clone, env)
    return dt


def dry_run(clone, env, args):
    """What a real run would do, printed; fails when the clone's run.sh lacks a command it uses."""
    steps = [["./run.sh", "demo", "--ckpt-dir", "ckpt-bench", "--no-resume"], ["./run.sh", "build"]]
    if args.tests:
        steps += [["./run.sh", "test", "-q"], ["./run.sh", "demo", "--ckpt-dir", "ckpt-bench", "--no-resume"]]
    with open(os.path.join(clone, "run.sh")) as f:
        script = f.read()
    missing = sorted({cmd[1] for cmd in steps if not re.search(rf"^\s*{cmd[1]}\)", script, re.M)})
    print(f"would run in {clone} (cold builds: {args.repeat} per variant, NPUDIST_BUILD_PCH=1 and default):")
    for cmd in steps:
        print("   ", " ".join(cmd))
    shown = {k: env[k] for k in ("CCACHE_DISABLE", "TORCH_NO_COMPILER_WRAPPER", "MAX_JOBS")}
    print(f"environment: {shown}, PATH without ccache: {'ccache' not in env['PATH']}")
    if missing:
        raise SystemExit(f"run.sh in the clone has no command {missing}: this script and run.sh disagree")
    print("dry run: nothing installed, built or timed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branch", default=None, help="branch to clone (default: the current one)")
    ap.add_argument("--repeat", type=int, default=1, help="cold builds per variant (interleaved)")
    ap.add_argument("--tests", action="store_true", help="also time ./run.sh test (the default tier) and a second demo")
    ap.add_argument("--ccache", action="store_true", help="also time a rebuild through a warm ccache")
    ap.add_argument("--demo-timeout", type=float, default=1800)
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--json", default=os.path.join(REPO, "benchmarks", "results", "setup_time.json"))
    ap.add_argument("--dry-run", action="store_true",
                    help="clone, print what would run (commands, environment) and check that run.sh has those "
                         "commands; installs, builds and times nothing")
    args = ap.parse_args()

    branch = args.branch or subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=REPO, capture_output=True,
                                           text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", branch], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="npudist-setup-time-")
    clone = os.path.join(tmp, "npudist")
    res = {"branch": branch, "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "cores": os.cpu_count(), "cpu": cpu_model(), "load_avg_start": os.getloadavg(), "pip_cache": "as on this machine"}
    try:
        subprocess.run(["git", "clone", "-q", "--branch", branch, REPO, clone], check=True)
        env = no_ccache_env()
        print(f"fresh clone of {branch} ({commit}) in {clone}; ccache off, MAX_JOBS=2", flush=True)
        if args.dry_run:
            dry_run(clone, env, args)
            return
        marks = run_demo(clone, env, args.demo_timeout)
        res["demo_first_run"] = marks
        print(f"demo, first run: deps {marks.get('deps_done', 0) - marks.get('deps_start', 0):.0f} s, build "
              f"{marks.get('train_start', 0) - marks.get('build_start', 0):.0f} s (to the job's first line), "
              f"first progress line at {marks['first_progress']:.0f} s", flush=True)
        builds = {"units": [], "unity": []}
        for _ in range(args.repeat):
            builds["units"].append(cold_build(clone, no_ccache_env({"NPUDIST_BUILD_UNITY": "0"})))
            builds["unity"].append(cold_build(clone, env))
            print(f"cold build: unity {builds['unity'][-1]:.0f} s, units alone {builds['units'][-1]:.0f} s", flush=True)
        cold_build(clone, env)  # leave the default build in place for what follows
        res["cold_build_s"] = builds
        if args.ccache and shutil.which("ccache"):
            cenv = dict(os.environ, MAX_JOBS="2")
            cenv.pop("CCACHE_DISABLE", None)
            cold_build(clone, cenv)  # fills the cache
            res["ccache_warm_build_s"] = cold_build(clone, cenv)
            print(f"rebuild through a warm ccache: {res['ccache_warm_build_s']:.0f} s", flush=True)
        if args.tests:
            res["test_s"], r = timed(["./run.sh", "test", "-q"], clone, env, timeout=7200)
            res["test_tail"] = r.stdout.strip().splitlines()[-1:]
            print(f"./run.sh test: {res['test_s']:.0f} s ({res['test_tail']})", flush=True)
            res["demo_later_run"] = run_demo(clone, env, args.demo_timeout)
    finally:
        res["load_avg_end"] = os.getloadavg()
        if args.keep:
            print(f"kept {clone}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    write_json(args.json, res)  # before the table: a figure measured is never lost to its presentation

    def best(xs):
        return min(xs) if xs else float("nan")

    rows = [("demo first run: to the first progress line", res["demo_first_run"]["first_progress"], "<= 240 s"),
            ("  of which dependencies (pip, cache as on this machine)",
             res["demo_first_run"].get("deps_done", 0) - res["demo_first_run"].get("deps_start", 0), ""),
            ("cold build, ccache off, MAX_JOBS=2 (best)", best(res["cold_build_s"]["unity"]), "<= 120 s"),
            ("cold build with NPUDIST_BUILD_UNITY=0 (best)", best(res["cold_build_s"]["units"]), "")]
    if "ccache_warm_build_s" in res:
        rows.append(("rebuild through a warm ccache", res["ccache_warm_build_s"], ""))
    if "test_s" in res:
        rows.append(("./run.sh test (default tier, after setup)", res["test_s"], ""))
        rows.append(("  + the cold build (best, unity): the issue's figure", res["test_s"]
                     + best(res["cold_build_s"]["unity"]), "<= 720 s"))
        rows.append(("demo later run: to the first progress line", res["demo_later_run"]["first_progress"], ""))
    print(f"\n{'what':58} {'seconds':>8}  goal")
    for name, sec, goal in rows:
        print(f"{name:58} {sec:8.1f}  {goal}")
    print(f"units alone / unity cold build: {best(res['cold_build_s']['units']) / best(res['cold_build_s']['unity']):.2f}x; "
          f"load average {res['load_avg_start']} -> {res['load_avg_end']} on {res['cores']} cores ({res['cpu']})")


if __name__ == "__main__":
    main()
