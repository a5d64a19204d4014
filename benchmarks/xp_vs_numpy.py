"""npudist.xp vs NumPy over an op x dtype matrix, in one process, interleaved.

For every (op, dtype) the NumPy call and the xp call run alternately (numpy, xp, numpy, xp, ...)
for --reps repetitions of enough calls to take ~20 ms; we report the median and best time per
call of each and the speed ratio NumPy time / xp time (>1: xp is faster). Two sizes: --size
elements (default 1M; matmul uses a sqrt(size) square matrix) and tiny arrays (16 elements), where
the figure is xp's per-op cost in microseconds (the issue's bar: at most 3x NumPy's). The matrix
runs once per thread setting in --threads (default "1,default": one thread on each side — the
per-rank situation — and then torch's default): torch.set_num_threads and threadpoolctl's limit on
NumPy's BLAS; NumPy's own loops are single-threaded. uint32/uint64 rows time xp's exact unsigned
arithmetic (npudist.xp._unsigned). The BLAS libraries and thread counts are printed and stored.
Every xp call is followed by a wait for the device's streams (xp's ops may be deferred): by default
the extension's own synchronize, ``npudist._C._synchronize(device)`` — the call
``torch.npu.synchronize()`` ends in, without that wrapper's Python argument handling (~1-3 us,
more than a 16-element NumPy op); ``--sync torch`` times with ``torch.npu.synchronize()``.

    python benchmarks/xp_vs_numpy.py [--reps 5] [--threads 1,default] [--size 1000000] [--sync c|torch] [--json benchmarks/results/xp_vs_numpy.json]
"""
import argparse
import json
import math
import os
import platform
import statistics

import numpy as np
import torch
from _timing import timed

import npudist.xp as xp

BASE = ["float32", "float64", "int32", "int64"]
DTYPES = BASE + ["uint32", "uint64"]   # ops where unsigned rows are timed too


