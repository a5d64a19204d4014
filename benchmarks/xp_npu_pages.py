"""NumPy's own loops over three kinds of memory, in one process, interleaved: NumPy's arrays (glibc
malloc; NumPy asks for transparent huge pages on large arrays), npu memory in 2 MiB pages (the
driver's default for mappings up to NPUDIST_DEVICE_HUGE_PAGES, 64 MiB) and npu memory in 4 KiB
pages (slices of one tensor whose segment is larger than that limit; run with the default
NPUDIST_DEVICE_HUGE_PAGES). Same operands' values, same
NumPy call with ``out=``, one thread; the page size is checked in /proc/self/smaps. It isolates what
the kind of memory costs a loop streaming over it (docs/xp.md).

    python benchmarks/xp_npu_pages.py [--n 1000000] [--reps 40] [--json benchmarks/results/xp_npu_pages.json]
"""
import argparse
import ctypes
import json
import os
import statistics

import numpy as np
import torch
from _timing import timed

import npudist  # noqa: F401  (registers the npu device)


def huge_kib():
    """This process's kB mapped by 2 MiB pages: (npu memory = shmem, NumPy's = anonymous) from
    /proc/self/smaps_rollup."""
    got = {"ShmemPmdMapped:": 0, "AnonHugePages:": 0}
    for line in open("/proc/self/smaps_rollup"):
        f = line.split()
        if f and f[0] in got:
            got[f[0]] = int(f[1])
    return got["ShmemPmdMapped:"], got["AnonHugePages:"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--reps", type=int, default=40)
    p.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "xp_npu_pages.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    n = args.n
    rng = np.random.default_rng(0)
    src = [rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n), np.ones(n)]

    def view(t):
        return np.ndarray((n,), np.float64, (ctypes.c_char * (8 * n)).from_address(t.data_ptr()))

    limit = 64 << 20
    big = torch.empty(max(3 * n, limit // 8 + 1), dtype=torch.float64, device="npu")  # one segment > limit
    for i, a in enumerate(src):
        big[i * n:(i + 1) * n].copy_(torch.from_numpy(a))
    torch.npu.synchronize()
    shmem0, _ = huge_kib()
    small = [torch.from_numpy(a).to("npu") for a in src]                          # 20 MiB segments
    shmem1, anon = huge_kib()
    kinds = {
        "numpy": src,
        "npu 2MiB": [view(t) for t in small],
        "npu 4KiB": [view(big[i * n:(i + 1) * n]) for i in range(3)],
    }
    pages = {"npu 4KiB segment": shmem0, "npu 2MiB segments": shmem1 - shmem0, "numpy (process AnonHugePages)": anon}
    ops = {"add": lambda a, b, o: np.add(a, b, out=o), "exp": lambda a, b, o: np.exp(a, out=o),
           "multiply_scalar": lambda a, b, o: np.multiply(a, 3.0, out=o)}
    times = {(op, k): [] for op in ops for k in kinds}
    for _ in range(args.reps):
        for op, f in ops.items():
            for k, (a, b, o) in kinds.items():
                times[(op, k)].append(timed(lambda: f(a, b, o), 5))
    rows = []
    print(f"{n} float64 elements, one thread, {args.reps} interleaved reps of 5 calls; load {os.getloadavg()[0]:.1f}")
    print("kB mapped by 2 MiB pages: " + ", ".join(f"{k} {v}" for k, v in pages.items()))
    print(f"{'op':16s} {'memory':10s} {'median us':>10s} {'best us':>10s} {'best / numpy':>13s}")
    for op in ops:
        base = min(times[(op, "numpy")])
        for k in kinds:
            v = times[(op, k)]
            rows.append({"op": op, "memory": k, "median_us": statistics.median(v) * 1e6, "best_us": min(v) * 1e6,
                         "best_vs_numpy": min(v) / base})
            r = rows[-1]
            print(f"{op:16s} {k:10s} {r['median_us']:10.1f} {r['best_us']:10.1f} {r['best_vs_numpy']:13.2f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"n": n, "reps": args.reps, "huge_kib": pages, "rows": rows, "load": os.getloadavg()[0]}, fh, indent=1)
    print("JSON:", args.json)


if __name__ == "__main__":
    main()
