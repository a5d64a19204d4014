"""hccl vs Gloo, nccl-tests style, in one run.

For each world size (default 2 and 4), starts that many ranks; each rank
creates the hccl default group and a Gloo group over the same ranks, then for
every op (all_reduce, all_gather, reduce_scatter, alltoall, broadcast) and
every size from -b to -e doubling, times hccl on npu tensors and Gloo on cpu
tensors, interleaved, each timing ending with torch.npu.synchronize(). Rank 0
also times one thread's memcpy between two buffers of each size. Prints the
nccl-tests table (size, count, type, redop, root, time, algbw, busbw, #wrong;
in-place) with Gloo's time and busbw beside it, the hccl/Gloo ratios and
busbw as a share of memcpy (measured once per rep, between the reps'
collectives); writes JSON.

    python benchmarks/collectives.py [--ranks 2 4] [-b 8] [-e 64M] [--reps 3]
        [--ops all_reduce all_gather ...] [--json benchmarks/results/collectives.json]
        [--vs-deepspeed] [--dtypes float32 bfloat16] [--no-gloo] [--zero-copy-compare]

--vs-deepspeed adds, for all_reduce, two columns measured in the
same rank processes and interleaved with hccl: DeepSpeed's CPU shared-memory
all_reduce (deepspeed 0.19.8 from PyPI, built at benchmark time, see
benchmarks/_deepspeed_shm.py; cpu tensors, no c10d in its path; if the build
fails the column says why and the run goes on) and the c10d floor:
dist.all_reduce through PyTorch's "fake" backend (a group made with
new_group(backend="fake") over the same ranks: c10d's Python and C++ layers,
no communication). The target is hccl <= DeepSpeed + floor.

Every time is the slowest rank's mean over its block of calls (each rank's
block time, then their maximum over a Gloo all_reduce): a block is over when
every rank is done. For hccl and DeepSpeed that is rank 0's time to within a
call (the ranks leave each collective together); the floor's ranks do not
wait for each other, and on these VMs one vCPU is often up to 2x slower
than the other for seconds at a time (benchmarks/allreduce_latency.py
--all-ranks, one block: the floor 7.0 us per call on one rank, 3.7 us on
the other). A collective waits for the slower rank's c10d path, so that
rank's floor is the one it pays. JSON keeps rank 0's own times too
(<side>_rank0_us, rank0_hccl_over_ds_plus_floor; the "r0 ratio" column).
Repetitions are the outer loop and sizes the inner one (each repetition
times every size, the sides interleaved within a size), so a size's
repetitions are spread over the whole run: a slow spell of the machine,
which lasts seconds, falls on one repetition of many sizes rather than on
every repetition of a few. Each side is one block per repetition on purpose: cutting the blocks into
short slices (10 per repetition, each after a Gloo barrier) made DeepSpeed's
op 1.5-3x slower (3.5 -> 5-11 us per call in back-to-back runs; likely its
never-yielding spin right after the ranks wake from the barrier), which
flattered hccl.

--zero-copy-compare adds "hccl staged": the same hccl group on
the same npu tensors with zero-copy turned off for that measurement
(npudist._C._hccl_set_zero_copy(False) on every rank, as
NPUDIST_HCCL_ZERO_COPY=0 would), interleaved with the default (zero-copy)
hccl, and prints both busbw as a share of rank 0's one-thread memcpy rate.

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
import sys
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

    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.npu.set_device(rank)
    # No device_id: with a bound device, torch 2.13's new_group(backend="gloo")
    # looks for a gloo backend for npu and fails (docs/troubleshooting.md).
    dist.init_process_group("hccl")
    gloo = dist.new_group(backend="gloo")
    results = []
    backends = ["hccl"] + ([] if args.no_gloo else ["gloo"]) + (["hccl_staged"] if args.zero_copy_compare else [])
    from npudist import _C
    ds_all_reduce, fake = None, None
    ds_note = None
    if args.vs_deepspeed:
        import torch.testing._internal.distributed.fake_pg  # registers "fake"

        fake = dist.new_group(backend="fake")
        backends.append("fake")
        sys.path.insert(0, HERE)
        import _deepspeed_shm

        ds_all_reduce, ds_note = _deepspeed_shm.join(world, rank, gloo)
        if ds_all_reduce is not None:
            backends.append("deepspeed")
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

    def make(op, size, device, dtype):
        es = torch.empty(0, dtype=dtype).element_size()
        numel = max(1, size // es)
        if op in ("all_gather", "alltoall", "reduce_scatter"):
            numel = max(world, numel // world * world)
        x = torch.ones(numel, dtype=dtype, device=device)
        if op == "all_gather":
            return x[: numel // world].clone(), torch.empty(numel, dtype=dtype, device=device)
        if op == "reduce_scatter":
            return x, torch.empty(numel // world, dtype=dtype, device=device)
        if op == "alltoall":
            return x, torch.empty(numel, dtype=dtype, device=device)
        return x, None

    def run(op, inp, out, group):
        if group == "deepspeed":
            ds_all_reduce(inp)
        elif op == "all_reduce":
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

    def agreed_iters(op, inp, out, group, budget_s):
        # Enough repetitions to fill budget_s, decided by rank 0 from a short
        # probe and broadcast, so every rank runs the same count (DeepSpeed
        # spins without yielding: with more ranks than cores one op can take a
        # scheduler slice, and a fixed count would take minutes).
        dist.barrier(group=gloo)
        t0 = time.perf_counter()
        for _ in range(5):
            run(op, inp, out, group)
        torch.npu.synchronize()
        n = torch.tensor([max(3, min(20000, int(budget_s / max((time.perf_counter() - t0) / 5, 1e-7))))])
        dist.broadcast(n, 0, group=gloo)
        return int(n)

    def time_one(op, size, backend, dtype=torch.float32):
        if backend == "hccl_staged":  # every rank turns zero-copy off for this measurement only
            _C._hccl_set_zero_copy(False)
            try:
                return time_one(op, size, "hccl", dtype)
            finally:
                _C._hccl_set_zero_copy(True)
        device = "npu" if backend == "hccl" else "cpu"
        group = {"hccl": None, "gloo": gloo, "fake": fake, "deepspeed": "deepspeed"}[backend]
        inp, out = make(op, size, device, dtype)
        if args.budget_ms:
            iters = agreed_iters(op, inp, out, group, args.budget_ms / 1e3)
        else:
            iters = iterations(size) if backend != "gloo" else max(2, iterations(size) // 10)
        for _ in range(2):  # warm-up
            run(op, inp, out, group)
        inp.fill_(1)
        torch.npu.synchronize()
        dist.barrier(group=gloo)
        t0 = time.perf_counter()
        for _ in range(iters):
            run(op, inp, out, group)
        torch.npu.synchronize()
        own = (time.perf_counter() - t0) / iters
        # The slowest rank's time: a block is done when every rank is done.
        # hccl's and DeepSpeed's ranks leave each collective together; the
        # floor's ranks run on their own, and one of them may run slower (the
        # host's contention on its vCPU): a collective waits for that rank's
        # c10d path, so that rank's floor is the one a collective pays.
        slowest = torch.tensor([own], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=gloo)
        elapsed = (float(slowest), own)
        nwrong = wrong(op, inp, out, iters) if op != "all_reduce" else 0
        if op == "all_reduce" and backend != "fake":  # one more from known ones
            inp.fill_(1)
            run(op, inp, out, group)
            torch.npu.synchronize()
            nwrong = int((inp.cpu().float() != float(world)).sum())
        es = inp.element_size()
        return elapsed, nwrong, inp.numel() * es if op not in ("all_gather",) else out.numel() * es

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

    def op_backends(op, dtype):
        # DeepSpeed's op is an all_reduce of float32/bfloat16/float16; the floor
        # is measured beside all_reduce only.
        return [b for b in backends if b in ("hccl", "gloo", "hccl_staged") or op == "all_reduce"]

    # Warm the engines (threads, pages, caches) before the first timed size.
    for backend in backends:
        for op in args.ops:
            if backend in op_backends(op, torch.float32):
                time_one(op, 4096, backend)
    sizes = []
    s = args.b
    while s <= args.e:
        sizes.append(s)
        s *= 2
    type_names = {"float32": "float", "bfloat16": "bfloat16", "float16": "half"}
    for dname in args.dtypes:
        dtype = dtypes[dname]
        for op in args.ops:
            bl = op_backends(op, dtype)
            per_size = {size: {"times": {b: [] for b in bl}, "own": {b: [] for b in bl},  # own: rank 0's
                               "wrongs": {b: 0 for b in bl}, "nbytes": size, "memcpy": []} for size in sizes}
            # Repetitions outside, sizes inside: a size's repetitions spread
            # over the whole run, so a slow spell of the machine (seconds)
            # reaches one repetition of many sizes, not every one of a few.
            for rep in range(args.reps):
                k = rep % len(bl)
                for size in sizes:
                    m = per_size[size]
                    for backend in bl[k:] + bl[:k]:  # interleaved, the order rotating
                        (t, t_own), w, m["nbytes"] = time_one(op, size, backend, dtype)
                        m["times"][backend].append(t)
                        m["own"][backend].append(t_own)
                        m["wrongs"][backend] += w
                    if rank == 0:  # the memcpy rate at the same moments as the collectives
                        m["memcpy"].append(memcpy_rate(m["nbytes"]))
            for size in sizes:
                m = per_size[size]
                times, own_times, wrongs, nbytes, memcpy_reps = (m["times"], m["own"], m["wrongs"], m["nbytes"],
                                                                 m["memcpy"])
                es = torch.empty(0, dtype=dtype).element_size()
                row = {"op": op, "size": nbytes, "count": nbytes // es, "type": type_names[dname], "redop":
                       "sum" if op in ("all_reduce", "reduce_scatter") else "none",
                       "root": 0 if op == "broadcast" else -1, "wrong": wrongs["hccl"]}
                for b in bl:
                    key = {"deepspeed": "ds"}.get(b, b)
                    row[f"{key}_us"] = statistics.median(times[b]) * 1e6
                    row[f"{key}_best_us"] = min(times[b]) * 1e6
                    row[f"{key}_all_us"] = [t * 1e6 for t in times[b]]
                    row[f"{key}_rank0_us"] = statistics.median(own_times[b]) * 1e6
                    if b in ("deepspeed", "gloo"):
                        row[f"{key}_wrong"] = wrongs[b]
                if args.vs_deepspeed and op == "all_reduce":
                    row["ds_note"] = ds_note
                    if "ds_us" in row:
                        # Per repetition: hccl / (DeepSpeed + floor), then the median.
                        ratios = [h / (d + f) for h, d, f in zip(times["hccl"], times["deepspeed"], times["fake"])]
                        row["hccl_over_ds_plus_floor"] = statistics.median(ratios)
                        own = own_times
                        row["rank0_hccl_over_ds_plus_floor"] = statistics.median(
                            h / (d + f) for h, d, f in zip(own["hccl"], own["deepspeed"], own["fake"]))
                        row["best_hccl_over_ds_plus_floor"] = min(times["hccl"]) / (min(times["deepspeed"]) +
                                                                                     min(times["fake"]))
                if rank == 0:
                    row["memcpy_GBps"] = statistics.median(memcpy_reps)
                    row["memcpy_all_GBps"] = memcpy_reps
                results.append(row)
    if rank == 0:
        print("RESULT " + json.dumps({"rows": results}), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


# ---------------------------------------------------------------- driver

def launch(world, args, ds_env):
    argv = [os.path.abspath(__file__), "--rank-main", "-b", args.b, "-e", args.e, "--reps", args.reps,
            "--ops", *args.ops, "--dtypes", *args.dtypes, "--budget-ms", args.budget_ms]
    argv += ["--vs-deepspeed"] if args.vs_deepspeed else []
    argv += ["--no-gloo"] if args.no_gloo else []
    argv += ["--zero-copy-compare"] if args.zero_copy_compare else []
    # the caller's HCCL_*/NPUDIST_* settings (e.g. HCCL_BUFFSIZE) apply to the ranks
    env = dict(multiproc.inherited("HCCL_", "NPUDIST_"), **ds_env)
    # fresh interpreters, as a job starts its ranks (not forked from the test harness's zygote)
    r = multiproc.launch(argv, world, env=env, timeout=args.timeout, zygote=False)
    if not r.ok():
        raise SystemExit(f"a rank failed:\n{r.explain()}")
    return r.results(0)[-1]["rows"]


def print_table(world, rows):
    if not rows or "gloo_us" not in rows[0]:
        return
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


def print_vs_deepspeed(world, rows, reps):
    rows = [r for r in rows if r["op"] == "all_reduce" and "fake_us" in r]
    if not rows:
        return
    note = rows[0].get("ds_note")
    print(f"\n# {world} ranks, all_reduce (sum, in-place): hccl (npu tensors, dist.all_reduce) vs DeepSpeed "
          f"{'(' + note + ')' if note else ''}\n#   shm (cpu tensors, torch.ops.deepspeed.inference_all_reduce_) and the "
          f"c10d floor (dist.all_reduce over a 'fake' group);\n#   times: the slowest rank's block mean, median of {reps} "
          "interleaved reps; ratio = median of per-rep hccl / (DeepSpeed + floor), target <= 1;\n#   r0 ratio: the same "
          "from rank 0's own times; best: from the best rep of each")
    print(f"{'size':>9} {'count':>8} {'type':>8} {'hccl us':>9} {'DS us':>8} {'floor us':>8} {'DS+floor':>9} "
          f"{'ratio':>6} {'r0 ratio':>8} | {'best: hccl':>10} {'DS':>7} {'floor':>6} {'ratio':>6} | {'#wrong':>6} {'DS wrong':>8} "
          f"{'gloo us':>9}")
    for r in rows:
        ds = r.get("ds_us")
        if ds is not None:
            cells = (f"{ds:>8.1f} {r['fake_us']:>8.1f} {ds + r['fake_us']:>9.1f} {r['hccl_over_ds_plus_floor']:>6.2f} "
                     f"{r['rank0_hccl_over_ds_plus_floor']:>8.2f} | "
                     f"{r['hccl_best_us']:>10.1f} {r['ds_best_us']:>7.1f} {r['fake_best_us']:>6.1f} "
                     f"{r['best_hccl_over_ds_plus_floor']:>6.2f}")
        else:
            cells = (f"{'-':>8} {r['fake_us']:>8.1f} {'-':>9} {'-':>6} {'-':>8} | {r['hccl_best_us']:>10.1f} {'-':>7} "
                     f"{r['fake_best_us']:>6.1f} {'-':>6}")
        gl = f"{r['gloo_us']:>9.1f}" if "gloo_us" in r else f"{'-':>9}"
        print(f"{r['size']:>9} {r['count']:>8} {r['type']:>8} {r['hccl_us']:>9.1f} {cells} | {r['wrong']:>6} "
              f"{r.get('ds_wrong', '-'):>8} {gl}")


def print_zero_copy(world, rows, reps):
    rows = [r for r in rows if "hccl_staged_us" in r]
    if not rows:
        return
    print(f"\n# {world} ranks: hccl zero-copy (default) vs staged (zero-copy off), npu tensors, in-place, median of "
          f"{reps} interleaved reps;\n#   bus/mc = busbw / rank 0's one-thread memcpy rate (bytes copied / time)"
          + ("; x DS = hccl time / DeepSpeed shm time" if any("ds_us" in r for r in rows) else ""))
    print(f"{'op':>14} {'size':>10} {'zc us':>9} {'staged us':>9} {'staged/zc':>9} {'zc busbw':>8} {'zc bus/mc':>9} "
          f"{'st bus/mc':>9} {'memcpy':>7} {'x DS':>6} {'#wrong':>6}")
    for r in rows:
        f = bus_factor(r["op"], world)
        zc_bus = r["size"] / (r["hccl_us"] * 1e-6) / 1e9 * f
        st_bus = r["size"] / (r["hccl_staged_us"] * 1e-6) / 1e9 * f
        r.update(zc_busbw=zc_bus, staged_busbw=st_bus, zc_share_of_memcpy=zc_bus / r["memcpy_GBps"],
                 staged_share_of_memcpy=st_bus / r["memcpy_GBps"], staged_over_zc=r["hccl_staged_us"] / r["hccl_us"])
        xds = f"{r['hccl_us'] / r['ds_us']:>6.2f}" if "ds_us" in r else f"{'-':>6}"
        if "ds_us" in r:
            r["hccl_over_ds"] = r["hccl_us"] / r["ds_us"]
        print(f"{r['op']:>14} {r['size']:>10} {r['hccl_us']:>9.1f} {r['hccl_staged_us']:>9.1f} "
              f"{r['staged_over_zc']:>9.2f} {zc_bus:>8.2f} {r['zc_share_of_memcpy']:>9.0%} "
              f"{r['staged_share_of_memcpy']:>9.0%} {r['memcpy_GBps']:>7.2f} {xds} {r['wrong']:>6}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    p.add_argument("--json", default=None,
                   help="default: benchmarks/results/collectives.json (collectives_vs_deepspeed.json with --vs-deepspeed)")
    p.add_argument("--vs-deepspeed", action="store_true",
                   help="add DeepSpeed's shm all_reduce and the c10d floor ('fake' backend) for all_reduce")
    p.add_argument("--deepspeed-cache", default=None, help="where the deepspeed sdist and its build are kept "
                   "(default build/bench_deepspeed, git-ignored)")
    p.add_argument("--dtypes", nargs="+", default=["float32"], choices=["float32", "bfloat16", "float16"])
    p.add_argument("--no-gloo", action="store_true", help="leave Gloo out (it dominates the run time)")
    p.add_argument("--zero-copy-compare", action="store_true",
                   help="also time hccl with zero-copy off (staged through shared memory), interleaved")
    p.add_argument("--budget-ms", type=float, default=0,
                   help="time each measurement for about this long (rank 0 probes, all ranks agree on the count) "
                        "instead of the fixed counts")
    p.add_argument("--timeout", type=float, default=3 * 3600,
                   help="seconds before the ranks of one world size are killed")
    p.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank_main:
        return rank_main(args)
    if args.json is None:
        name = "collectives_vs_deepspeed.json" if args.vs_deepspeed else "collectives.json"
        args.json = os.path.join(HERE, "results", name)
    print(f"# hccl vs {'gloo' if not args.no_gloo else ''}{', DeepSpeed shm, c10d floor' if args.vs_deepspeed else ''}; "
          f"sizes {args.b}..{args.e} B, reps {args.reps}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at start")
    ds_env = {}
    if args.vs_deepspeed:
        sys.path.insert(0, HERE)
        import _deepspeed_shm

        lib, why = _deepspeed_shm.build(args.deepspeed_cache)
        ds_env = {"NPUDIST_BENCH_DS_LIB": lib} if lib else {"NPUDIST_BENCH_DS_ERROR": f"DeepSpeed unavailable: {why}"}
        print(f"# DeepSpeed {_deepspeed_shm.VERSION}: {lib or why}")
    report = {}
    for world in args.ranks:
        rows = launch(world, args, ds_env)
        print_table(world, rows)
        print_vs_deepspeed(world, rows, args.reps)
        print_zero_copy(world, rows, args.reps)
        report[str(world)] = rows
    if 2 in args.ranks and not args.no_gloo:
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
