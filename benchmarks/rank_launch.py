"""What one multi-rank launch costs a test: ranks forked from the warm zygote vs fresh interpreters
(npudist.testing.multiproc.run_on_ranks, npudist/testing/zygote.py).

Each repetition runs the same function on ``--ranks`` ranks both ways, interleaved: the ranks set
up the hccl group (``backend="hccl"``), all_reduce one small npu tensor, and exit. Prints the
wall seconds of each launch (median and best of ``--repeat``) and the ratio fresh / zygote, and
writes JSON. The first zygote launch also pays starting the zygote (reported apart).

    python benchmarks/rank_launch.py [--ranks 2] [--repeat 3] [--json benchmarks/results/rank_launch.json]
"""
import argparse
import os
import statistics
import sys
import time

from _results import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.rank_launch_fn import all_reduce_once  # noqa: E402  (the repository is on sys.path now)
from npudist.testing.multiproc import run_on_ranks  # noqa: E402  (likewise)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "rank_launch.json"))
    args = ap.parse_args()
    times = {"zygote": [], "fresh": []}
    t0 = time.perf_counter()
    run_on_ranks(all_reduce_once, args.ranks, timeout=600).check("zygote warm-up")
    first = time.perf_counter() - t0
    for _ in range(args.repeat):
        for mode in ("fresh", "zygote"):
            t0 = time.perf_counter()
            r = run_on_ranks(all_reduce_once, args.ranks, timeout=600, zygote=mode == "zygote").check(mode)
            times[mode].append(time.perf_counter() - t0)
            assert r.values() == [float(args.ranks)] * args.ranks, r.values()
    print(f"{'launch of ' + str(args.ranks) + ' ranks':28} {'median s':>9} {'best s':>9}")
    for mode, xs in times.items():
        print(f"{mode:28} {statistics.median(xs):9.2f} {min(xs):9.2f}")
    ratio = statistics.median(times["fresh"]) / statistics.median(times["zygote"])
    print(f"fresh / zygote (medians): {ratio:.2f}x; first zygote launch (starts the zygote): {first:.2f} s; "
          f"load average {os.getloadavg()} on {os.cpu_count()} cores, {args.repeat} repetitions")
    write_json(args.json, {"ranks": args.ranks, "repeat": args.repeat, "seconds": times, "ratio_median": ratio,
                           "first_zygote_launch_s": first, "load_avg": os.getloadavg(),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})


if __name__ == "__main__":
    main()
