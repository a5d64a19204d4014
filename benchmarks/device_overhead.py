"""Device-core overhead: npu (simulated, zero-copy fallback) vs cpu, in one process.

(1) A GPT-style decoder (4 layers, d_model 256, 4 heads, sequence 128, batch 8,
    fp32): forward + backward + AdamW step, npu vs cpu. Target npu/cpu <= 1.05.
(2) Per-call latency of add, mul, a view and an index on 1- and 1024-element
    tensors, npu vs cpu, in microseconds (report).
(3) Cost of the CPU-allocator redirect on ordinary CPU allocations when no
    redirect is active: torch.empty(1) and an add on cpu tensors, in processes
    with and without npudist loaded.

Repetitions are interleaved (cpu, npu, cpu, npu, ...) and torch runs with one
thread on both sides. Prints tables and writes JSON.

    python benchmarks/device_overhead.py [--reps 7] [--json benchmarks/results/device_overhead.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
from _models import gpt_train_step
from _timing import timed


def bench_gpt(reps, steps):
    steps_fn = {"cpu": gpt_train_step("cpu"), "npu": gpt_train_step("npu")}
    for fn in steps_fn.values():  # warm-up (allocator caches, first-touch pages)
        for _ in range(2):
            fn()
    times = {"cpu": [], "npu": []}

    def sync_step(dev):
        loss = steps_fn[dev]()
        loss.item()

    for _ in range(reps):
        for dev in ("cpu", "npu"):
            times[dev].append(timed(lambda: sync_step(dev), steps))
    ratios = [n / c for n, c in zip(times["npu"], times["cpu"])]
    return {
        "cpu_median_ms": statistics.median(times["cpu"]) * 1e3,
        "npu_median_ms": statistics.median(times["npu"]) * 1e3,
        "cpu_best_ms": min(times["cpu"]) * 1e3,
        "npu_best_ms": min(times["npu"]) * 1e3,
        "ratio_median": statistics.median(ratios),
        "ratio_best": min(times["npu"]) / min(times["cpu"]),
        "reps": reps,
        "steps_per_rep": steps,
    }


def bench_latency(reps, calls):
    rows = []
    for numel in (1, 1024):
        tensors = {d: (torch.ones(numel, device=d), torch.ones(numel, device=d)) for d in ("cpu", "npu")}
        index = {d: torch.tensor([0], device=d) for d in ("cpu", "npu")}
        ops = {
            "add": lambda d: torch.add(*tensors[d]),
            "mul": lambda d: torch.mul(*tensors[d]),
            "view": lambda d: tensors[d][0].view(-1),
            "index": lambda d: tensors[d][0][index[d]],
        }
        for name, op in ops.items():
            res = {"cpu": [], "npu": []}
            for d in res:
                timed(lambda: op(d), calls // 10)
            for _ in range(reps):
                for d in ("cpu", "npu"):
                    res[d].append(timed(lambda: op(d), calls) * 1e6)
            rows.append({
                "op": name, "numel": numel,
                "cpu_us": statistics.median(res["cpu"]), "npu_us": statistics.median(res["npu"]),
                "ratio": statistics.median(res["npu"]) / statistics.median(res["cpu"]),
            })
    return rows


ALLOC_PROBE = """
import time, torch
torch.set_num_threads(1)
a, b = torch.ones(4), torch.ones(4)
def t(fn, n=200000):
    for _ in range(n // 10): fn()
    t0 = time.perf_counter()
    for _ in range(n): fn()
    return (time.perf_counter() - t0) / n * 1e9
print(t(lambda: torch.empty(1)), t(lambda: torch.add(a, b)), int(hasattr(torch, "npu") and torch.npu is not None))
"""


def bench_cpu_alloc(reps):
    res = {"without": [], "with": []}
    for _ in range(reps):
        for label, autoload in (("without", "0"), ("with", "1")):
            env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD=autoload)
            out = subprocess.run([sys.executable, "-c", ALLOC_PROBE], env=env, capture_output=True, text=True,
                                 check=True).stdout.split()
            assert out[2] == ("1" if autoload == "1" else "0"), out
            res[label].append((float(out[0]), float(out[1])))
    med = {k: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)) for k, vals in res.items()}
    return {
        "empty_ns_without": med["without"][0], "empty_ns_with": med["with"][0],
        "add_ns_without": med["without"][1], "add_ns_with": med["with"][1],
        "empty_ratio": med["with"][0] / med["without"][0], "add_ratio": med["with"][1] / med["without"][1],
        "reps": reps,
    }


def main():
    ap = argparse.ArgumentParser(description="npu vs cpu overhead of the device core")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=3, help="GPT steps per repetition")
    ap.add_argument("--calls", type=int, default=20000, help="calls per latency repetition")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "device_overhead.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    import npudist  # noqa: F401  (also loaded by autoload)

    gpt = bench_gpt(args.reps, args.steps)
    print(f"\n(1) GPT decoder 4x256, 4 heads, seq 128, batch 8, fp32, fwd+bwd+AdamW; 1 thread; "
          f"{gpt['reps']} interleaved reps x {gpt['steps_per_rep']} steps")
    print(f"{'':8}{'median ms':>12}{'best ms':>10}")
    print(f"{'cpu':8}{gpt['cpu_median_ms']:12.1f}{gpt['cpu_best_ms']:10.1f}")
    print(f"{'npu':8}{gpt['npu_median_ms']:12.1f}{gpt['npu_best_ms']:10.1f}")
    print(f"npu/cpu: median of per-rep ratios {gpt['ratio_median']:.3f}, best/best {gpt['ratio_best']:.3f} "
          f"(target <= 1.05)")

    lat = bench_latency(args.reps, args.calls)
    print(f"\n(2) per-call latency, median of {args.reps} reps x {args.calls} calls (us)")
    print(f"{'op':8}{'numel':>7}{'cpu us':>9}{'npu us':>9}{'npu/cpu':>9}")
    for r in lat:
        print(f"{r['op']:8}{r['numel']:7d}{r['cpu_us']:9.2f}{r['npu_us']:9.2f}{r['ratio']:9.2f}")

    alloc = bench_cpu_alloc(max(3, args.reps // 2))
    print(f"\n(3) cpu-only work with the allocator redirect installed (npudist loaded) vs not; "
          f"median of {alloc['reps']} processes")
    print(f"{'':16}{'without ns':>11}{'with ns':>9}{'ratio':>7}")
    print(f"{'torch.empty(1)':16}{alloc['empty_ns_without']:11.0f}{alloc['empty_ns_with']:9.0f}"
          f"{alloc['empty_ratio']:7.3f}")
    print(f"{'torch.add (4)':16}{alloc['add_ns_without']:11.0f}{alloc['add_ns_with']:9.0f}{alloc['add_ratio']:7.3f}")

    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"gpt": gpt, "latency": lat, "cpu_alloc": alloc, "torch": torch.__version__}, f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
