"""xp vs NumPy at 1M elements with npu memory in 4 KiB pages and in 2 MiB pages: the same ops, one
thread each side, in child processes started alternately with NPUDIST_DEVICE_HUGE_PAGES=0 and with the
default (2 MiB pages for mappings up to 64 MiB), so the page size is the only difference. Each child
times NumPy and xp interleaved and reports the best-time speed NumPy / xp (>1: xp faster). Shows what
the driver's 2 MiB pages are worth to xp's NumPy-loop paths (docs/xp.md).

    python benchmarks/xp_page_size_ab.py [--rounds 2] [--reps 25] [--json benchmarks/results/xp_page_size_ab.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

OPS = [("add", "float64"), ("multiply_scalar", "float32"), ("cumsum", "int64"), ("greater", "int64"),
       ("take", "float64"), ("exp", "float32")]


def child(reps):
    import numpy as np
    import torch

    import npudist.xp as xp
    from npudist import _C
    torch.set_num_threads(1)
    n = 1_000_000
    rng = np.random.default_rng(0)
    fns = {"add": lambda m, a, b, i: m.add(a, b), "multiply_scalar": lambda m, a, b, i: a * 3,
           "cumsum": lambda m, a, b, i: m.cumsum(a), "take": lambda m, a, b, i: m.take(a, i),
           "greater": lambda m, a, b, i: a > b, "exp": lambda m, a, b, i: m.exp(a)}
    res = {}
    for op, dt in OPS:
        na, nb = rng.uniform(0.5, 2, n).astype(dt), rng.uniform(0.5, 2, n).astype(dt)
        ni = rng.integers(0, n, n)
        sides = {"numpy": (np, na, nb, ni), "xp": (xp, xp.asarray(na), xp.asarray(nb), xp.asarray(ni))}
        best = {k: float("inf") for k in sides}
        f = fns[op]
        for _ in range(reps):
            for k, args in sides.items():
                t0 = time.perf_counter()
                for _ in range(4):
                    r = f(*args)
                    if k == "xp":
                        _C._synchronize(0)
                    del r
                best[k] = min(best[k], (time.perf_counter() - t0) / 4)
        res[f"{op} {dt}"] = best["numpy"] / best["xp"]
    print(json.dumps(res))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "xp_page_size_ab.json"))
    args = p.parse_args()
    if args.child:
        child(args.reps)
        return
    runs = {"4 KiB": [], "2 MiB": []}
    for _ in range(args.rounds):
        for label, value in (("4 KiB", "0"), ("2 MiB", None)):
            env = dict(os.environ)
            env.pop("NPUDIST_DEVICE_HUGE_PAGES", None)
            if value is not None:
                env["NPUDIST_DEVICE_HUGE_PAGES"] = value
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--reps", str(args.reps)],
                                 env=env, capture_output=True, text=True, timeout=600, check=True)
            runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"best-time speed NumPy / xp at 1M elements, one thread, {args.rounds} rounds x {args.reps} reps; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'op':26s} {'4 KiB pages':>12s} {'2 MiB pages':>12s}")
    rows = []
    for key in runs["4 KiB"][0]:
        small = statistics.median(r[key] for r in runs["4 KiB"])
        huge = statistics.median(r[key] for r in runs["2 MiB"])
        rows.append({"op": key, "speed_4k": small, "speed_2m": huge})
        print(f"{key:26s} {small:12.2f} {huge:12.2f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"rounds": args.rounds, "reps": args.reps, "rows": rows, "runs": runs,
                   "load": os.getloadavg()[0]}, fh, indent=1)
    print("JSON:", args.json)


if __name__ == "__main__":
    main()
