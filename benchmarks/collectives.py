"""hccl vs Gloo, nccl-tests style, in one run.

For each world size (default 2 and 4), starts that many ranks; each rank
creates the hccl default group and a Gloo group over the same ranks, then for
every op (all_reduce, all_gather, reduce_scatter, alltoall, broadcast) and
every size from -b to -e doubling, times hccl on npu tensors and Gloo on cpu
tensors, interleaved, each timing ending with torch.npu.synchronize(). Rank 0
also times one thread's memcpy between two buffers of each size. Prints the
nccl-tests table (size, count, type, redop, root, time, algbw, busbw, #wrong;
in-place) with Gloo's time and busbw beside it, the hccl/Gloo ratios and
busbw as a share of memcpy; writes JSON.

    python benchmarks/collectives.py [--ranks 2 4] [-b 8] [-e 64M] [--reps 3]
        [--ops all_reduce all_gather ...] [--json benchmarks/results/collectives.json]

Sizes are the whole message per rank as in nccl-tests: for all_gather and
alltoall the size S is count x n x element size (each rank contributes S/n);
for reduce_scatter S is the input. busbw factors: all_reduce 2(n-1)/n;
all_gather, reduce_scatter, alltoall (n-1)/n; broadcast 1.
"""
import argparse
import ctypes
import json
import os
import statistics
import time

