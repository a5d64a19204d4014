"""Launcher start-up: `npurun --nproc 4` + hccl vs `torchrun --nproc-per-node 4` + gloo.

Measures the wall time from starting the launcher until every rank has initialised its
process group (init_process_group followed by a first all_reduce, so a lazily created
communicator counts), on the same rank script, interleaved in one run (the order
alternates each repetition). Prints median and best of --reps and the ratio (target
npurun/torchrun <= 1.1); writes benchmarks/results/launcher_startup.json.

    python benchmarks/launcher_startup.py [--reps 7] [--nproc 4] [--npurun-backend hccl|gloo]

When the hccl backend is not registered, npurun's side falls back to gloo and the output
says so.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

RANK_SCRIPT = r'''
import os, sys, time
import torch, torch.distributed as dist
import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
backend = sys.argv[2]
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group(backend)
t = torch.ones(1, device="npu" if backend == "hccl" else "cpu")
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
with open(os.path.join(sys.argv[1], "rank%s" % os.environ["RANK"]), "w") as f:
    f.write(repr(time.time()))
dist.destroy_process_group()
'''


def one_launch(cmd, out_dir, nproc):
    """Seconds from starting ``cmd`` until the last rank recorded its initialised group."""
    for name in os.listdir(out_dir):
        os.unlink(os.path.join(out_dir, name))
    from npudist.testing.multiproc import clean_env

    env = clean_env()  # the harness's environment policy, the same for both launchers
    start = time.time()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    stamps = [float(open(os.path.join(out_dir, f"rank{i}")).read()) for i in range(nproc)]
    return max(stamps) - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--npurun-backend", default=None, help="default: hccl when registered, else gloo")
    p.add_argument("--json", default=os.path.join(HERE, "results", "launcher_startup.json"))
    a = p.parse_args()

    import torch.distributed as dist

    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
    hccl = dist.is_backend_available("hccl")
    npu_backend = a.npurun_backend or ("hccl" if hccl else "gloo")

    with tempfile.TemporaryDirectory(prefix="launcher-bench-") as tmp:
        script = os.path.join(tmp, "rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        stamps = os.path.join(tmp, "stamps")
        os.mkdir(stamps)
        cmds = {
            "npurun": [sys.executable, "-m", "npurun", "--nproc", str(a.nproc), script, stamps, npu_backend],
            "torchrun": [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(a.nproc), script,
                         stamps, "gloo"],
        }
        one_launch(cmds["torchrun"], stamps, a.nproc)  # warm the page cache for both
        one_launch(cmds["npurun"], stamps, a.nproc)
        times = {k: [] for k in cmds}
        ratios = []
        for rep in range(a.reps):
            order = list(cmds) if rep % 2 == 0 else list(reversed(cmds))
            for name in order:
                times[name].append(one_launch(cmds[name], stamps, a.nproc))
            ratios.append(times["npurun"][-1] / times["torchrun"][-1])

    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(f"launcher start-up until every rank's group is initialised; {a.nproc} ranks, {a.reps} interleaved reps")
    print(f"npurun uses {npu_backend}" + ("" if npu_backend == "hccl" else
                                          " (hccl backend not registered yet: gloo on both sides)"))
    print("| launcher | backend | median s | best s |")
    print("|---|---|---|---|")
    print(f"| torchrun --nproc-per-node {a.nproc} | gloo | {med['torchrun']:.3f} | {best['torchrun']:.3f} |")
    print(f"| npurun --nproc {a.nproc} | {npu_backend} | {med['npurun']:.3f} | {best['npurun']:.3f} |")
    ratio = statistics.median(ratios)
    print(f"npurun/torchrun: {ratio:.3f} (median of per-rep ratios), {best['npurun'] / best['torchrun']:.3f} "
          f"best/best; target <= 1.1")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"nproc": a.nproc, "reps": a.reps, "npurun_backend": npu_backend, "torchrun_backend": "gloo",
                   "seconds": times, "median": med, "best": best, "ratio_median": ratio,
                   "ratio_best": best["npurun"] / best["torchrun"],
                   "command": "python benchmarks/launcher_startup.py " + " ".join(sys.argv[1:])}, f, indent=1)


if __name__ == "__main__":
    main()
