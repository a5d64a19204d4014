"""xp.ElementwiseKernel / xp.ReductionKernel and xp.fuse vs the same computation as a chain of xp
ufuncs (what a user writes without them), on --size elements (default 1M float32), in one
process, interleaved; plus the first-call compile times.

Workloads:
  elementwise  z = sqrt(x*x + y*y) * 2 - sin(x)      (6 ufunc calls unfused, 5 temporaries)
  reduction    sqrt(sum(x*x))                         (3 calls unfused)
Each rep times every variant back to back (chain, kernel, fuse, and NumPy for reference); the
table gives median and best per call over --reps and the speed ratios chain time / variant time
(> 1: the variant is faster). torch's thread count applies to the ufunc chain and to the fused
(Inductor, OpenMP) kernels; an ElementwiseKernel runs on one thread.

Compile times: the first call of a new ElementwiseKernel with an empty kernel cache (g++), the
same kernel loaded from the disk cache by a fresh object (no compile), and the first call of
xp.fuse (make_fx trace + torch.compile/Inductor). Inductor's own caches are pointed at an empty
directory (unless --warm-inductor-cache) so the fuse figure is a cold compile.

    python benchmarks/xp_kernels.py [--reps 7] [--size 1000000] [--json benchmarks/results/xp_kernels.json]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--warm-inductor-cache", action="store_true")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "xp_kernels.json"))
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="xp_kernels_bench_")
    os.environ["NPUDIST_XP_KERNEL_CACHE"] = os.path.join(tmp, "kernels")
    if not args.warm_inductor_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")

    import numpy as np
    import torch

    import npudist.xp as xp
    from npudist.xp._kernel import _build

    rng = np.random.default_rng(0)
    xn = rng.random(args.size, dtype=np.float32)
    yn = rng.random(args.size, dtype=np.float32)
    x, y = xp.asarray(xn), xp.asarray(yn)

    # ---- the variants
    def ew_chain(a, b):
        return xp.sqrt(a * a + b * b) * 2 - xp.sin(a)

    def ew_numpy(a, b):
        return np.sqrt(a * a + b * b) * 2 - np.sin(a)

    ew_src = ("T x, T y", "T z", "z = sqrt(x * x + y * y) * 2 - sin(x)", "hypot2_minus_sin")
    ew_kernel = xp.ElementwiseKernel(*ew_src)
    ew_fused = xp.fuse(ew_chain)

    def red_chain(a):
        return xp.sqrt(xp.sum(a * a))

    def red_numpy(a):
        return np.sqrt(np.sum(a * a))

    red_kernel = xp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    red_fused = xp.fuse(red_chain)

    compile_times = {}
    t0 = time.perf_counter()
    ew_kernel(x, y)
    compile_times["ElementwiseKernel first call (g++, empty cache) s"] = time.perf_counter() - t0
    _build.clear_memory_cache()
    again = xp.ElementwiseKernel(*ew_src)
    t0 = time.perf_counter()
    again(x, y)
    compile_times["ElementwiseKernel first call, library in disk cache s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    red_kernel(x)
    compile_times["ReductionKernel first call (g++, empty cache) s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ew_fused(x, y)
    compile_times["fuse first call, elementwise (trace + Inductor) s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    red_fused(x)
    compile_times["fuse first call, reduction (trace + Inductor) s"] = time.perf_counter() - t0

    # correctness before speed
    ref = xp.asnumpy(ew_chain(x, y))
    for name, f in (("ElementwiseKernel", ew_kernel), ("fuse", ew_fused)):
        np.testing.assert_allclose(xp.asnumpy(f(x, y)), ref, rtol=1e-5, atol=1e-6, err_msg=name)
    rref = float(red_chain(x))
    for name, f in (("ReductionKernel", red_kernel), ("fuse", red_fused)):
        assert abs(float(f(x)) - rref) <= 1e-4 * rref, name

    workloads = {
        "elementwise": [("ufunc chain", lambda: ew_chain(x, y)), ("ElementwiseKernel", lambda: ew_kernel(x, y)),
                        ("fuse", lambda: ew_fused(x, y)), ("NumPy", lambda: ew_numpy(xn, yn))],
        "reduction": [("ufunc chain", lambda: red_chain(x)), ("ReductionKernel", lambda: red_kernel(x)),
                      ("fuse", lambda: red_fused(x)), ("NumPy", lambda: red_numpy(xn))],
    }

    def timeit(fn):
        fn()
        n, t = 1, 0.0
        while True:   # enough calls for ~30 ms
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - t0
            if t >= 0.03:
                return t / n
            n *= 2

    results = {}
    for wname, variants in workloads.items():
        times = {name: [] for name, _ in variants}
        for _ in range(args.reps):
            for name, fn in variants:        # interleaved: every variant once per rep
                times[name].append(timeit(fn))
        results[wname] = {name: {"median_s": statistics.median(ts), "best_s": min(ts)} for name, ts in times.items()}
        chain = results[wname]["ufunc chain"]["median_s"]
        for name in results[wname]:
            results[wname][name]["speedup_vs_chain"] = chain / results[wname][name]["median_s"]

    load = os.getloadavg()
    print(f"xp kernels vs ufunc chains: {args.size} float32 elements, {args.reps} reps (median / best per call), "
          f"torch threads {torch.get_num_threads()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'workload':<12} {'variant':<18} {'median ms':>10} {'best ms':>9} {'chain/variant':>14}")
    for wname, res in results.items():
        for name, r in res.items():
            print(f"{wname:<12} {name:<18} {r['median_s'] * 1e3:>10.3f} {r['best_s'] * 1e3:>9.3f} "
                  f"{r['speedup_vs_chain']:>14.2f}")
    print("first-call compile times:")
    for k, v in compile_times.items():
        print(f"  {k:<58} {v:7.2f}")
    out = {"size": args.size, "dtype": "float32", "reps": args.reps, "torch_threads": torch.get_num_threads(),
           "loadavg": load, "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
           "platform": platform.platform(), "inductor_cache": "warm" if args.warm_inductor_cache else "cold",
           "results": results, "compile_times_s": compile_times, "command": " ".join(sys.argv)}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
