"""Cost of torch.profiler's npu activity, measured side by side in one run.

(1) The flagship-like GPT step (benchmarks/_models.py: 4 layers, d_model 256, sequence 128,
    batch 8, fp32, forward + backward + AdamW) on npu with the profiler active
    (activities CPU + PrivateUse1; shapes, memory and stack off) vs not profiling, in one
    process, interleaved. Target on/off <= 1.10. The profiler's start/stop and trace
    processing are outside the timed steps (as in a scheduled profile's active steps).
(2) The same step with the profiler off, npu vs cpu (device_overhead's ratio): the hooks'
    cost when nobody profiles. Target npu/cpu <= 1.05.
(3) 8 B hccl all_reduce latency, 2 ranks, profiler off: this branch vs a baseline checkout
    without the profiler hooks (--baseline REPO: its .venv and built extension; skipped when
    not given), runs interleaved. Target: unchanged.

    python benchmarks/profiler_overhead.py [--reps 5] [--steps 3] [--baseline ../main]
                                           [--json benchmarks/results/profiler_overhead.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _models import gpt_train_step

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def run_steps(step, n):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    if hasattr(torch, "npu"):
        torch.npu.synchronize()
    return (time.perf_counter() - t0) / n


def bench_step(reps, steps):
    npu, cpu = gpt_train_step("npu"), gpt_train_step("cpu")
    for fn in (npu, cpu):
        for _ in range(2):
            fn()
    times = {"npu_profiler_off": [], "npu_profiler_on": [], "cpu": []}
    events = 0
    for _ in range(reps):
        times["cpu"].append(run_steps(cpu, steps))
        times["npu_profiler_off"].append(run_steps(npu, steps))
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                       record_shapes=False, profile_memory=False, with_stack=False)
        prof.start()
        times["npu_profiler_on"].append(run_steps(npu, steps))
        prof.stop()
        events = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    return {"times_s": times, "median_s": med, "best_s": best, "device_events_per_trace": events,
            "on_off_ratio_median": med["npu_profiler_on"] / med["npu_profiler_off"],
            "on_off_ratio_best": best["npu_profiler_on"] / best["npu_profiler_off"],
            "npu_cpu_ratio_median": med["npu_profiler_off"] / med["cpu"],
            "npu_cpu_ratio_best": best["npu_profiler_off"] / best["cpu"]}


ALLREDUCE_WORKER = r"""
import os, time, statistics, torch, torch.distributed as dist
import npudist
rank = int(os.environ["RANK"]); torch.npu.set_device(rank)
dist.init_process_group("hccl")
x = torch.ones(2, device="npu")  # 8 bytes
for _ in range(200): dist.all_reduce(x)
lat = []
for _ in range(int(os.environ["REPS"])):
    dist.barrier(); t0 = time.perf_counter()
    for _ in range(int(os.environ["ITERS"])): dist.all_reduce(x)
    torch.npu.synchronize(); lat.append((time.perf_counter() - t0) / int(os.environ["ITERS"]) * 1e6)
if rank == 0: print("LAT", min(lat), statistics.median(lat), flush=True)
dist.destroy_process_group()
"""


def allreduce_8b(repo, iters, reps, timeout=240):
    from npudist.testing.multiproc import free_port

    python = os.path.join(repo, ".venv", "bin", "python")
    port = free_port()
    procs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NPUDIST_", "HCCL_", "TORCH_HCCL_"))}
        env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), PYTHONPATH=repo, OMP_NUM_THREADS="1", ITERS=str(iters), REPS=str(reps))
        procs.append(subprocess.Popen([python, "-c", ALLREDUCE_WORKER], env=env, cwd=repo,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=timeout) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        if p.returncode:
            raise RuntimeError(f"all_reduce worker of {repo} failed:\n{err[-2000:]}")
    line = next(ln for ln in outs[0][0].splitlines() if ln.startswith("LAT"))
    best, med = map(float, line.split()[1:])
    return best, med


def bench_allreduce(baseline, rounds, iters, reps):
    res = {"branch": [], "baseline": []}
    for _ in range(rounds):
        res["baseline"].append(allreduce_8b(baseline, iters, reps))
        res["branch"].append(allreduce_8b(REPO, iters, reps))
    best = {k: min(b for b, _ in v) for k, v in res.items()}
    med = {k: statistics.median(m for _, m in v) for k, v in res.items()}
    return {"runs_us": res, "best_us": best, "median_us": med,
            "branch_baseline_ratio_best": best["branch"] / best["baseline"],
            "branch_baseline_ratio_median": med["branch"] / med["baseline"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--baseline", default="",
                    help="checkout without the profiler hooks, with its .venv and built extension")
    ap.add_argument("--allreduce-rounds", type=int, default=3)
    ap.add_argument("--allreduce-iters", type=int, default=2000)
    ap.add_argument("--json", default=os.path.join(REPO, "benchmarks", "results", "profiler_overhead.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
    load = os.getloadavg()
    step = bench_step(args.reps, args.steps)
    print(f"load average {load[0]:.1f}; GPT step, {args.reps} reps x {args.steps} steps, interleaved")
    print(f"{'case':<22}{'median ms':>12}{'best ms':>12}")
    for k in ("cpu", "npu_profiler_off", "npu_profiler_on"):
        print(f"{k:<22}{step['median_s'][k] * 1e3:>12.1f}{step['best_s'][k] * 1e3:>12.1f}")
    print(f"profiler on/off: median {step['on_off_ratio_median']:.3f}, best {step['on_off_ratio_best']:.3f} "
          f"(target <= 1.10; {step['device_events_per_trace']} npu events per trace)")
    print(f"npu/cpu, profiler off: median {step['npu_cpu_ratio_median']:.3f}, best {step['npu_cpu_ratio_best']:.3f} "
          f"(target <= 1.05)")
    result = {"load_average": load, "gpt_step": step}
    if args.baseline and os.path.exists(os.path.join(args.baseline, ".venv", "bin", "python")):
        ar = bench_allreduce(args.baseline, args.allreduce_rounds, args.allreduce_iters, 5)
        print(f"8 B all_reduce, 2 ranks, profiler off ({args.allreduce_rounds} interleaved rounds):")
        print(f"{'build':<12}{'best us':>10}{'median us':>12}")
        for k in ("baseline", "branch"):
            print(f"{k:<12}{ar['best_us'][k]:>10.2f}{ar['median_us'][k]:>12.2f}")
        print(f"branch/baseline: best {ar['branch_baseline_ratio_best']:.3f}, "
              f"median {ar['branch_baseline_ratio_median']:.3f} (target: unchanged)")
        result["allreduce_8b"] = ar
        result["baseline"] = args.baseline
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
