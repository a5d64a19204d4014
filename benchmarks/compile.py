"""torch.compile on npu: Inductor's C++ kernels on npu memory vs on cpu, vs eager.

A. One GPT decoder block (examples/train_gpt.py's Block: d_model 256, 4 heads, batch 8, seq 64,
   fp32), forward + backward, in one process: compiled npu (backend "inductor"), npugraphs npu
   (backend "npugraphs": Inductor, then replay through torch.npu.NPUGraph), compiled cpu, eager
   npu, eager cpu.
   Each variant is compiled (its first forward+backward, timed as "compile s"; Inductor's FX
   graph cache may shorten it on a second run), warmed up, then timed for --iters iterations,
   --reps times, interleaved across variants. Reported: median and best ms per iteration and
   the ratios compiled npu / compiled cpu (target <= 1.05), eager npu / compiled npu, and
   eager npu / npugraphs npu, compiled npu / npugraphs npu (what graph replay adds to Inductor).
B. The flagship (examples/train_gpt.py under npurun, --ranks ranks, default model) with and
   without --compile: tokens/s of the last logging window (after the compile), --flagship-reps
   runs each, alternating.

    ./run.sh bench compile [--reps 5] [--iters 10] [--no-flagship] [--flagship-steps 30]
        [--json benchmarks/results/compile.json]
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "examples"))


def block_bench(args):
    import torch
    from train_gpt import Block, GPTConfig

    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    cfg = GPTConfig()
    torch.manual_seed(0)
    base = Block(cfg)
    x_cpu = torch.randn(args.batch, args.seq, cfg.d_model)
    variants = {}
    for name, device, backend in (("compiled npu", "npu", "inductor"), ("npugraphs npu", "npu", "npugraphs"),
                                  ("compiled cpu", "cpu", "inductor"), ("eager npu", "npu", None),
                                  ("eager cpu", "cpu", None)):
        block = Block(cfg).to(device)
        block.load_state_dict(base.state_dict())
        fn = torch.compile(block, backend=backend) if backend else block
        variants[name] = (block, fn, x_cpu.to(device), device)

    def sync(device):
        if device == "npu":
            torch.npu.synchronize()

    def step(v):
        block, fn, x, _ = v
        fn(x).square().mean().backward()
        for p in block.parameters():
            p.grad = None

    compile_s = {}
    for name, v in variants.items():
        t0 = time.perf_counter()
        step(v)
        sync(v[3])
        compile_s[name] = time.perf_counter() - t0
        for _ in range(2):  # npugraphs: its 2nd call captures
            step(v)
    times = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, v in variants.items():
            sync(v[3])
            t0 = time.perf_counter()
            for _ in range(args.iters):
                step(v)
            sync(v[3])
            times[name].append((time.perf_counter() - t0) / args.iters * 1e3)
    # the values agree (one more forward each)
    with torch.no_grad():
        ref = variants["eager cpu"][1](variants["eager cpu"][2])
        max_diff = {name: float((v[1](v[2]).cpu() - ref).abs().max()) for name, v in variants.items()}
    return {"config": {"d_model": cfg.d_model, "n_head": cfg.n_head, "batch": args.batch, "seq": args.seq,
                       "threads": torch.get_num_threads()},
            "compile_s": compile_s, "ms": times, "max_abs_diff_vs_eager_cpu": max_diff}


def flagship_run(args, compiled):
    from npudist.testing.multiproc import inherited
    from npudist.testing.npurun import run_npurun

    cmd = ["--nproc", args.ranks, os.path.join(REPO, "examples", "train_gpt.py"),
           "--steps", args.flagship_steps, "--log-every", args.flagship_steps // 3, "--no-resume",
           "--ckpt-dir", os.path.join("/tmp", f"bench_compile_{os.getpid()}"), "--ckpt-every", 0,
           "--sample-len", 0, "--eval-batches", 1, "--max-bytes", 2000000] + (["--compile"] if compiled else [])
    t0 = time.perf_counter()
    r = run_npurun(cmd, env=inherited("HCCL_", "NPUDIST_", "TORCHINDUCTOR_"), timeout=None)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"train_gpt.py {'--compile ' if compiled else ''}failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    rates = [float(m) for m in re.findall(r"\|\s+([\d.]+) tok/s", r.stdout)]
    if not rates:
        sys.exit(f"no tok/s line in train_gpt.py's output:\n{r.stdout[-3000:]}")
    return {"tokens_per_s": rates[-1], "windows": rates, "wall_s": wall}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--iters", type=int, default=10, help="forward+backward iterations per timed repetition")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--no-flagship", dest="flagship", action="store_false")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--flagship-steps", type=int, default=30)
    p.add_argument("--flagship-reps", type=int, default=1)
    p.add_argument("--json", default=os.path.join(HERE, "results", "compile.json"))
    args = p.parse_args()

    out = {"command": " ".join(sys.argv), "reps": args.reps, "iters": args.iters}
    out["block"] = b = block_bench(args)
    print(f"A. GPT block forward+backward, d_model {b['config']['d_model']}, batch {args.batch}x{args.seq}, "
          f"fp32, {b['config']['threads']} threads, {args.reps} reps x {args.iters} iterations (interleaved)")
    print(f"{'variant':<14}{'compile s':>11}{'median ms':>11}{'best ms':>10}{'max |diff|':>12}")
    for name, ts in b["ms"].items():
        print(f"{name:<14}{b['compile_s'][name]:>11.1f}{statistics.median(ts):>11.2f}{min(ts):>10.2f}"
              f"{b['max_abs_diff_vs_eager_cpu'][name]:>12.1e}")
    med = {k: statistics.median(v) for k, v in b["ms"].items()}
    best = {k: min(v) for k, v in b["ms"].items()}
    ratios = {
        "compiled npu / compiled cpu": (med["compiled npu"] / med["compiled cpu"],
                                        best["compiled npu"] / best["compiled cpu"]),
        "eager npu / compiled npu": (med["eager npu"] / med["compiled npu"], best["eager npu"] / best["compiled npu"]),
        "eager cpu / compiled cpu": (med["eager cpu"] / med["compiled cpu"], best["eager cpu"] / best["compiled cpu"]),
        "eager npu / npugraphs npu": (med["eager npu"] / med["npugraphs npu"],
                                      best["eager npu"] / best["npugraphs npu"]),
        "compiled npu / npugraphs npu": (med["compiled npu"] / med["npugraphs npu"],
                                         best["compiled npu"] / best["npugraphs npu"]),
    }
    from torch._dynamo.utils import counters
    out["npugraphs_counters"] = dict(counters["npugraphs"])
    print(f"  npugraphs: {out['npugraphs_counters']} (fallback = runs without replay)")
    out["block_ratios"] = {k: {"median": m, "best": bb} for k, (m, bb) in ratios.items()}
    for k, (m, bb) in ratios.items():
        print(f"  {k:<28} median {m:.3f}  best {bb:.3f}"
              + ("   (target <= 1.05)" if k == "compiled npu / compiled cpu" else ""))

    if args.flagship:
        runs = {"eager": [], "compiled": []}
        for _ in range(args.flagship_reps):
            for name in runs:
                runs[name].append(flagship_run(args, name == "compiled"))
        out["flagship"] = runs
        e = statistics.median(r["tokens_per_s"] for r in runs["eager"])
        c = statistics.median(r["tokens_per_s"] for r in runs["compiled"])
        print(f"\nB. flagship (examples/train_gpt.py, {args.ranks} ranks, {args.flagship_steps} steps, "
              f"tokens/s of the last window)")
        print(f"{'run':<10}{'tokens/s':>10}{'wall s':>9}")
        for name, rs in runs.items():
            for r in rs:
                print(f"{name:<10}{r['tokens_per_s']:>10.0f}{r['wall_s']:>9.1f}")
        print(f"  compiled / eager tokens/s: {c / e:.3f}")
        out["flagship_ratio"] = c / e
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
