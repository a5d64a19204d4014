"""A hardware file (docs/plan.md) for the simulated npu of this machine, from microbenchmarks only.

Measures, one thread per rank as npurun runs ranks (OMP_NUM_THREADS=1):
- GEMM throughput per dtype: torch.mm on npu, square sizes (float32 256/512/1024, bfloat16 and
  float16 128/256: this CPU has no fast half-precision GEMM), best of --reps -> peak_tflops;
- the launch cost: torch.profiler's device span of torch.add on one-element npu tensors, median of
  1000 -> launch_us (the whole call, host included, is printed for reference);
- memory bandwidth: torch.add(a, b, out=c) on 16 Mi float32 npu tensors (3 x 64 MiB moved) -> bandwidth_gbps;
- capacity: torch.npu.get_device_properties(0).total_memory;
- hccl latency and bus bandwidth: benchmarks/collectives.py at 2 ranks (all_reduce, all_gather,
  reduce_scatter; 8 B .. 16 MiB, --no-gloo): latency = the time of the smallest size, bus bandwidth =
  the median over families of S x busfactor / (t - latency) at the largest size;
- compute resources: the CPUs this process may run on (os.sched_getaffinity).

It never runs or reads the flagship. Writes the TOML (each number with its source in a comment)
and a JSON of the raw measurements:

    python benchmarks/plan_hardware_here.py [--out benchmarks/results/plan_hardware_here.toml] [--reps 3]
        [--coll-max 16M]

About 1-2 minutes on a quiet 2-core machine; the machine being busy lowers every rate.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _time(fn, iters: int) -> float:
    import torch
    fn()
    torch.npu.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.npu.synchronize()
    return (time.perf_counter() - t) / iters


def gemm_peaks(reps: int) -> dict:
    import torch
    out = {}
    sizes = {"float32": [256, 512, 1024], "bfloat16": [128, 256], "float16": [128, 256]}
    for dtype, ns in sizes.items():
        best = {}
        for n in ns:
            a = torch.randn(n, n, device="npu").to(getattr(torch, dtype))
            b = torch.randn(n, n, device="npu").to(getattr(torch, dtype))
            iters = max(1, int(2e8 / (2 * n ** 3))) if dtype == "float32" else 1
            ts = [_time(lambda a=a, b=b: torch.mm(a, b), iters) for _ in range(reps)]
            best[n] = 2 * n ** 3 / min(ts)
        out[dtype] = {"tflops": max(best.values()) / 1e12, "by_size_tflops": {str(k): v / 1e12 for k, v in best.items()}}
    return out


def small_op_us(reps: int) -> float:
    """Host + device cost of a tiny op (Python call, dispatch, fallback, kernel), for reference."""
    import torch
    x = torch.ones(1, device="npu")
    y = torch.ones(1, device="npu")
    return min(_time(lambda: torch.add(x, y), 2000) for _ in range(reps)) * 1e6


def kernel_us() -> float:
    """Device-side duration of a tiny kernel (the span torch.profiler gives "aten::add (npu kernel)"), median
    of 1000: the launch cost per kernel; the host's own time per op is in each trace's host gaps."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    x = torch.ones(1, device="npu")
    y = torch.ones(1, device="npu")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        for _ in range(1000):
            torch.add(x, y)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        prof.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
    durs = [e["dur"] for e in ev if e.get("name") == "aten::add (npu kernel)" and "dur" in e]
    return statistics.median(durs)


def mem_bandwidth(reps: int) -> float:
    import torch
    n = 16 << 20
    a, b, c = (torch.ones(n, device="npu") for _ in range(3))
    t = min(_time(lambda: torch.add(a, b, out=c), 5) for _ in range(reps))
    return 3 * n * 4 / t / 1e9