def ops(size):
    n = int(math.isqrt(size))

    def data(mod, dt, shape=(size,), seed=0):
        rng = np.random.default_rng(seed)
        a = rng.uniform(0.5, 2.0, shape) if np.dtype(dt).kind == "f" else rng.integers(1, 1000, shape)
        return mod.asarray(a.astype(dt))

    return {
        # name: (dtypes, setup(mod, dt) -> args, fn(mod, *args))
        "add": (DTYPES, lambda m, d: (data(m, d), data(m, d, seed=1)), lambda m, a, b: m.add(a, b)),
        "multiply_scalar": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: a * 3),
        "divide": (BASE, lambda m, d: (data(m, d), data(m, d, seed=1)), lambda m, a, b: a / b),
        "sqrt": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.sqrt(a)),
        "exp": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.exp(a)),
        "sin": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.sin(a)),
        "maximum": (DTYPES, lambda m, d: (data(m, d), data(m, d, seed=1)), lambda m, a, b: m.maximum(a, b)),
        "greater": (DTYPES, lambda m, d: (data(m, d), data(m, d, seed=1)), lambda m, a, b: a > b),
        "where": (DTYPES, lambda m, d: (data(m, d), data(m, d, seed=1)), lambda m, a, b: m.where(a > b, a, b)),
        "clip": (BASE, lambda m, d: (data(m, d),), lambda m, a: m.clip(a, 1, 100)),
        "astype": (BASE, lambda m, d: (data(m, d),), lambda m, a: a.astype(np.float32 if a.dtype != np.float32
                                                                                else np.float64)),
        "sum": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: m.sum(a)),
        "mean": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.mean(a)),
        "max": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: m.max(a)),
        "std": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.std(a)),
        "sum_axis0": (BASE, lambda m, d: (data(m, d, (n, size // n)),), lambda m, a: m.sum(a, axis=0)),
        "cumsum": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: m.cumsum(a)),
        "argmax": (BASE, lambda m, d: (data(m, d),), lambda m, a: m.argmax(a)),
        "sort": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: m.sort(a)),
        "argsort": (["float32", "int64"], lambda m, d: (data(m, d),), lambda m, a: m.argsort(a, kind="stable")),
        "unique": (["int32", "int64"], lambda m, d: (data(m, d),), lambda m, a: m.unique(a)),
        "take": (BASE, lambda m, d: (data(m, d), m.asarray(np.random.default_rng(2).integers(0, size, size))),
                 lambda m, a, i: m.take(a, i)),
        "bool_index": (DTYPES, lambda m, d: (data(m, d),), lambda m, a: a[a > 500]),
        "transpose_copy": (BASE, lambda m, d: (data(m, d, (n, size // n)),), lambda m, a: m.ascontiguousarray(a.T)),
        "matmul": (["float32", "float64"], lambda m, d: (data(m, d, (n, n)), data(m, d, (n, n), 1)),
                   lambda m, a, b: a @ b),
        "bincount": (["int64"], lambda m, d: (data(m, d),), lambda m, a: m.bincount(a)),
        "histogram": (["float32", "float64"], lambda m, d: (data(m, d),), lambda m, a: m.histogram(a, bins=64)[0]),
    }


def calibrate(fn, target=0.02):
    fn()
    t = timed(fn, 1)
    return max(1, min(20000, int(target / max(t, 1e-7))))


SYNC = {"fn": torch.npu.synchronize}


def sync_xp(fn):
    sync = SYNC["fn"]

    def run():
        r = fn()
        sync()
        return r
    return run


def set_sync(kind):
    """The wait after each xp call: 'c' (npudist._C._synchronize of the current npu) or 'torch'."""
    if kind == "torch":
        SYNC["fn"] = torch.npu.synchronize
    else:
        from npudist import _C
        dev = torch.npu.current_device()
        SYNC["fn"] = lambda: _C._synchronize(dev)


def bench(size, reps, tiny):
    rows = []
    for name, (dts, setup, fn) in ops(size).items():
        for dt in dts:
            args_np = setup(np, dt)
            args_xp = setup(xp, dt)
            f_np = lambda: fn(np, *args_np)  # noqa: E731  (a local one-line callable)
            f_xp = sync_xp(lambda: fn(xp, *args_xp))
            # check the two agree before timing (a benchmark of wrong results means nothing)
            r_np, r_xp = f_np(), f_xp()
            r_np = r_np if isinstance(r_np, np.ndarray) else np.asarray(r_np)
            np.testing.assert_allclose(xp.asnumpy(r_xp), r_np, rtol=1e-3 if dt == "float32" else 1e-6,
                                       err_msg=f"{name} {dt}")
            calls = min(calibrate(f_np), calibrate(f_xp))
            t_np, t_xp = [], []
            for _ in range(reps):
                t_np.append(timed(f_np, calls))
                t_xp.append(timed(f_xp, calls))
            ratios = [a / b for a, b in zip(t_np, t_xp)]
            rows.append({"op": name, "dtype": dt, "elements": size if not tiny else 16, "calls_per_rep": calls,
                         "numpy_median_us": statistics.median(t_np) * 1e6, "xp_median_us": statistics.median(t_xp) * 1e6,
                         "numpy_best_us": min(t_np) * 1e6, "xp_best_us": min(t_xp) * 1e6,
                         "speed_median": statistics.median(ratios), "speed_best": min(t_np) / min(t_xp),
                         "overhead_us": (statistics.median(t_xp) - statistics.median(t_np)) * 1e6})
            print(f"{name:15s} {dt:8s} {rows[-1]['elements']:>8d}  numpy {rows[-1]['numpy_median_us']:10.1f} us"
                  f"  xp {rows[-1]['xp_median_us']:10.1f} us  speed {rows[-1]['speed_median']:6.2f}", flush=True)
    return rows


def blas_info():
    try:
        from threadpoolctl import threadpool_info
        return [{k: d.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer", "architecture",
                                        "filepath")} for d in threadpool_info()]
    except ImportError:
        return "threadpoolctl not installed"


DEFAULT_THREADS = torch.get_num_threads()


def run_setting(threads, args):
    """The whole matrix (big and 16-element arrays) with ``threads`` on each side."""
    torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(threads)
    except ImportError:
        pass
    info = {"blas": blas_info(), "torch_threads": torch.get_num_threads(), "numpy": np.__version__,
            "torch": torch.__version__, "machine": platform.machine(), "cpus": os.cpu_count(),
            "float64_mode": xp.get_float64_mode(), "threads": threads, "load_average": os.getloadavg(),
            "sync": args.sync}
    print(f"\n######## threads {threads} (torch intra-op {info['torch_threads']}) ########")
    print(f"== {args.size} elements, {args.reps} interleaved reps ==")
    big = bench(args.size, args.reps, tiny=False)
    print(f"\n== 16 elements (per-op cost), {args.reps} interleaved reps ==")
    small = bench(16, args.reps, tiny=True)
    med = statistics.median(r["speed_median"] for r in big)
    geo = math.exp(statistics.mean(math.log(r["speed_median"]) for r in big))
    tiny_xp = statistics.median(r["xp_median_us"] for r in small)
    tiny_np = statistics.median(r["numpy_median_us"] for r in small)
    uint = [r["speed_median"] for r in big if r["dtype"].startswith("uint")]
    print(f"\n{'op':15s} {'dtype':8s} {'numpy us':>10s} {'xp us':>10s} {'speed':>6s} | {'tiny np us':>10s} "
          f"{'tiny xp us':>10s}")
    for b, s_ in zip(big, small):
        print(f"{b['op']:15s} {b['dtype']:8s} {b['numpy_median_us']:10.1f} {b['xp_median_us']:10.1f} "
              f"{b['speed_median']:6.2f} | {s_['numpy_median_us']:10.2f} {s_['xp_median_us']:10.2f}")
    return {"threads": threads, "info": info, "median_speed": med, "geomean_speed": geo,
            "xp_faster": sum(r["speed_median"] >= 1 for r in big), "tiny_xp_median_us": tiny_xp,
            "tiny_numpy_median_us": tiny_np, "tiny_cost_ratio": tiny_xp / tiny_np,
            "uint_median_speed": statistics.median(uint) if uint else float("nan"), "rows": big, "tiny_rows": small}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--threads", default="1,default",
                   help="comma-separated thread settings, each the same on both sides ('default': torch's default)")
    p.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                   "xp_vs_numpy.json"))
    p.add_argument("--sync", choices=("c", "torch"), default="c",
                   help="wait after each xp call: npudist._C._synchronize (default) or torch.npu.synchronize()")
    args = p.parse_args()
    set_sync(args.sync)
    settings = []
    for item in str(args.threads).split(","):
        item = item.strip()
        settings.append(DEFAULT_THREADS if item == "default" else int(item))
    runs = []
    for threads in settings:
        runs.append(run_setting(threads, args))
    print("\n== summary (NumPy time / xp time; tiny: per-op cost at 16 elements) ==")
    for r in runs:
        print(f"threads {r['threads']}: median speed {r['median_speed']:.2f} at {args.size} elements "
              f"(geomean {r['geomean_speed']:.2f}, xp faster in {r['xp_faster']} of {len(r['rows'])}); "
              f"16 elements: xp {r['tiny_xp_median_us']:.1f} us vs NumPy {r['tiny_numpy_median_us']:.1f} us "
              f"= {r['tiny_cost_ratio']:.1f}x; unsigned rows median speed {r['uint_median_speed']:.2f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"size": args.size, "reps": args.reps, "runs": runs, "command": "python " + " ".join(os.sys.argv)},
                  f, indent=1)
    print("JSON:", args.json)


if __name__ == "__main__":
    main()
