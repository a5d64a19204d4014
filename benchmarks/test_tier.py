"""What the multi-rank harness saves the test command: pytest on the same test paths with ranks
forked from the warm zygote (the default) and with every rank a fresh interpreter
(NPUDIST_TEST_ZYGOTE=0, as before issue #43), interleaved, in the same run.

Each repetition runs ``python -m pytest -q -p no:cacheprovider PATHS`` once per mode (the order
alternates between repetitions) and records its wall seconds, its pass/fail counts and the load
average. Prints a table with the medians and the ratio fresh / zygote, and writes JSON. Both
modes run the same tests: compare the counts in the table. A busy machine stretches both; read
the ratio, and the load average printed beside it.

    python benchmarks/test_tier.py [PATHS ...] [--repeat 1] [--json benchmarks/results/test_tier.json]

Default PATHS: tests/hccl/test_groups.py tests/hccl/test_stream_waits.py tests/graph (about 20
launches of 2-4 ranks; a few minutes per mode on a quiet 2-core machine). ``tests`` times the
whole default tier (tens of minutes per mode).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from _results import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_PATHS = ["tests/hccl/test_groups.py", "tests/hccl/test_stream_waits.py", "tests/graph"]
COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped|deselected)")


def run_pytest(paths, fresh, timeout):
    """One pytest run; returns {seconds, counts, tail, load}."""
    env = dict(os.environ, NPUDIST_TEST_ZYGOTE="0" if fresh else "1")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    tail = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-500:]
    return {"seconds": seconds, "counts": {k: int(n) for n, k in COUNTS.findall(tail)}, "tail": tail,
            "returncode": p.returncode, "load_avg": os.getloadavg()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=DEFAULT_PATHS, help="test paths, as given to pytest")
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode (interleaved)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per pytest run")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "test_tier.json"))
    args = ap.parse_args()
    runs = {"zygote": [], "fresh": []}
    for i in range(args.repeat):
        order = ("fresh", "zygote") if i % 2 else ("zygote", "fresh")
        for mode in order:
            r = run_pytest(args.paths, mode == "fresh", args.timeout)
            runs[mode].append(r)
            print(f"{mode:7} {r['seconds']:8.1f} s  {r['tail']}  (load {r['load_avg'][0]:.1f})", flush=True)
    med = {m: statistics.median(x["seconds"] for x in rs) for m, rs in runs.items()}
    print(f"\n{'mode':40} {'median s':>9}  tests")
    print(f"{'ranks forked from the zygote (default)':40} {med['zygote']:9.1f}  {runs['zygote'][-1]['tail']}")
    print(f"{'fresh interpreters (NPUDIST_TEST_ZYGOTE=0)':40} {med['fresh']:9.1f}  {runs['fresh'][-1]['tail']}")
    ratio = med["fresh"] / med["zygote"]
    print(f"fresh / zygote: {ratio:.2f}x on {os.cpu_count()} cores")
    write_json(args.json, {"paths": args.paths, "repeat": args.repeat, "runs": runs, "median_s": med,
                           "ratio_fresh_over_zygote": ratio, "cores": os.cpu_count(),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
    if any(r["returncode"] != 0 for rs in runs.values() for r in rs):
        raise SystemExit("a pytest run failed: the timings compare unequal work (see the tails above)")


if __name__ == "__main__":
    main()
