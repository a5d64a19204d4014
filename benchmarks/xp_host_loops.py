"""xp's ufuncs with and without NumPy's loops on npu memory (npudist.xp._host), against NumPy.

For the elementwise rows of benchmarks/xp_vs_numpy.py (add, multiply by a scalar, divide, sqrt,
exp, sin, maximum, greater; float32/float64/int32/int64/uint32/uint64) at 16 elements and at
--size elements, three calls alternate in one process: NumPy, xp with the host loops
(``npudist.xp._host.ENABLED = True``, the default) and xp on PyTorch's kernels only (``False``).
Each xp call is followed by ``torch.npu.synchronize()`` as in xp_vs_numpy. Reported: per-op
cost ratio xp / NumPy for both xp variants (lower is better; issue 21's bar at 16 elements: <= 3)
and the speed NumPy / xp at --size (higher is better; bar >= 1.0), medians over --reps
repetitions of ~20 ms each, with --threads torch intra-op threads (default 1: the per-rank case).

    python benchmarks/xp_host_loops.py [--reps 5] [--size 1000000] [--threads 1] [--json benchmarks/results/xp_host_loops.json]
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import torch

import npudist.xp as xp
from npudist.xp import _host

DT = ["float32", "float64", "int32", "int64", "uint32", "uint64"]
ROWS = [("add", DT, 2, lambda m, a, b: m.add(a, b)), ("multiply_scalar", DT, 1, lambda m, a: a * 3),
        ("divide", DT[:4], 2, lambda m, a, b: a / b), ("sqrt", DT[:2], 1, lambda m, a: m.sqrt(a)),
        ("exp", DT[:2], 1, lambda m, a: m.exp(a)), ("sin", DT[:2], 1, lambda m, a: m.sin(a)),
        ("maximum", DT, 2, lambda m, a, b: m.maximum(a, b)), ("greater", DT, 2, lambda m, a, b: a > b)]


def _data(n, dt, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, n) if np.dtype(dt).kind == "f" else rng.integers(1, 1000, n)
    return a.astype(dt)


def _timed(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def _xp(fn, on):
    def run():
        _host.ENABLED = on
        fn()
        torch.npu.synchronize()
    return run


def bench(n, reps):
    out = []
    for name, dts, nargs, fn in ROWS:
        for dt in dts:
            npa = [_data(n, dt, s) for s in range(nargs)]
            xpa = [xp.asarray(a) for a in npa]
            def f_np(fn=fn, npa=npa):
                return fn(np, *npa)
            f_on, f_off = _xp(lambda: fn(xp, *xpa), True), _xp(lambda: fn(xp, *xpa), False)
            for on in (True, False):   # both xp variants agree with NumPy before timing
                _host.ENABLED = on
                np.testing.assert_allclose(xp.asnumpy(fn(xp, *xpa)), fn(np, *npa), rtol=1e-6, err_msg=f"{name} {dt}")
            t1 = _timed(f_off, 1)
            calls = max(1, min(20000, int(0.02 / max(t1, 1e-7))))
            ts = {"numpy": [], "host": [], "torch": []}
            for _ in range(reps):
                ts["numpy"].append(_timed(f_np, calls))
                ts["host"].append(_timed(f_on, calls))
                ts["torch"].append(_timed(f_off, calls))
            _host.ENABLED = True
            med = {k: statistics.median(v) * 1e6 for k, v in ts.items()}
            row = {"op": name, "dtype": dt, "elements": n, "numpy_us": med["numpy"], "xp_host_us": med["host"],
                   "xp_torch_us": med["torch"],
                   "cost_host": statistics.median(h / m for h, m in zip(ts["host"], ts["numpy"])),
                   "cost_torch": statistics.median(t / m for t, m in zip(ts["torch"], ts["numpy"]))}
            out.append(row)
            print(f"{name:15s} {dt:8s} {n:>8d}  numpy {row['numpy_us']:9.1f} us  xp host {row['xp_host_us']:9.1f} us"
                  f" ({row['cost_host']:5.2f}x)  xp torch {row['xp_torch_us']:9.1f} us ({row['cost_torch']:5.2f}x)",
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
    summary = {
        "tiny_cost_host": statistics.median(r["cost_host"] for r in small),
        "tiny_cost_torch": statistics.median(r["cost_torch"] for r in small),
        "big_speed_host": statistics.median(1 / r["cost_host"] for r in big),
        "big_speed_torch": statistics.median(1 / r["cost_torch"] for r in big),
    }
    print(f"\n16 elements, median per-op cost xp / NumPy: host loops {summary['tiny_cost_host']:.1f}x, "
          f"PyTorch only {summary['tiny_cost_torch']:.1f}x")
    print(f"{args.size} elements, median speed NumPy / xp: host loops {summary['big_speed_host']:.2f}, "
          f"PyTorch only {summary['big_speed_torch']:.2f}  (threads {args.threads}, load at start {load[0]:.1f}, "
          f"at end {os.getloadavg()[0]:.1f})")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"summary": summary, "threads": args.threads, "load_start": load, "load_end": os.getloadavg(),
                   "small": small, "big": big, "command": "python " + " ".join(os.sys.argv)}, f, indent=1)
    print("JSON:", args.json)


if __name__ == "__main__":
    main()
