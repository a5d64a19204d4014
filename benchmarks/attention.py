"""scaled_dot_product_attention forward + backward: npu's memory-efficient kernel vs the math path
on npu and vs cpu's flash kernel, and peak memory vs the math path.

Three variants run on the same inputs, interleaved, in one process:
  npu efficient  F.scaled_dot_product_attention on npu tensors under sdpa_kernel(EFFICIENT_ATTENTION)
                 -> aten::_scaled_dot_product_efficient_attention(_backward), npudist's blocked kernel
  npu math       the same under sdpa_kernel(MATH) -> the composite math path (seq x seq matrices)
  cpu flash      the same on cpu tensors under sdpa_kernel(FLASH_ATTENTION)
                 -> aten::_scaled_dot_product_flash_attention_for_cpu(_backward), PyTorch's CPU kernel
(the ops each variant ran are checked once, on a small input, before timing).
Time: one forward + backward (out.backward(grad)), median and best of --reps repetitions. Goal:
npu efficient / cpu flash <= 1.0. Memory: torch.npu.max_memory_allocated during one forward +
backward, above what was allocated before (inputs, grads of earlier runs freed), efficient vs math.
The kernel's scratch (per thread: up to 4 score-sized blocks, 256 x 512 fp32 at most, and the fp32
accumulators of one query block or one head) counts as npu memory when it is allocated on the calling
thread, as always with --threads 1.

    python benchmarks/attention.py [--seqs 512,1024,2048,4096] [--head-dims 64,128] [--batch 1]
        [--heads 4] [--dtype float32|bfloat16|both] [--no-causal] [--threads 1] [--reps 3]
        [--json benchmarks/results/attention.json]

A full default run takes 3-6 minutes on 2 busy cores.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

import npudist  # registers npu

VARIANTS = {
    "npu efficient": ("npu", SDPBackend.EFFICIENT_ATTENTION, "aten::_scaled_dot_product_efficient_attention"),
    "npu math": ("npu", SDPBackend.MATH, "aten::_scaled_dot_product_attention_math"),
    "cpu flash": ("cpu", SDPBackend.FLASH_ATTENTION, "aten::_scaled_dot_product_flash_attention_for_cpu"),
}


class _OpNames(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.name())
        return func(*args, **(kwargs or {}))


def make_step(device, backend, b, h, seq, d, dtype, causal):
    g = torch.Generator().manual_seed(0)
    q, k, v, grad = (torch.randn(b, h, seq, d, generator=g).to(device, dtype) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)

    def step():
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(grad)
        q.grad = k.grad = v.grad = None

    return step


def check_ops(dtype, causal):
    """Which aten ops each variant actually runs (a small input)."""
    ran = {}
    for name, (device, backend, want) in VARIANTS.items():
        step = make_step(device, backend, 1, 2, 64, 64, dtype, causal)
        with _OpNames() as ops:
            step()
        # The math path is CompositeImplicit: below autograd it shows as its pieces (bmm, softmax).
        ran[name] = want in ops.names or (want.endswith("_math") and "aten::_safe_softmax" in ops.names
                                          and not any("_scaled_dot_product" in n for n in ops.names))
        if not ran[name]:
            raise SystemExit(f"{name} did not run {want}: {sorted(ops.names)}")
    return ran


def peak_bytes(step):
    torch.npu.synchronize()
    base = torch.npu.memory_allocated()
    torch.npu.reset_peak_memory_stats()
    step()
    return torch.npu.max_memory_allocated() - base


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seqs", default="512,1024,2048,4096")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "both"],
                    help="both: a float32 table, then a bfloat16 one")
    ap.add_argument("--no-causal", action="store_true", help="full attention (default: is_causal=True)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both sides)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "attention.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    causal = not args.no_causal
    dtypes = ["float32", "bfloat16"] if args.dtype == "both" else [args.dtype]
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; native bf16 attention kernels: "
          f"{npudist._C._bf16_attention_native_available()}")
    rows = []
    for dtype_name in dtypes:
        rows += run_table(args, dtype_name, causal)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    result = dict(benchmark="attention", date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  commit=commit, torch=torch.__version__, ops_checked=True, args=vars(args), rows=rows,
                  load_average_start=load, load_average_end=os.getloadavg(),
                  native_bf16=npudist._C._bf16_attention_native_available())
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.json}")


def run_table(args, dtype_name, causal):
    dtype = getattr(torch, dtype_name)
    check_ops(dtype, causal)
    rows = []
    print(f"SDPA forward+backward, batch {args.batch}, heads {args.heads}, {dtype_name}, causal={causal}, "
          f"{args.threads} thread(s), median (best) of {args.reps}; ratio = npu efficient / other (median)")
    hdr = (f"{'seq':>5} {'dim':>4} | {'npu eff ms':>16} {'cpu flash ms':>16} {'npu math ms':>16} | "
           f"{'eff/flash':>9} {'eff/math':>8} | {'peak eff MiB':>12} {'peak math MiB':>13} {'mem ratio':>9}")
    print(hdr)
    print("-" * len(hdr))
    for seq in (int(s) for s in args.seqs.split(",")):
        for d in (int(x) for x in args.head_dims.split(",")):
            steps = {n: make_step(dev, be, args.batch, args.heads, seq, d, dtype, causal)
                     for n, (dev, be, _) in VARIANTS.items()}
            for fn in steps.values():  # warm-up
                fn()
            times = {n: [] for n in steps}
            for _ in range(args.reps):
                for n, fn in steps.items():
                    t0 = time.perf_counter()
                    fn()
                    times[n].append((time.perf_counter() - t0) * 1e3)
            peaks = {n: peak_bytes(steps[n]) for n in ("npu efficient", "npu math")}
            med = {n: statistics.median(t) for n, t in times.items()}
            row = dict(seq=seq, head_dim=d, batch=args.batch, heads=args.heads, dtype=dtype_name, causal=causal,
                       threads=args.threads, reps=args.reps,
                       **{f"{n.replace(' ', '_')}_ms_median": med[n] for n in med},
                       **{f"{n.replace(' ', '_')}_ms_best": min(times[n]) for n in times},
                       ratio_eff_over_cpu_flash=med["npu efficient"] / med["cpu flash"],
                       ratio_eff_over_math=med["npu efficient"] / med["npu math"],
                       peak_bytes_efficient=peaks["npu efficient"], peak_bytes_math=peaks["npu math"],
                       peak_ratio=peaks["npu efficient"] / peaks["npu math"])
            rows.append(row)
            fmt = lambda n: f"{med[n]:8.1f} ({min(times[n]):6.1f})"  # noqa: E731  (table cell)
            print(f"{seq:>5} {d:>4} | {fmt('npu efficient')} {fmt('cpu flash')} {fmt('npu math')} | "
                  f"{row['ratio_eff_over_cpu_flash']:9.2f} {row['ratio_eff_over_math']:8.2f} | "
                  f"{peaks['npu efficient'] / 2**20:12.1f} {peaks['npu math'] / 2**20:13.1f} "
                  f"{row['peak_ratio']:9.3f}", flush=True)
            del steps
    return rows

if __name__ == "__main__":
    main()
