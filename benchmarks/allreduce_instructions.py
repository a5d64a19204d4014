"""Instructions per all_reduce, counted by valgrind's callgrind.

Timings on the shared 2-core machines swing by 2x; instruction counts do not.
This runs one single-rank process per configuration under
`valgrind --tool=callgrind`, with instrumentation switched on (through a tiny
helper compiled here from valgrind's callgrind.h client requests) only around
--iters calls after a warm-up longer than the flight recorder's ring, and
prints instructions per call:

- hccl: `dist.all_reduce` on an npu tensor through a group made by new_group
  (watchdog, flight recorder and counters on);
- hccl untracked: the same through a group made with NPUDIST_HCCL_WATCHDOG=0;
- fake: `dist.all_reduce` on a cpu tensor through PyTorch's "fake" backend
  (the c10d floor: c10d's Python and C++ layers, no communication);
- deepspeed (only with --modes ... deepspeed): `torch.ops.deepspeed.inference_all_reduce_`
  (deepspeed 0.19.8's shm op, built as in benchmarks/_deepspeed_shm.py). Its
  kernels are AVX-512 code, which valgrind 3.19 cannot run, so it fails
  there; the mode is kept for machines whose valgrind can.

With one rank no peer is waited for, so the counts are the per-call CPU work
of each layer (the protocol's cross-core traffic is not in them: that is what
benchmarks/collectives.py --vs-deepspeed times). With --cache-sim, callgrind also
simulates the caches (valgrind's model of the first-level instruction and
data caches and the last-level cache, sized from this machine's) and a second
table gives misses per call at each level: what a path's code footprint and
memory traffic cost, which instruction counts do not show. Writes JSON.

    python benchmarks/allreduce_instructions.py [--iters 2000] [--numel 2 1024] [--cache-sim]
        [--json benchmarks/results/allreduce_instructions.json] [--annotate DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from _callgrind import helper_lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODES = ["hccl", "hccl_untracked", "fake", "deepspeed"]


def child(mode, iters, numel, lib, warmup):
    import ctypes

    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    import torch
    import torch.distributed as dist

    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    torch.set_num_threads(1)
    cg = ctypes.CDLL(lib)
    dist.init_process_group("hccl")
    if mode == "fake":
        import torch.testing._internal.distributed.fake_pg

        group, x = dist.new_group(backend="fake"), torch.ones(numel)
        call = lambda: dist.all_reduce(x, group=group)  # noqa: E731  (a local one-line callable)
    elif mode == "hccl_untracked":
        os.environ["NPUDIST_HCCL_WATCHDOG"] = "0"
        group, x = dist.new_group([0]), torch.ones(numel, device="npu")
        call = lambda: dist.all_reduce(x, group=group)  # noqa: E731  (a local one-line callable)
    elif mode == "deepspeed":
        sys.path.insert(0, HERE)
        import _deepspeed_shm

        op, x = _deepspeed_shm.load_in_rank(os.environ["NPUDIST_BENCH_DS_LIB"], 1, 0), torch.ones(numel)
        call = lambda: op(x)  # noqa: E731  (a local one-line callable)
    else:
        # A group of its own, like the others: dist.all_reduce's Python path
        # for the default group differs from the one for group=...
        group, x = dist.new_group([0]), torch.ones(numel, device="npu")
        call = lambda: dist.all_reduce(x, group=group)  # noqa: E731  (a local one-line callable)
    for _ in range(warmup):
        call()
    torch.npu.synchronize()
    cg.cg_start()
    for _ in range(iters):
        call()
    cg.cg_stop()
    torch.npu.synchronize()


def run(mode, iters, numel, lib, warmup, out_file, env, cache_sim=False):
    """Per call: instructions, or with cache_sim a dict of callgrind's events (Ir, D1mr, D1mw, ...)."""
    from npudist.testing.multiproc import free_port  # not at module level: --child sets its env before torch

    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           f"--callgrind-out-file={out_file}"] + (["--cache-sim=yes"] if cache_sim else []) + [
           sys.executable, os.path.abspath(__file__), "--child", mode,
           "--iters", str(iters), "--numel", str(numel), "--warmup", str(warmup)]
    r = subprocess.run(cmd, env=dict(env, MASTER_PORT=str(free_port())), capture_output=True, text=True, cwd=REPO)
    m = re.findall(r"Collected : ([\d ]+)", r.stderr)
    if r.returncode != 0 or not m or int(m[-1].split()[0]) == 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"{mode} failed:\n{tail}")
    counts = [int(x) / iters for x in m[-1].split()]
    if not cache_sim:
        return counts[0]
    events = re.findall(r"Events +: ([\w ]+)", r.stderr)[-1].split()
    return dict(zip(events, counts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=2500, help="calls before counting (> the flight recorder's 2000)")
    ap.add_argument("--numel", type=int, nargs="+", default=[2, 1024], help="float32 elements (2: 8 B, 1024: 4 KiB)")
    ap.add_argument("--modes", nargs="+", default=MODES[:3], choices=MODES)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "allreduce_instructions.json"))
    ap.add_argument("--annotate", default=None, help="keep the callgrind files in this directory")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also simulate the caches and report cache misses per call")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    lib = helper_lib() if not a.child else os.environ["NPUDIST_BENCH_CG_LIB"]
    if a.child:
        return child(a.child, a.iters, a.numel[0], lib, a.warmup)
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    env = dict(os.environ, NPUDIST_BENCH_CG_LIB=lib, OMP_NUM_THREADS="1")
    notes = {}
    if "deepspeed" in a.modes:
        sys.path.insert(0, HERE)
        import _deepspeed_shm

        ds_lib, why = _deepspeed_shm.build()
        if ds_lib:
            env["NPUDIST_BENCH_DS_LIB"] = ds_lib
        else:
            notes["deepspeed"] = why
    out_dir = a.annotate or os.path.join(REPO, "build", "bench_callgrind")
    os.makedirs(out_dir, exist_ok=True)
    results, misses = {}, {}
    for numel in a.numel:
        for mode in a.modes:
            if mode in notes:
                continue
            try:
                r = run(mode, a.iters, numel, lib, a.warmup, os.path.join(out_dir, f"{mode}_{numel}.out"), env,
                        a.cache_sim)
                if a.cache_sim:
                    misses[f"{mode}/{numel}"] = {"I1": r.get("I1mr", 0), "D1": r.get("D1mr", 0) + r.get("D1mw", 0),
                                                 "LL": r.get("ILmr", 0) + r.get("DLmr", 0) + r.get("DLmw", 0)}
                    r = r["Ir"]
                results[f"{mode}/{numel}"] = r
            except RuntimeError as e:
                notes[f"{mode}/{numel}"] = str(e)
    print(f"instructions per call (callgrind, 1 rank, {a.iters} calls after {a.warmup} warm-up)")
    print(f"{'bytes':>7} {'hccl':>9} {'untracked':>10} {'fake floor':>11} {'deepspeed':>10} "
          f"{'hccl-floor':>11} {'tracking':>9}")
    for numel in a.numel:
        g = lambda m: results.get(f"{m}/{numel}")  # noqa: E731  (a local one-line callable)
        f = lambda v: f"{v:,.0f}" if v is not None else "-"  # noqa: E731  (a local one-line callable)
        h, u, fl, ds = g("hccl"), g("hccl_untracked"), g("fake"), g("deepspeed")
        print(f"{numel * 4:>7} {f(h):>9} {f(u):>10} {f(fl):>11} {f(ds):>10} "
              f"{f(h - fl if h and fl else None):>11} {f(h - u if h and u else None):>9}")
    if a.cache_sim:
        print("cache misses per call (callgrind --cache-sim=yes): first-level instruction (I1), first-level data "
              "(D1, reads + writes), last level (LL, all)")
        print(f"{'bytes':>7} {'level':>5} {'hccl':>9} {'untracked':>10} {'fake floor':>11} {'deepspeed':>10} "
              f"{'tracking':>9}")
        for numel in a.numel:
            for level in ("I1", "D1", "LL"):
                g = lambda m: misses[f"{m}/{numel}"][level] if f"{m}/{numel}" in misses else None  # noqa: E731  (a local one-line lookup)
                f = lambda v: f"{v:,.1f}" if v is not None else "-"  # noqa: E731  (a local one-line callable)
                h, u = g("hccl"), g("hccl_untracked")
                print(f"{numel * 4:>7} {level:>5} {f(h):>9} {f(u):>10} {f(g('fake')):>11} {f(g('deepspeed')):>10} "
                      f"{f(h - u if h is not None and u is not None else None):>9}")
    for k, v in notes.items():
        print(f"note: {k}: {v}")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"iters": a.iters, "warmup": a.warmup, "per_call": results, "notes": notes,
                   "cache_misses_per_call": misses}, fh, indent=1)
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()
