"""xp with and without NumPy's loops on npu memory (npudist.xp._host), against NumPy.

For the elementwise rows of benchmarks/xp_vs_numpy.py (add, multiply by a scalar, divide, sqrt,
exp, sin, maximum, greater; float32/float64/int32/int64/uint32/uint64) and the rows of the
functions that run NumPy's function first (sum, max, argmax, cumsum, mean, std, sort, argsort,
unique, where, bincount, histogram) at 16 elements and at --size elements, four calls
alternate in one process: NumPy; xp as shipped (C fast paths, ``npudist.xp._host.FAST = True``);
xp with the Python host path only (``FAST = False``: the previous pass, "python"); xp on
PyTorch's kernels only (``ENABLED = False``). Each xp call is followed by
``npudist._C._synchronize(device)`` as in xp_vs_numpy's default. Reported: per-op cost ratio xp / NumPy per
variant (lower is better; the bar at 16 elements: <= 3) and the speed NumPy / xp at
--size (higher is better; bar >= 1.0), medians over --reps repetitions of ~20 ms each, with
--threads torch intra-op threads (default 1: the per-rank case).

    python benchmarks/xp_host_loops.py [--reps 5] [--size 1000000] [--threads 1] [--json benchmarks/results/xp_host_loops.json]
"""
import argparse
import json
import os
import statistics

import numpy as np
import torch
from _timing import timed

import npudist.xp as xp
from npudist import _C
from npudist.xp import _host

DT = ["float32", "float64", "int32", "int64", "uint32", "uint64"]
ROWS = [("add", DT, 2, lambda m, a, b: m.add(a, b)), ("multiply_scalar", DT, 1, lambda m, a: a * 3),
        ("divide", DT[:4], 2, lambda m, a, b: a / b), ("sqrt", DT[:2], 1, lambda m, a: m.sqrt(a)),
        ("exp", DT[:2], 1, lambda m, a: m.exp(a)), ("sin", DT[:2], 1, lambda m, a: m.sin(a)),
        ("maximum", DT, 2, lambda m, a, b: m.maximum(a, b)), ("greater", DT, 2, lambda m, a, b: a > b),
        ("sum", DT, 1, lambda m, a: m.sum(a)), ("max", DT, 1, lambda m, a: m.max(a)),
        ("argmax", DT[:4], 1, lambda m, a: m.argmax(a)), ("cumsum", DT, 1, lambda m, a: m.cumsum(a)),
        ("mean", DT[:2], 1, lambda m, a: m.mean(a)), ("std", DT[:2], 1, lambda m, a: m.std(a)),
        ("sort", DT, 1, lambda m, a: m.sort(a)), ("argsort", ["float32", "int64"], 1,
                                                   lambda m, a: m.argsort(a, kind="stable")),
        ("unique", ["int32", "int64"], 1, lambda m, a: m.unique(a)),
        ("where", DT, 2, lambda m, a, b: m.where(a > b, a, b)),
        ("bincount", ["int64"], 1, lambda m, a: m.bincount(a)),
        ("histogram", DT[:2], 1, lambda m, a: m.histogram(a, bins=64)[0])]
VARIANTS = {"fast": (True, True), "python": (True, False), "torch": (False, False)}   # (ENABLED, FAST)


def _data(n, dt, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, n) if np.dtype(dt).kind == "f" else rng.integers(1, 1000, n)
    return a.astype(dt)


def _xp(fn, variant):
    on, fast = VARIANTS[variant]
    dev = torch.npu.current_device()

    def run():
        _host.ENABLED, _host.FAST = on, fast
        fn()
        _C._synchronize(dev)   # torch.npu.synchronize's own call (benchmarks/xp_vs_numpy.py, --sync)
    return run


def bench(n, reps):
    out = []
    for name, dts, nargs, fn in ROWS:
        for dt in dts:
            npa = [_data(n, dt, s) for s in range(nargs)]
            xpa = [xp.asarray(a) for a in npa]

            def f_np(fn=fn, npa=npa):
                return fn(np, *npa)
            fx = {v: _xp(lambda fn=fn, xpa=xpa: fn(xp, *xpa), v) for v in VARIANTS}
            for v, (on, fast) in VARIANTS.items():   # every xp variant agrees with NumPy before timing
                _host.ENABLED, _host.FAST = on, fast
                np.testing.assert_allclose(xp.asnumpy(fn(xp, *xpa)), fn(np, *npa),   # (PyTorch's float32
                                           rtol=1e-3 if dt == "float32" else 1e-6,   # sums accumulate
                                           err_msg=f"{name} {dt} {v}")               # in another order)
            t1 = timed(fx["torch"], 1)
            calls = max(1, min(20000, int(0.02 / max(t1, 1e-7))))
            ts = {"numpy": [], **{v: [] for v in VARIANTS}}
            for _ in range(reps):
                ts["numpy"].append(timed(f_np, calls))
                for v in VARIANTS:
                    ts[v].append(timed(fx[v], calls))
            _host.ENABLED, _host.FAST = True, True
            med = {k: statistics.median(v) * 1e6 for k, v in ts.items()}
            row = {"op": name, "dtype": dt, "elements": n, "numpy_us": med["numpy"]}
            for v in VARIANTS:
                row[f"xp_{v}_us"] = med[v]
                row[f"cost_{v}"] = statistics.median(h / m for h, m in zip(ts[v], ts["numpy"]))
            out.append(row)
            print(f"{name:10s} {dt:8s} {n:>8d}  numpy {row['numpy_us']:9.1f} us" +
                  "".join(f"  {v} {row[f'xp_{v}_us']:9.1f} us ({row[f'cost_{v}']:5.2f}x)" for v in VARIANTS),
                  flush=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                   "xp_host_loops.json"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    load = os.getloadavg()
    print(f"torch threads {torch.get_num_threads()}, load average {load}")
    small = bench(16, args.reps)
    big = bench(args.size, args.reps)
    summary = {}
    for v in VARIANTS:
        summary[f"tiny_cost_{v}"] = statistics.median(r[f"cost_{v}"] for r in small)
        summary[f"big_speed_{v}"] = statistics.median(1 / r[f"cost_{v}"] for r in big)
    print("\n16 elements, median per-op cost xp / NumPy: " +
          ", ".join(f"{v} {summary[f'tiny_cost_{v}']:.1f}x" for v in VARIANTS))
    print(f"{args.size} elements, median speed NumPy / xp: " +
          ", ".join(f"{v} {summary[f'big_speed_{v}']:.2f}" for v in VARIANTS) +
          f"  (threads {args.threads}, load at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f})")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"summary": summary, "threads": args.threads, "load_start": load, "load_end": os.getloadavg(),
                   "small": small, "big": big, "command": "python " + " ".join(os.sys.argv)}, f, indent=1)
    print("JSON:", args.json)


if __name__ == "__main__":
    main()