def collectives(coll_max: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "coll.json")
        cmd = [sys.executable, os.path.join(HERE, "collectives.py"), "--ranks", "2", "-b", "8", "-e", coll_max,
               "--reps", "2", "--no-gloo", "--ops", "all_reduce", "all_gather", "reduce_scatter", "--json", out]
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise SystemExit(f"benchmarks/collectives.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        rows = json.load(open(out))["results"]["2"]
    fam = {}
    n = 2
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}
    for op in factor:
        rr = sorted((r for r in rows if r["op"] == op), key=lambda r: r["size"])
        lat = rr[0]["hccl_us"] * 1e-6
        big = rr[-1]
        bw = big["size"] * factor[op] / max(big["hccl_us"] * 1e-6 - lat, 1e-9)
        fam[op] = {"latency_us": lat * 1e6, "busbw_gbps": bw / 1e9, "largest_size": big["size"]}
    return fam


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(HERE, "results", "plan_hardware_here.toml"))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--coll-max", default="16M", help="largest collective size (benchmarks/collectives.py -e)")
    args = p.parse_args(argv)

    import torch
    torch.set_num_threads(1)  # npurun gives each rank one thread when it starts several
    import npudist  # noqa: F401 - registers the npu device

    load = os.getloadavg()[0]
    t0 = time.time()
    peaks = gemm_peaks(args.reps)
    small = small_op_us(args.reps)
    launch = kernel_us()
    bw = mem_bandwidth(args.reps)
    cap = torch.npu.get_device_properties(0).total_memory / 2**30
    cpus = len(os.sched_getaffinity(0))
    coll = collectives(args.coll_max)
    bus = statistics.median(c["busbw_gbps"] for c in coll.values())
    lat = {k: v["latency_us"] for k, v in coll.items()}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    peak_line = ", ".join(f"{k} = {v['tflops']:.6g}" for k, v in peaks.items())
    toml = f"""# The simulated npu of this machine, measured by benchmarks/plan_hardware_here.py on {when}
# (load average {load:.1f} at start; {cpus} CPUs). Every number below comes from a microbenchmark of that
# script; none from the flagship. docs/plan.md, "This machine".
name = "simulated-npu-here"
[node]
devices = 8                     # NPUDIST_DEVICE_COUNT's default: all ranks of a job on one host
compute_resources = {cpus}           # os.sched_getaffinity: CPUs the ranks share
[compute]
# torch.mm on npu, one thread, best of {args.reps} at square sizes (by size: see the JSON)
peak_tflops = {{ {peak_line} }}
efficiency = 1.0                # the peaks above are sustained rates already
gemm_tile = [1, 1, 1]           # a CPU core has no tile/wave quantisation worth modelling
cores = 1
min_efficiency = 0.0
launch_us = {launch:.3f}            # torch.profiler's "aten::add (npu kernel)" on 1-element tensors, median of 1000
host_us = 0.0                   # the host's time per op is in the trace's host gaps (recorded here)
host_speed = 1.0                # the traces are recorded on this host
host_blocking = true            # the simulated npu runs a kernel on the thread that issues it
[memory]
capacity_gib = {cap:.3f}        # torch.npu.get_device_properties(0).total_memory
bandwidth_gbps = {bw:.3f}       # torch.add(a, b, out=c), 16 Mi float32: 3 x 64 MiB per call
host_link_gbps = {bw:.3f}       # host and npu memory are the same DRAM here
[intra_node]
topology = "bus"                # shared memory: any group reaches the same bus bandwidth
bus_gbps = {bus:.3f}            # benchmarks/collectives.py, 2 ranks, median busbw over families at {args.coll_max}
[intra_node.latency_us]         # benchmarks/collectives.py, 2 ranks, 8 B
default = {statistics.median(lat.values()):.3f}
all_reduce = {lat['all_reduce']:.3f}
all_gather = {lat['all_gather']:.3f}
reduce_scatter = {lat['reduce_scatter']:.3f}
[inter_node]
nic_gbps = 0.1                  # not measured: one host (two-host runs go through Gloo over loopback)
latency_us = 300.0              # not measured: Gloo's loopback latency (/work/shared/BENCHMARKING.md)
"""
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(toml)
    raw = {"date": when, "load_average": load, "cpus": cpus, "gemm": peaks, "small_op_us": small, "kernel_us": launch,
           "mem_bandwidth_gbps": bw, "capacity_gib": cap, "collectives_2_ranks": coll, "seconds": time.time() - t0}
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(raw, f, indent=1)
    print(f"{'measurement':<34} {'value':>12}")
    for k, v in peaks.items():
        print(f"{'GEMM peak ' + k + ' (TFLOP/s)':<34} {v['tflops']:>12.4f}")
    print(f"{'small op, host + device (us)':<34} {small:>12.2f}")
    print(f"{'small kernel, device (us)':<34} {launch:>12.2f}")
    print(f"{'memory bandwidth (GB/s)':<34} {bw:>12.2f}")
    for k, v in coll.items():
        print(f"{'hccl ' + k + ' latency (us)':<34} {v['latency_us']:>12.2f}")
        print(f"{'hccl ' + k + ' busbw (GB/s)':<34} {v['busbw_gbps']:>12.2f}")
    print(f"{'CPUs':<34} {cpus:>12d}")
    print(f"wrote {args.out} ({time.time() - t0:.0f} s; load average {load:.1f} at start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
