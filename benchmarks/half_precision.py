"""bf16 / fp16 on npu vs fp32: GEMMs, a conv2d layer, an autocast MLP step and the flagship's FSDP2 step.

npu's bf16/fp16 GEMMs and convolutions widen to fp32, run the fp32 kernel and round once
(docs/device_api.md, "Half precision"); on CPUs with AVX512-BF16, bf16 GEMMs run PyTorch's native
bf16 GEMM instead, and the GEMM table adds "bf16 widened" (the widening kernel) beside it. Each half-precision figure is measured twice in the same
run, interleaved: with those kernels ("npu") and with them switched off (``npudist._C.
_half_kernels_enabled(False)``: PyTorch's CPU half-precision kernels, which is what npu ran
before, "before"). Ratios are to the fp32 time of the same run. Goal: half/fp32 <= 1.3.

    ./run.sh bench half_precision                       # everything (a few minutes on 2 busy cores)
    ./run.sh bench half_precision --parts gemm conv mlp --sizes 256 512 1024
    ./run.sh bench half_precision --parts flagship --steps 3 --reps 3

--before-max-size: the "before" side of a GEMM is skipped above this size (the CPU's fp16 GEMM
takes minutes at 4096). Times are per call (GEMM, conv) or per training step, median and best of
--reps; one thread per process (as npurun gives each rank), unless --threads.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _timing import timed  # noqa: E402  (benchmarks/ is not a package)


def _stats(ts):
    return {"median_s": statistics.median(ts), "best_s": min(ts), "times_s": ts}


def _measure(sides, reps, calls):
    """{name: stats}: each side's fn timed `calls` times per rep, reps interleaved; a side is
    (fn, before) where before=True runs it with npudist's half kernels off."""
    from npudist import _C

    times = {name: [] for name in sides}
    for fn, before in sides.values():  # warm-up
        prev = _C._half_kernels_enabled(not before)
        try:
            fn()
        finally:
            _C._half_kernels_enabled(prev)
    for _ in range(reps):
        for name, (fn, before) in sides.items():
            prev = _C._half_kernels_enabled(not before)
            try:
                times[name].append(timed(fn, calls))
            finally:
                _C._half_kernels_enabled(prev)
    return {name: _stats(ts) for name, ts in times.items()}


def _row(label, res, base="fp32"):
    out = {"case": label, **res}
    b = res[base]["median_s"]
    cells = [f"{label:>24}", f"{res[base]['median_s'] * 1e3:>9.2f}"]
    for name, r in res.items():
        if name == base:
            continue
        out[f"{name}/{base}"] = r["median_s"] / b
        out[f"{name}/{base} best"] = r["best_s"] / res[base]["best_s"]
        cells.append(f"{name} {r['median_s'] * 1e3:9.2f} ms x{r['median_s'] / b:6.2f} "
                     f"(best x{r['best_s'] / res[base]['best_s']:.2f})")
    print(" | ".join(cells), flush=True)
    return out


def _widened(fn):
    from npudist import _C

    prev = _C._half_gemm_native_bf16(False)
    try:
        return fn()
    finally:
        _C._half_gemm_native_bf16(prev)


