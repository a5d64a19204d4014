"""Per-call latency distributions of a small all_reduce: hccl vs DeepSpeed vs the c10d floor.

benchmarks/collectives.py --vs-deepspeed reports the mean time per call of
each block of calls (then the median over blocks). A mean can be dragged by
a few slow calls (a yield that let another process run, a futex sleep, a
page fault) or every call can be a little slower: this script tells which.
Each rank times every call on its own (time.perf_counter_ns around one
`dist.all_reduce(x)` on npu tensors, `torch.ops.deepspeed.inference_all_reduce_`
on cpu tensors, `dist.all_reduce` over a "fake" group), in blocks of --block
calls that alternate between the three (the order rotating), and prints per
side and size: percentiles, the mean, the share of the total time spent in
calls slower than 2x the median ("tail share"), a histogram, and how hccl's
waits on its peer ended (npudist._C._hccl_wait_stats: spinning, yielding, or
asleep on the futex). Writes JSON (all percentiles and histograms; with
--raw, every call's time and the CPU it ended on).

    python benchmarks/allreduce_latency.py [--ranks 2] [--sizes 8 4K 64K] [--dtype float32]
        [--blocks 20] [--block 500] [--pin none|same|spread] [--json benchmarks/results/allreduce_latency.json]
        [--deepspeed-cache DIR] [--raw]

The per-call clock reads add ~0.1 us to every side alike. Times are rank 0's
unless --all-ranks (then each rank's line is printed).
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

from npudist.testing import multiproc

HERE = os.path.dirname(os.path.abspath(__file__))
PCTS = (1, 10, 25, 50, 75, 90, 99, 99.9)
# Histogram bucket edges in us (the last bucket is open).
EDGES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 50, 100, 1000, 10000)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def summarize(ns):
    """Percentiles, mean, tail share and histogram of per-call times (ns in, us out)."""
    us = sorted(x / 1e3 for x in ns)
    n = len(us)
    pct = {str(p): us[min(n - 1, int(p / 100 * n))] for p in PCTS}
    med = statistics.median(us)
    total = sum(us)
    slow = [x for x in us if x > 2 * med]
    hist = [0] * (len(EDGES) + 1)
    i = 0
    for x in us:
        while i < len(EDGES) and x >= EDGES[i]:
            i += 1
        hist[i] += 1
    return {"n": n, "mean": total / n, "median": med, "pct": pct, "tail_calls": len(slow),
            "tail_share": sum(slow) / total if total else 0.0, "mean_without_tail": (total - sum(slow)) / max(1, n - len(slow)),
            "hist": hist}


def rank_main(args):
    import torch
    import torch.distributed as dist

    import npudist  # noqa: F401  (registers npu and hccl when torch's backend autoload is off)
    from npudist import _C

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.pin == "same":  # every rank on one CPU: the case of ranks sharing a core
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    elif args.pin == "spread":
        cpus_ok = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus_ok[rank % len(cpus_ok)]})
    torch.npu.set_device(rank)
    dist.init_process_group("hccl")
    gloo = dist.new_group(backend="gloo")
    import torch.testing._internal.distributed.fake_pg

    fake = dist.new_group(backend="fake")
    sides = ["hccl", "fake"]
    sys.path.insert(0, HERE)
    import _deepspeed_shm

    ds, ds_note = _deepspeed_shm.join(world, rank, gloo)
    if ds is not None:
        sides.append("deepspeed")
    dtype = getattr(torch, args.dtype)
    es = torch.empty(0, dtype=dtype).element_size()
    pc = time.perf_counter_ns
    getcpu = ctypes.CDLL(None).sched_getcpu if args.raw else None
    has_wait_stats = hasattr(_C, "_hccl_wait_stats")  # an older build (A/B runs) has no wait counters
    rows = []
    for size in args.sizes:
        numel = max(1, size // es)
        bufs = {"hccl": torch.ones(numel, dtype=dtype, device="npu"), "fake": torch.ones(numel, dtype=dtype),
                "deepspeed": torch.ones(numel, dtype=dtype)}
        calls = {"hccl": lambda x: dist.all_reduce(x), "fake": lambda x: dist.all_reduce(x, group=fake),
                 "deepspeed": ds}
        times = {s: [] for s in sides}
        cpus = {s: [] for s in sides}
        block_means = {s: [] for s in sides}
        wait = {}
        for s in sides:  # warm-up
            for _ in range(200):
                calls[s](bufs[s])
        torch.npu.synchronize()
        for b in range(args.blocks):
            k = b % len(sides)
            for s in sides[k:] + sides[:k]:
                x, f = bufs[s], calls[s]
                x.fill_(0)
                out = times[s]
                dist.barrier(group=gloo)
                if s == "hccl" and has_wait_stats:
                    _C._hccl_reset_wait_stats()
                t_start = pc()
                if getcpu is None:
                    for _ in range(args.block):
                        t0 = pc()
                        f(x)
                        out.append(pc() - t0)
                else:  # --raw: also the CPU each call ended on (~0.1 us more per call, every side alike)
                    cpu_out = cpus[s]
                    for _ in range(args.block):
                        t0 = pc()
                        f(x)
                        out.append(pc() - t0)
                        cpu_out.append(getcpu())
                block_means[s].append((pc() - t_start) / args.block / 1e3)
                if s == "hccl" and has_wait_stats:
                    torch.npu.synchronize()
                    for key, v in _C._hccl_wait_stats().items():
                        wait[key] = wait.get(key, 0) + v
                if s != "fake" and float(x[0]) != 0.0:  # zeros stay zeros; a last check from known ones below
                    raise SystemExit(f"{s}: wrong value {float(x[0])}")
        for s in ("hccl", "deepspeed"):
            if s in sides:
                bufs[s].fill_(1)
                calls[s](bufs[s])
                torch.npu.synchronize()
                if not bool((bufs[s].cpu().float() == float(world)).all()):
                    raise SystemExit(f"{s}: wrong all_reduce result at {size} B")
        row = {"size": numel * es, "rank": rank, "dtype": args.dtype, "calls_per_side": args.blocks * args.block}
        for s in sides:
            row[s] = summarize(times[s])
            row[s]["block_mean_median"] = statistics.median(block_means[s])
            if args.raw:
                row[s]["raw_ns"] = times[s]
                row[s]["raw_cpu"] = cpus[s]
        row["hccl"]["wait"] = wait
        rows.append(row)
    results = [None] * world
    dist.all_gather_object(results, {"rows": rows, "ds_note": ds_note}, group=gloo)
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


def print_rows(per_rank, ranks_shown):
    for rr in ranks_shown:
        for row in per_rank[rr]["rows"]:
            n = row["calls_per_side"]
            print(f"\n## rank {row['rank']}, {row['size']} B {row['dtype']}, {n} calls per side "
                  f"(per-call us; tail = calls > 2x median)")
            print(f"{'side':>10} {'mean':>7} {'blk med':>7} " + " ".join(f"{'p' + str(p):>7}" for p in PCTS)
                  + f" {'tail#':>6} {'tail %t':>7} {'mean-tail':>9}")
            for s in ("hccl", "deepspeed", "fake"):
                if s not in row:
                    continue
                r = row[s]
                print(f"{s:>10} {r['mean']:>7.2f} {r['block_mean_median']:>7.2f} "
                      + " ".join(f"{r['pct'][str(p)]:>7.2f}" for p in PCTS)
                      + f" {r['tail_calls']:>6} {r['tail_share']:>7.1%} {r['mean_without_tail']:>9.2f}")
            labels = [f"<{EDGES[0]}"] + [f"{a}-{b}" for a, b in zip(EDGES, EDGES[1:])] + [f">={EDGES[-1]}"]
            print("  histogram (us): " + " ".join(f"{lab:>7}" for lab in labels))
            for s in ("hccl", "deepspeed", "fake"):
                if s in row:
                    print(f"  {s:>14}: " + " ".join(f"{c:>7}" for c in row[s]["hist"]))
            w = row["hccl"]["wait"]
            if w:
                waits = max(1, w["waits"])
                print(f"  hccl waits for the peer: {w['waits']} of {n} calls ({w['waits'] / n:.1%}); ended spinning "
                      f"{w['ready_spinning']} (mean {w['spin_ns'] / max(1, w['ready_spinning']) / 1e3:.2f} us), "
                      f"yielding {w['ready_yielding']} (mean {w['yield_ns'] / max(1, w['ready_yielding']) / 1e3:.1f} us, "
                      f"{w['yields'] / waits:.1f} yields per wait), asleep {w['ready_sleeping']} "
                      f"(mean {w['sleep_ns'] / max(1, w['ready_sleeping']) / 1e3:.0f} us, {w['futex_sleeps']} futex waits)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--sizes", type=parse_size, nargs="+", default=[8, 4096, 65536])
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--blocks", type=int, default=20, help="blocks per side (interleaved)")
    p.add_argument("--block", type=int, default=500, help="calls per block")
    p.add_argument("--all-ranks", action="store_true", help="print every rank's distributions (default rank 0's)")
    p.add_argument("--pin", choices=["none", "same", "spread"], default="none",
                   help="same: every rank on the first CPU (ranks sharing a core); spread: rank i on CPU i mod n")
    p.add_argument("--raw", action="store_true", help="keep every call's time in the JSON")
    p.add_argument("--json", default=os.path.join(HERE, "results", "allreduce_latency.json"))
    p.add_argument("--deepspeed-cache", default=None)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank_main:
        return rank_main(args)
    print(f"# per-call all_reduce latency, {args.ranks} ranks, {args.dtype}, sizes {args.sizes}, "
          f"{args.blocks} blocks x {args.block} calls per side; load average {os.getloadavg()[0]:.1f} at start")
    sys.path.insert(0, HERE)
    import _deepspeed_shm

    lib, why = _deepspeed_shm.build(args.deepspeed_cache)
    print(f"# DeepSpeed {_deepspeed_shm.VERSION}: {lib or why}")
    env = dict(multiproc.inherited("HCCL_", "NPUDIST_"),
               **({"NPUDIST_BENCH_DS_LIB": lib} if lib else {"NPUDIST_BENCH_DS_ERROR": f"unavailable: {why}"}))
    argv = [os.path.abspath(__file__), "--rank-main", "--sizes", *map(str, args.sizes), "--dtype", args.dtype,
            "--blocks", str(args.blocks), "--block", str(args.block), "--pin", args.pin] + (["--raw"] if args.raw else [])
    # fresh interpreters, as a job starts its ranks (not forked from the test harness's zygote)
    r = multiproc.launch(argv, args.ranks, env=env, timeout=args.timeout, zygote=False)
    if not r.ok():
        raise SystemExit(f"a rank failed:\n{r.explain()}")
    per_rank = r.results(0)[-1]
    print_rows(per_rank, range(args.ranks) if args.all_ranks else [0])
    print(f"\n# load average {os.getloadavg()[0]:.1f} at the end")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"args": {k: v for k, v in vars(args).items() if k != "rank_main"}, "ranks": per_rank}, f)
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