from npudist.testing import multiproc

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast"]


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def bus_factor(op, n):
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def iterations(size):
    # Enough work to time, little enough that Gloo's large sizes stay in budget.
    return max(3, min(2000, int(64e6 // max(size, 1))))


# ---------------------------------------------------------------- per rank

def rank_main(args):
    import torch
    import torch.distributed as dist

    import npudist  # noqa: F401

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.npu.set_device(rank)
    # No device_id: with a bound device, torch 2.13's new_group(backend="gloo")
    # looks for a gloo backend for npu and fails (docs/troubleshooting.md).
    dist.init_process_group("hccl")
    gloo = dist.new_group(backend="gloo")
    results = []

    def make(op, size, device):
        numel = max(1, size // 4)
        if op in ("all_gather", "alltoall", "reduce_scatter"):
            numel = max(world, numel // world * world)
        x = torch.ones(numel, dtype=torch.float32, device=device)
        if op == "all_gather":
            return x[: numel // world].clone(), torch.empty(numel, device=device)
        if op == "reduce_scatter":
            return x, torch.empty(numel // world, device=device)
        if op == "alltoall":
            return x, torch.empty(numel, device=device)
        return x, None

    def run(op, inp, out, group):
        if op == "all_reduce":
            dist.all_reduce(inp, group=group)
        elif op == "all_gather":
            dist.all_gather_into_tensor(out, inp, group=group)
        elif op == "reduce_scatter":
            dist.reduce_scatter_tensor(out, inp, group=group)
        elif op == "alltoall":
            dist.all_to_all_single(out, inp, group=group)
        else:
            dist.broadcast(inp, src=0, group=group)

    def wrong(op, inp, out, iters):
        # Inputs are ones; count elements off the expected value.
        if op == "all_reduce":
            want, got = float(world ** (iters)), inp
        elif op == "reduce_scatter":
            want, got = float(world), out
        else:
            want, got = 1.0, (inp if op == "broadcast" else out)
        return int((got.cpu() != want).sum())

    def time_one(op, size, backend):
        device = "npu" if backend == "hccl" else "cpu"
        group = None if backend == "hccl" else gloo
        inp, out = make(op, size, device)
        iters = iterations(size) if backend == "hccl" else max(2, iterations(size) // 10)
        for _ in range(2):  # warm-up
            run(op, inp, out, group)
        inp.fill_(1)
        torch.npu.synchronize()
        dist.barrier(group=gloo)
        t0 = time.perf_counter()
        for _ in range(iters):
            run(op, inp, out, group)
        torch.npu.synchronize()
        elapsed = (time.perf_counter() - t0) / iters
        nwrong = wrong(op, inp, out, iters) if op != "all_reduce" else 0
        if op == "all_reduce":  # one more from known ones
            inp.fill_(1)
            run(op, inp, out, group)
            torch.npu.synchronize()
            nwrong = int((inp.cpu() != float(world)).sum())
        return elapsed, nwrong, inp.numel() * 4 if op not in ("all_gather",) else out.numel() * 4

    def memcpy_rate(size):
        import numpy as np

        a = np.ones(max(size, 8), dtype=np.uint8)
        b = np.empty_like(a)
        iters = iterations(size)
        ctypes.memmove(b.ctypes.data, a.ctypes.data, size)
        t0 = time.perf_counter()
        for _ in range(iters):
            ctypes.memmove(b.ctypes.data, a.ctypes.data, size)
        return size / ((time.perf_counter() - t0) / iters) / 1e9

    # Warm both engines (threads, pages, caches) before the first timed size.
    for backend in ("hccl", "gloo"):
        for op in args.ops:
            time_one(op, 4096, backend)
    sizes = []
    s = args.b
    while s <= args.e:
        sizes.append(s)
        s *= 2
    for op in args.ops:
        for size in sizes:
            times = {"hccl": [], "gloo": []}
            wrongs = 0
            nbytes = size
            for _ in range(args.reps):
                for backend in ("hccl", "gloo"):  # interleaved
                    t, w, nbytes = time_one(op, size, backend)
                    times[backend].append(t)
                    wrongs += w
            row = {"op": op, "size": nbytes, "count": nbytes // 4, "type": "float", "redop":
                   "sum" if op in ("all_reduce", "reduce_scatter") else "none", "root": 0 if op == "broadcast" else -1,
                   "hccl_us": statistics.median(times["hccl"]) * 1e6, "hccl_best_us": min(times["hccl"]) * 1e6,
                   "gloo_us": statistics.median(times["gloo"]) * 1e6, "gloo_best_us": min(times["gloo"]) * 1e6,
                   "wrong": wrongs}
            if rank == 0:
                row["memcpy_GBps"] = statistics.median(memcpy_rate(nbytes) for _ in range(args.reps))
            results.append(row)
    if rank == 0:
        print("RESULT " + json.dumps({"rows": results}), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


# ---------------------------------------------------------------- driver

def launch(world, args):
    argv = [os.path.abspath(__file__), "--rank-main", "-b", args.b, "-e", args.e, "--reps", args.reps,
            "--ops", *args.ops]
    # the caller's HCCL_*/NPUDIST_* settings (e.g. HCCL_BUFFSIZE) apply to the ranks
    r = multiproc.launch(argv, world, env=multiproc.inherited("HCCL_", "NPUDIST_"), timeout=args.timeout)
    if not r.ok():
        raise SystemExit(f"a rank failed:\n{r.explain()}")
    return r.results(0)[-1]["rows"]


def print_table(world, rows):
    print(f"\n# {world} ranks (times: median of --reps; in-place; Gloo on cpu tensors in the same run)")
    hdr = (f"{'op':>14} {'size':>10} {'count':>9} {'type':>5} {'redop':>5} {'root':>4} {'time(us)':>10} "
           f"{'algbw':>7} {'busbw':>7} {'#wrong':>6} | {'gloo(us)':>10} {'gloo_bw':>7} {'x_time':>7} {'x_busbw':>7} "
           f"{'memcpy':>7} {'bus/mc':>6}")
    print(hdr)
    for r in rows:
        f = bus_factor(r["op"], world)
        algbw = r["size"] / (r["hccl_us"] * 1e-6) / 1e9
        galg = r["size"] / (r["gloo_us"] * 1e-6) / 1e9
        r.update(algbw=algbw, busbw=algbw * f, gloo_busbw=galg * f, time_ratio=r["gloo_us"] / r["hccl_us"],
                 busbw_share_of_memcpy=algbw * f / r["memcpy_GBps"])
        print(f"{r['op']:>14} {r['size']:>10} {r['count']:>9} {r['type']:>5} {r['redop']:>5} {r['root']:>4} "
              f"{r['hccl_us']:>10.1f} {algbw:>7.2f} {r['busbw']:>7.2f} {r['wrong']:>6} | {r['gloo_us']:>10.1f} "
              f"{r['gloo_busbw']:>7.2f} {r['time_ratio']:>7.1f} {r['busbw'] / max(r['gloo_busbw'], 1e-12):>7.1f} "
              f"{r['memcpy_GBps']:>7.2f} {r['busbw_share_of_memcpy']:>6.0%}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    p.add_argument("--json", default=os.path.join(HERE, "results", "collectives.json"))
    p.add_argument("--timeout", type=float, default=3 * 3600,
                   help="seconds before the ranks of one world size are killed")
    p.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank_main:
        return rank_main(args)
    print(f"# hccl vs gloo, sizes {args.b}..{args.e} B, reps {args.reps}, {os.cpu_count()} cores")
    report = {}
    for world in args.ranks:
        rows = launch(world, args)
        print_table(world, rows)
        report[str(world)] = rows
    if 2 in args.ranks:
        rows = report["2"]
        small = [r for r in rows if r["op"] == "all_reduce" and r["size"] <= 64 << 10]
        mid = [r for r in rows if r["op"] == "all_reduce" and (1 << 20) <= r["size"] <= 4 << 20]
        if small:
            print(f"\n2 ranks all_reduce <=64 KiB: min Gloo/hccl time ratio {min(r['time_ratio'] for r in small):.1f}x "
                  f"(target >= 30x)")
        if mid:
            print(f"2 ranks all_reduce 1-4 MiB: min busbw hccl/Gloo {min(r['busbw'] / r['gloo_busbw'] for r in mid):.1f}x "
                  f"(target >= 3x), min busbw/memcpy {min(r['busbw_share_of_memcpy'] for r in mid):.0%} (target >= 25%)")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"args": vars(args), "results": report}, f, indent=1)
    print(f"\nJSON: {args.json}")


if __name__ == "__main__":
    main()