def bench_gemm(args):
    import torch

    from npudist import _C

    dev = torch.device("npu")
    rows = []
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        a32 = torch.randn(n, n, generator=g).to(dev)
        b32 = torch.randn(n, n, generator=g).to(dev)
        calls = max(1, int(2e9 // (n ** 3)))  # >= 1 ms of fp32 GEMM per timed sample
        sides = {"fp32": (lambda a=a32, b=b32: a @ b, False)}
        for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
            a, b = a32.to(dt), b32.to(dt)
            sides[name] = (lambda a=a, b=b: a @ b, False)
            if dt == torch.bfloat16 and _C._half_gemm_native_bf16_available():
                # bf16 runs PyTorch's native bf16 GEMM on AVX512-BF16 CPUs; "bf16 widened" is the
                # widening kernel it replaces there (run-time choice, core/aten/half_gemm.h).
                sides["bf16 widened"] = (lambda a=a, b=b: _widened(lambda: a @ b), False)
            if n <= args.before_max_size:
                sides[f"{name} before"] = (lambda a=a, b=b: a @ b, True)
        rows.append(_row(f"mm {n}x{n}x{n}", _measure(sides, args.reps, calls)))
    return rows


def bench_conv(args):
    import torch
    import torch.nn.functional as F

    dev = torch.device("npu")
    g = torch.Generator().manual_seed(0)
    b, c, hw = args.conv
    x32 = torch.randn(b, c, hw, hw, generator=g).to(dev)
    w32 = (torch.randn(c, c, 3, 3, generator=g) / (3 * c ** 0.5)).to(dev)
    bias32 = torch.randn(c, generator=g).to(dev)

    def step(x, w, bias):
        x = x.detach().requires_grad_()
        w = w.detach().requires_grad_()
        y = F.conv2d(x, w, bias, padding=1)
        y.sum().backward()

    sides = {"fp32": (lambda: step(x32, w32, bias32), False)}
    for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        x, w, bias = x32.to(dt), w32.to(dt), bias32.to(dt)
        sides[name] = (lambda x=x, w=w, bias=bias: step(x, w, bias), False)
        if not args.no_conv_before:
            sides[f"{name} before"] = (lambda x=x, w=w, bias=bias: step(x, w, bias), True)
    return [_row(f"conv2d {c}->{c} 3x3 {b}x{hw}x{hw} fwd+bwd", _measure(sides, args.reps, 1))]


def bench_mlp(args):
    import torch
    import torch.nn as nn

    dev = torch.device("npu")
    torch.manual_seed(0)
    d = args.mlp_dim
    model = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.mlp_batch, d, device=dev)

    def step(dtype):
        with torch.autocast("npu", dtype=dtype, enabled=dtype is not None):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()

    sides = {"fp32": (lambda: step(None), False),
             "bf16": (lambda: step(torch.bfloat16), False), "bf16 before": (lambda: step(torch.bfloat16), True),
             "fp16": (lambda: step(torch.float16), False), "fp16 before": (lambda: step(torch.float16), True)}
    return [_row(f"autocast MLP {d}->{4 * d}->{d} x{args.mlp_batch}", _measure(sides, args.reps, 2))]


def flagship_worker(args):
    import torch
    import torch.distributed as dist
    from _ranks import init_npu_rank

    dev = init_npu_rank()
    from train_gpt import GPTConfig, build_fsdp_model

    cfg = GPTConfig()
    models = {}
    for mp in ("fp32", "bf16"):
        m = build_fsdp_model(cfg, dev, mp)
        models[mp] = (m, torch.optim.AdamW(m.parameters(), lr=1e-3))
    g = torch.Generator().manual_seed(dist.get_rank())
    x = torch.randint(0, 256, (args.batch, cfg.seq_len + 1), generator=g).to(dev)

    def step(mp):
        m, o = models[mp]
        _, loss = m(x[:, :-1], x[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        o.step()
        o.zero_grad()
        loss.item()

    def run(mp, before):
        from npudist import _C

        prev = _C._half_kernels_enabled(not before)
        try:
            dist.barrier()
            return timed(lambda: step(mp), args.steps)
        finally:
            _C._half_kernels_enabled(prev)

    sides = {"fp32": ("fp32", False), "bf16": ("bf16", False)}
    if not args.no_flagship_before:
        sides["bf16 before"] = ("bf16", True)
    for mp, before in sides.values():
        run(mp, before)
    times = {name: [] for name in sides}
    peaks = {}
    for _ in range(args.reps):
        for name, (mp, before) in sides.items():
            times[name].append(run(mp, before))
    for name, (mp, before) in sides.items():  # the allocator's peak over one step of each
        torch.npu.synchronize()
        torch.npu.reset_peak_memory_stats(dev)
        run(mp, before)
        peaks[name] = torch.npu.max_memory_allocated(dev)
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump({"times": times, "peak_bytes": peaks}, f)
    dist.destroy_process_group()


def bench_flagship(args):
    from npudist.testing.multiproc import inherited
    from npudist.testing.npurun import run_npurun

    out = os.path.join(os.path.dirname(args.json), "half_precision_flagship.tmp")
    cmd = ["--nproc", args.ranks, os.path.abspath(__file__), "--worker", "--out", out, "--reps", args.reps,
           "--steps", args.steps, "--batch", args.batch] + (["--no-flagship-before"] if args.no_flagship_before
                                                               else [])
    r = run_npurun(cmd, env=inherited("HCCL_", "NPUDIST_"), timeout=None)
    if r.returncode != 0:
        sys.exit(f"flagship ranks failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    with open(out) as f:
        res = json.load(f)
    os.remove(out)
    row = _row(f"flagship step {args.ranks} ranks b{args.batch}", {k: _stats(v) for k, v in res["times"].items()})
    row["peak_bytes"] = res["peak_bytes"]
    print(" " * 24 + " | allocator peak (MiB, rank 0): "
          + ", ".join(f"{k} {v / 2 ** 20:.1f}" for k, v in res["peak_bytes"].items()))
    return [row]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", nargs="+", default=["gemm", "conv", "mlp", "flagship"],
                   choices=["gemm", "conv", "mlp", "flagship"])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096], help="square GEMM sizes")
    p.add_argument("--before-max-size", type=int, default=512,
                   help="largest GEMM size also timed with the CPU's half kernels (fp16 is ~150x slower)")
    p.add_argument("--conv", type=int, nargs=3, default=[8, 64, 32], metavar=("BATCH", "CHANNELS", "HW"))
    p.add_argument("--no-conv-before", action="store_true", help="skip the CPU half-precision conv (slow for fp16)")
    p.add_argument("--mlp-dim", type=int, default=512)
    p.add_argument("--mlp-batch", type=int, default=256)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--batch", type=int, default=8, help="flagship sequences per rank")
    p.add_argument("--steps", type=int, default=3, help="flagship steps per repetition")
    p.add_argument("--no-flagship-before", action="store_true")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    p.add_argument("--threads", type=int, default=1, help="torch threads in this process")
    p.add_argument("--json", default=os.path.join(HERE, "results", "half_precision.json"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.worker:
        return flagship_worker(args)
    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    print(f"half precision on npu vs fp32 (median of {args.reps} interleaved reps; 'before' = npudist's half "
          f"kernels off, i.e. PyTorch's CPU half kernels); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'case':>24} | {'fp32 ms':>9} | others: median ms, x = ratio to fp32 (median; best of reps)")
    rows = []
    for part in args.parts:
        rows += {"gemm": bench_gemm, "conv": bench_conv, "mlp": bench_mlp, "flagship": bench_flagship}[part](args)
    with open(args.json, "w") as f:
        json.dump({"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                   "reps": args.reps, "threads": args.threads, "rows": rows}, f, indent=1)
    print(f"\nJSON: {args.json}")


if __name__ == "__main__":
    main()
